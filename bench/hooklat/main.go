// Command hooklat measures what one hook decision costs an agent, the way
// the agent pays it: a command hook is a process started with the hook's
// JSON on stdin and read to its end (process start to answer); an http
// hook is one POST on a kept-alive connection (request to answer). The
// hooks are measured interleaved (round i runs every hook once, in turn),
// so the load of a shared machine falls on all alike; the first round is
// a warm-up. A hook that fails or answers something other than JSON stops
// the measurement. For a command hook it also reports the process's CPU
// time (user and system, from its rusage) and its minor page faults:
// figures a loaded shared machine inflates less than the wall time.
// bench/hooklat.sh drives it.
//
//	hooklat -n 200 -input pre.json 'cmd:norma hook claude-code' 'http:http://127.0.0.1:8787/hooks/claude-code TOKEN'
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// hook is one hook under measurement.
type hook struct {
	label string
	run   func() ([]byte, usage, error)
}

// usage is what a command hook's process used; zero for an http hook.
type usage struct {
	cpu    time.Duration // user and system
	minflt int64         // minor page faults
}

func main() {
	n := flag.Int("n", 200, "runs of each hook")
	input := flag.String("input", "", "file with the hook input (a PreToolUse JSON)")
	flag.Parse()
	body, err := os.ReadFile(*input)
	if err != nil || *n < 1 || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: hooklat [-n RUNS] -input FILE 'cmd:ARGV...' | 'http:URL [TOKEN]' ...")
		os.Exit(2)
	}
	var hooks []hook
	for _, spec := range flag.Args() {
		hooks = append(hooks, parse(spec, body))
	}
	times := make([][]time.Duration, len(hooks))
	cpus := make([][]time.Duration, len(hooks))
	faults := make([][]int64, len(hooks))
	for round := 0; round <= *n; round++ {
		for i, h := range hooks {
			start := time.Now()
			out, u, err := h.run()
			d := time.Since(start)
			if err == nil && !json.Valid(out) {
				err = fmt.Errorf("answer is not JSON: %q", out)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "hooklat: %s: %v\n", h.label, err)
				os.Exit(1)
			}
			if round > 0 {
				times[i] = append(times[i], d)
				cpus[i] = append(cpus[i], u.cpu)
				faults[i] = append(faults[i], u.minflt)
			}
		}
	}
	fmt.Printf("medians of %d interleaved runs each (p90 in brackets; a command's CPU time and minor faults, medians):\n", *n)
	for i, h := range hooks {
		extra := ""
		if strings.HasPrefix(h.label, "command ") {
			extra = fmt.Sprintf("  cpu %7.3f ms  faults %5d", ms(quantile(cpus[i], 0.5)), quantile(faults[i], 0.5))
		}
		fmt.Printf("%9.3f ms  [%8.3f]%s  %s\n", ms(quantile(times[i], 0.5)), ms(quantile(times[i], 0.9)), extra, h.label)
	}
}

// parse reads one hook spec: "cmd:ARGV" (split on spaces, no shell) or
// "http:URL [TOKEN]".
func parse(spec string, body []byte) hook {
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "cmd":
		argv := strings.Fields(rest)
		return hook{label: "command " + rest, run: func() ([]byte, usage, error) {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Stdin = bytes.NewReader(body)
			var out bytes.Buffer
			cmd.Stdout = &out
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
				err = nil // a refusal is an answer too
			}
			var u usage
			if ps := cmd.ProcessState; ps != nil {
				u.cpu = ps.UserTime() + ps.SystemTime()
				if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
					u.minflt = ru.Minflt
				}
			}
			return out.Bytes(), u, err
		}}
	case "http":
		url, tok, _ := strings.Cut(rest, " ")
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
		return hook{label: "http " + url, run: func() ([]byte, usage, error) {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := c.Do(req)
			if err != nil {
				return nil, usage{}, err
			}
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %s", resp.Status)
			}
			return out, usage{}, err
		}}
	}
	fmt.Fprintf(os.Stderr, "hooklat: %q: want cmd:ARGV or http:URL [TOKEN]\n", spec)
	os.Exit(2)
	return hook{}
}

func quantile[T cmp.Ordered](d []T, q float64) T {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*q)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
