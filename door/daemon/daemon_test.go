package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/door/agenthook"
)

// recorder is a HookFunc that answers allow and counts its calls.
type recorder struct {
	calls atomic.Int64
	mu    sync.Mutex
	last  []byte
}

func (r *recorder) hook(_ context.Context, _ agenthook.Agent, body []byte) Answer {
	r.calls.Add(1)
	r.mu.Lock()
	r.last = bytes.Clone(body)
	r.mu.Unlock()
	return Answer{Out: []byte(`{"decision":"allow"}` + "\n")}
}

func failAnswer(_ agenthook.Agent, err error) Answer {
	return Answer{Out: []byte(`{"decision":"deny"}`), Exit: 2, Stderr: err.Error()}
}

// startTCP serves s on a loopback port behind Guard(tok) and returns its
// base URL.
func startTCP(t *testing.T, s *Server, tok Token) string {
	t.Helper()
	ln, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln, Guard(tok, nil))
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return "http://" + ln.Addr().String()
}

// startUnix serves s on a socket in a fresh directory and returns its path.
func startUnix(t *testing.T, s *Server) string {
	t.Helper()
	path := filepath.Join(shortDir(t), "serve.sock")
	ln, err := ListenUnix(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln, nil)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return path
}

// shortDir is a temporary directory with a path short enough for a Unix
// socket (108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "nd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func testToken(t *testing.T) Token {
	t.Helper()
	tok, _, err := LoadToken(filepath.Join(t.TempDir(), "serve.token"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestGuard sends requests to the loopback listener that must be refused
// before the route runs (the hook is never called), and one that passes.
func TestGuard(t *testing.T) {
	rec := &recorder{}
	tok := testToken(t)
	base := startTCP(t, New(Options{Hook: rec.hook, Agents: []agenthook.Agent{agenthook.ClaudeCode}}), tok)
	const body = `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`
	good := "Bearer " + tok.secret
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		host    string
		want    int
	}{
		{name: "no token", path: "/hooks/claude-code", want: 401},
		{name: "wrong token", path: "/hooks/claude-code", headers: map[string]string{"Authorization": "Bearer norma_serve_" + strings.Repeat("A", 43)}, want: 401},
		{name: "token as basic", path: "/hooks/claude-code", headers: map[string]string{"Authorization": "Basic " + tok.secret}, want: 401},
		{name: "token prefix", path: "/hooks/claude-code", headers: map[string]string{"Authorization": good[:len(good)-1]}, want: 401},
		{name: "no token healthz", path: "/healthz", want: 401},
		{name: "rebinding host", path: "/hooks/claude-code", host: "attacker.example:80", headers: map[string]string{"Authorization": good}, want: 421},
		{name: "lan host", path: "/hooks/claude-code", host: "192.168.1.20", headers: map[string]string{"Authorization": good}, want: 421},
		{name: "cross-origin page", path: "/hooks/claude-code", headers: map[string]string{"Authorization": good, "Origin": "https://attacker.example"}, want: 403},
		{name: "same-origin page", path: "/hooks/claude-code", headers: map[string]string{"Authorization": good, "Origin": "http://127.0.0.1"}, want: 403},
		{name: "fetch metadata", path: "/hooks/claude-code", headers: map[string]string{"Authorization": good, "Sec-Fetch-Site": "cross-site"}, want: 403},
		{name: "unknown agent", path: "/hooks/cursor", headers: map[string]string{"Authorization": good}, want: 404},
		{name: "good", path: "/hooks/claude-code", headers: map[string]string{"Authorization": good}, want: 200},
		{name: "good lowercase scheme", path: "/hooks/claude-code", headers: map[string]string{"Authorization": "bearer " + tok.secret}, want: 200},
		{name: "good localhost", path: "/hooks/claude-code", host: "localhost", headers: map[string]string{"Authorization": good}, want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rec.calls.Load()
			method := http.MethodPost
			if tt.path == "/healthz" {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, base+tt.path, strings.NewReader(body))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s = %d %q, want %d", method, tt.path, resp.StatusCode, got, tt.want)
			}
			called := rec.calls.Load() - before
			if tt.want == 200 {
				if called != 1 || string(got) != `{"decision":"allow"}`+"\n" || resp.Header.Get(ExitHeader) != "0" {
					t.Fatalf("allowed request: hook called %d times, body %q, exit %q", called, got, resp.Header.Get(ExitHeader))
				}
				return
			}
			if called != 0 {
				t.Fatalf("refused request reached the hook %d times", called)
			}
			if strings.Contains(string(got), tok.secret) {
				t.Fatal("the token is in the answer")
			}
		})
	}
}

