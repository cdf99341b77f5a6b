package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/norma-run/norma/audit"
	"github.com/norma-run/norma/provider/scripted"
)

// TestSamplingInputOverBudget is a server spending the run's sampling
// budget through its input: four concurrent createMessage requests, each
// asking one output token for a 64 KiB prompt, against a budget of 500
// tokens. Before the fix each was admitted (one output token fits) and
// the provider read 4×64 KiB. Now each is refused SAMPLING_BUDGET before
// it is sent: the provider is never asked and nothing is spent.
func TestSamplingInputOverBudget(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := loadEverything(ctx, t, e, nil)
	script, err := scripted.Parse("s.yaml", []byte("turns: [{text: x}]\nsampling: [a, b, c, d]\n"))
	if err != nil {
		t.Fatal(err)
	}
	prov := &countingProvider{Provider: scripted.New(script).Sampler()}
	e.host.cfg.Sampling = &Sampling{Provider: prov, Model: "m", MaxTokens: 500}
	in, _ := json.Marshal(map[string]any{"prompt": strings.Repeat("spend ", 64<<10/6), "maxTokens": 1})
	var wg sync.WaitGroup
	errs := make([]string, 4)
	for i := range errs {
		wg.Go(func() {
			res, err := p.call(ctx, "trigger-sampling-request", in, "")
			switch {
			case err != nil:
				errs[i] = err.Error()
			case !res.IsError:
				errs[i] = "answered: " + truncate(res.Content, 80)
			}
		})
	}
	wg.Wait()
	for i, s := range errs {
		if s != "" {
			t.Errorf("call %d: %s", i, s)
		}
	}
	if len(prov.maxTokens) != 0 {
		t.Errorf("the provider was asked %d times, want 0", len(prov.maxTokens))
	}
	ev := auditOf(t, e, audit.TypeSampling)
	if len(ev) != 4 {
		t.Fatalf("audit: %d sampling events, want 4", len(ev))
	}
	for _, x := range ev {
		if x.Decision != "deny" || x.Reason != string(ReasonSamplingBudget) {
			t.Errorf("audit: %+v", x)
		}
	}
	e.host.sampleMu.Lock()
	spent := e.host.sampled
	e.host.sampleMu.Unlock()
	if spent != 0 {
		t.Errorf("spent %d tokens, want 0", spent)
	}
}
