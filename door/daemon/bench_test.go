package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/norma-run/norma/door/agenthook"
)

// BenchmarkHTTPHook is the daemon's own share of an http hook's latency:
// one POST on a kept-alive loopback connection through the guard (token,
// Host, browser check) to a hook that answers at once.
func BenchmarkHTTPHook(b *testing.B) {
	tok, _, err := LoadToken(b.TempDir() + "/serve.token")
	if err != nil {
		b.Fatal(err)
	}
	hook := func(context.Context, agenthook.Agent, []byte) Answer { return Answer{Out: []byte(`{}`)} }
	s := New(Options{Hook: hook, Agents: []agenthook.Agent{agenthook.ClaudeCode}})
	ln, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln, Guard(tok, nil))
	defer s.Shutdown(context.Background())
	url := "http://" + ln.Addr().String() + "/hooks/claude-code"
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	body := `{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/w/a"},"tool_use_id":"t"}`
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.secret)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkForward is a command hook's round trip to the daemon over the
// Unix socket (a new connection each time, as each hook process makes).
func BenchmarkForward(b *testing.B) {
	hook := func(context.Context, agenthook.Agent, []byte) Answer { return Answer{Out: []byte(`{}`)} }
	dir := b.TempDir()
	ln, err := ListenUnix(dir+"/s.sock", nil)
	if err != nil {
		b.Fatal(err)
	}
	s := New(Options{Hook: hook, Agents: []agenthook.Agent{agenthook.ClaudeCode}})
	go s.Serve(ln, nil)
	defer s.Shutdown(context.Background())
	cl := Client{Socket: dir + "/s.sock"}
	for b.Loop() {
		if _, ok := cl.Forward(context.Background(), agenthook.ClaudeCode, []byte(`{}`)); !ok {
			b.Fatal("no daemon")
		}
	}
}

var _ net.Listener = (*UnixListener)(nil)