// TestListenLoopbackRefuses: only loopback IP literals are listened on.
func TestListenLoopbackRefuses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.168.1.1:0", "localhost:0", "example.com:80", "10.0.0.1:8787", "127.0.0.1"} {
		if ln, err := ListenLoopback(addr); err == nil {
			ln.Close()
			t.Errorf("ListenLoopback(%q) listened on %s, want refused", addr, ln.Addr())
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.2:0"} {
		ln, err := ListenLoopback(addr)
		if err != nil {
			t.Errorf("ListenLoopback(%q) = %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestListenUnix: a fresh socket is 0600; a second daemon on the same
// socket is refused; a stale socket (its daemon gone, never closed) is
// replaced; a file that is not a socket is refused and left alone.
func TestListenUnix(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "serve.sock")
	ln, err := ListenUnix(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v, want a socket of mode 0600", fi.Mode(), err)
	}
	if _, err := ListenUnix(path, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("second ListenUnix = %v, want ErrRunning", err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the socket: %v", err)
	}

	// A stale socket: bound, nobody listening, lock free (a daemon that
	// was killed).
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	ln, err = ListenUnix(path, nil)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln.Close()

	// A live socket of something else (no lock held): refused, kept.
	other, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenUnix(path, nil); !errors.Is(err, ErrRunning) {
		t.Fatalf("ListenUnix over a live socket = %v, want ErrRunning", err)
	}
	if c, err := net.Dial("unix", path); err != nil {
		t.Fatalf("the live socket was disturbed: %v", err)
	} else {
		c.Close()
	}
	other.Close()

	// Not a socket: refused, never removed.
	os.Remove(path)
	os.WriteFile(path, []byte("precious"), 0o644)
	if _, err := ListenUnix(path, nil); err == nil || errors.Is(err, ErrRunning) {
		t.Fatalf("ListenUnix over a regular file = %v, want refused", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Fatalf("the file was changed: %q", b)
	}
	os.Remove(path)
	os.Symlink(filepath.Join(dir, "elsewhere"), path)
	if _, err := ListenUnix(path, nil); err == nil {
		t.Fatal("ListenUnix over a symlink succeeded")
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a socket was made through the symlink")
	}
}

// TestUnixRefusesOtherUID connects from another uid to a socket whose mode
// was widened (so only the peer check stands): the connection is closed
// unanswered and the hook never runs. The connecting process is this test
// binary, started as nobody (65534).
func TestUnixRefusesOtherUID(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process of another uid")
	}
	rec := &recorder{}
	dir := shortDir(t)
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "serve.sock")
	var refused atomic.Int64
	ln, err := ListenUnix(path, func(uid int) {
		if uid == 65534 {
			refused.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Hook: rec.hook, Agents: []agenthook.Agent{agenthook.ClaudeCode}})
	go s.Serve(ln, nil)
	defer s.Shutdown(context.Background())
	os.Chmod(path, 0o666)

	cmd := asNobody(t, dir, "TestHelperConnect", "NORMA_TEST_CONNECT="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "connected, no answer") {
		t.Fatalf("helper: %s", out)
	}
	if n := rec.calls.Load(); n != 0 {
		t.Fatalf("the hook ran %d times for another uid", n)
	}
	if refused.Load() != 1 {
		t.Fatalf("refused %d connections of uid 65534, want 1", refused.Load())
	}
	// The daemon still serves its own uid.
	a, ok := Client{Socket: path}.Forward(context.Background(), agenthook.ClaudeCode, []byte(`{}`))
	if !ok || a.Exit != 0 || rec.calls.Load() != 1 {
		t.Fatalf("own uid: %+v %v", a, ok)
	}
}

// asNobody is a command that runs this test binary's test named helper as
// uid 65534, with env added; the binary is copied into dir, since its own
// directory is private.
func asNobody(t *testing.T, dir, helper string, env ...string) *exec.Cmd {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "helper")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+helper+"$")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd
}

// TestForwardRefusesOtherUIDsDaemon: a "daemon" of another user at the
// socket's path that would answer allow is never sent the input and its
// answer is never taken: Forward reports no daemon (the command decides
// itself).
func TestForwardRefusesOtherUIDsDaemon(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process of another uid")
	}
	dir := shortDir(t)
	os.Chmod(dir, 0o777)
	path := filepath.Join(dir, "serve.sock")
	got := filepath.Join(dir, "got")
	cmd := asNobody(t, dir, "TestHelperFakeDaemon", "NORMA_TEST_FAKE_DAEMON="+path, "NORMA_TEST_FAKE_GOT="+got)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for i := 0; ; i++ {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if i > 200 {
			t.Fatalf("the fake daemon did not listen: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	a, ok := Client{Socket: path}.Forward(context.Background(), agenthook.ClaudeCode, []byte(`{"secret":"input"}`))
	if ok {
		t.Fatalf("Forward took the answer of another uid's daemon: %+v", a)
	}
	time.Sleep(100 * time.Millisecond)
	if b, err := os.ReadFile(got); err == nil && len(b) > 0 {
		t.Fatalf("the other uid's daemon received %q", b)
	}
}

// TestHelperFakeDaemon is the other uid's daemon of
// TestForwardRefusesOtherUIDsDaemon: it answers every request allow and
// records what it was sent.
func TestHelperFakeDaemon(t *testing.T) {
	path := os.Getenv("NORMA_TEST_FAKE_DAEMON")
	if path == "" {
		t.Skip("helper process only")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	os.Chmod(path, 0o777)
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		os.WriteFile(os.Getenv("NORMA_TEST_FAKE_GOT"), b, 0o666)
		w.Header().Set(ExitHeader, "0")
		io.WriteString(w, `{"out":"eyJhbGxvdyI6dHJ1ZX0=","exit":0}`)
	}))
}

// TestHelperConnect is the other uid's side of TestUnixRefusesOtherUID.
func TestHelperConnect(t *testing.T) {
	path := os.Getenv("NORMA_TEST_CONNECT")
	if path == "" {
		t.Skip("helper process only")
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("connect:", err)
		return
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST /hooks/claude-code HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	// Closed unanswered: an EOF, or a reset since the request was unread.
	b, err := io.ReadAll(c)
	if len(b) == 0 && (err == nil || errors.Is(err, syscall.ECONNRESET)) {
		fmt.Println("connected, no answer")
		return
	}
	fmt.Printf("answered %q %v\n", b, err)
}

// TestForward covers the client's two outcomes: no daemon (ok=false,
// nothing sent) and a daemon that took the request and failed (a deny
// with SERVE_NO_ANSWER, never an allow).
func TestForward(t *testing.T) {
	body := []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`)
	var failed error
	fail := func(err error) Answer {
		failed = err
		return Answer{Out: []byte(`{"deny":true}`), Exit: 2, Stderr: "denied"}
	}

	t.Run("no daemon", func(t *testing.T) {
		if _, ok := (Client{Socket: filepath.Join(shortDir(t), "serve.sock"), Fail: fail}).Forward(context.Background(), agenthook.ClaudeCode, body); ok {
			t.Fatal("ok without a daemon")
		}
		// A socket file with nobody behind it.
		path := filepath.Join(shortDir(t), "serve.sock")
		fd, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		syscall.Bind(fd, &syscall.SockaddrUnix{Name: path})
		syscall.Close(fd)
		if _, ok := (Client{Socket: path, Fail: fail}).Forward(context.Background(), agenthook.ClaudeCode, body); ok {
			t.Fatal("ok with a stale socket")
		}
	})

	t.Run("answer", func(t *testing.T) {
		rec := &recorder{}
		path := startUnix(t, New(Options{Hook: rec.hook, Agents: []agenthook.Agent{agenthook.ClaudeCode}}))
		a, ok := Client{Socket: path, Fail: fail}.Forward(context.Background(), agenthook.ClaudeCode, body)
		if !ok || a.Exit != 0 || string(a.Out) != `{"decision":"allow"}`+"\n" || !bytes.Equal(rec.last, body) {
			t.Fatalf("Forward = %+v, %v; hook got %q", a, ok, rec.last)
		}
	})

	t.Run("project dir", func(t *testing.T) {
		// The command hook's project directory reaches the daemon's hook
		// with the input; a forward without one carries none.
		var got []string
		var mu sync.Mutex
		hook := func(ctx context.Context, _ agenthook.Agent, _ []byte) Answer {
			mu.Lock()
			got = append(got, ProjectDir(ctx))
			mu.Unlock()
			return Answer{Out: []byte("{}")}
		}
		path := startUnix(t, New(Options{Hook: hook, Agents: []agenthook.Agent{agenthook.ClaudeCode}}))
		for _, dir := range []string{"/work/project", ""} {
			if _, ok := (Client{Socket: path, Fail: fail, ProjectDir: dir}).Forward(context.Background(), agenthook.ClaudeCode, body); !ok {
				t.Fatal("not forwarded")
			}
		}
		if len(got) != 2 || got[0] != "/work/project" || got[1] != "" {
			t.Fatalf("project dirs seen by the hook: %q", got)
		}
	})

	// Fake daemons that take the connection and then fail in each way.
	bad := map[string]func(c net.Conn){
		"closes": func(c net.Conn) { readRequest(c); c.Close() },
		"500": func(c net.Conn) {
			readRequest(c)
			io.WriteString(c, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		},
		"truncated": func(c net.Conn) {
			readRequest(c)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"out\":")
			c.Close()
		},
		"not json": func(c net.Conn) {
			readRequest(c)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nNorma-Hook-Exit: 0\r\nContent-Length: 5\r\n\r\nallow")
			c.Close()
		},
		"exit mismatch": func(c net.Conn) {
			readRequest(c)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"exit\":0}")
			c.Close()
		},
		"hangs": func(c net.Conn) { readRequest(c); time.Sleep(3 * time.Second); c.Close() },
	}
	for name, serve := range bad {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(shortDir(t), "serve.sock")
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				if c, err := ln.Accept(); err == nil {
					serve(c)
				}
			}()
			failed = nil
			a, ok := Client{Socket: path, Fail: fail, Timeout: time.Second}.Forward(context.Background(), agenthook.ClaudeCode, body)
			if !ok || a.Exit != 2 || string(a.Out) != `{"deny":true}` {
				t.Fatalf("Forward = %+v, %v, want the refusal", a, ok)
			}
			if capability.ReasonOf(failed) != capability.ReasonServeNoAnswer {
				t.Fatalf("Fail got %v, want %s", failed, capability.ReasonServeNoAnswer)
			}
		})
	}
}

// readRequest reads one request's head and body from c.
func readRequest(c net.Conn) {
	buf := make([]byte, 64<<10)
	var got []byte
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil || bytes.Contains(got, []byte("\r\n\r\n")) && bytes.HasSuffix(got, []byte("}")) {
			return
		}
	}
}

// TestHookRefusals: a request the server cannot hand to the hook (too
// large) and a hook that panics are both answered 200 with the agent's
// refusal: an error status would let an http hook go on.
func TestHookRefusals(t *testing.T) {
	tok := testToken(t)
	hook := func(_ context.Context, _ agenthook.Agent, body []byte) Answer {
		if bytes.Contains(body, []byte("boom")) {
			panic("boom")
		}
		return Answer{Out: []byte("allow")}
	}
	base := startTCP(t, New(Options{Hook: hook, Fail: failAnswer, Agents: []agenthook.Agent{agenthook.ClaudeCode}}), tok)
	for name, body := range map[string]string{
		"too large": `{"x":"` + strings.Repeat("a", MaxBody) + `"}`,
		"panic":     `{"boom":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+"/hooks/claude-code", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tok.secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(got) != `{"decision":"deny"}` || resp.Header.Get(ExitHeader) != "2" {
				t.Fatalf("= %d %q exit %q, want 200 with the deny", resp.StatusCode, got, resp.Header.Get(ExitHeader))
			}
		})
	}
}

// TestLoadToken: made once, 0600, reused; a file others may read is
// refused; the token never formats.
func TestLoadToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.token")
	a, created, err := LoadToken(path)
	if err != nil || !created {
		t.Fatalf("LoadToken = %v, %v", created, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token mode %v", fi.Mode())
	}
	b, created, err := LoadToken(path)
	if err != nil || created || !b.Matches(a.secret) || !a.Matches(b.secret) {
		t.Fatalf("second LoadToken = %v, %v", created, err)
	}
	if s := fmt.Sprintf("%v %s %+v", a, a, a); strings.Contains(s, a.secret) {
		t.Fatalf("the token formats: %s", s)
	}
	if (Token{}).Matches("") {
		t.Fatal("the zero token matches")
	}
	os.Chmod(path, 0o644)
	if _, _, err := LoadToken(path); err == nil {
		t.Fatal("a world-readable token file was accepted")
	}
}
