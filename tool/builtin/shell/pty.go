package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// setsidPath is util-linux setsid, used to give the PTY shell the terminal
// as its controlling terminal inside the sandbox (so ^C reaches the
// foreground job). Without it the shell runs without job control.
const setsidPath = "/usr/bin/setsid"

// ptySession is one interactive shell on a pseudo-terminal.
type ptySession struct {
	id     string
	master *os.File
	proc   tool.Process
	cancel context.CancelFunc
	out    *ring
	done   chan struct{} // the tree is gone
	read   chan struct{} // the reader goroutine ended
	m      *Manager

	mu     sync.Mutex // serializes input and the read cursor
	cursor int64
	closed bool
	// partial: text was sent without Enter and no ^C followed. The shell
	// would read the next text as the rest of that line, a line the gate
	// never saw whole, so text is refused until ^C ends it.
	partial bool
	res     tool.CommandResult
}

const ptyIDSchema = `{"type":"string","pattern":"^p[0-9]{1,9}$"}`

// textPattern refuses C0 controls but tab and newline, DEL and C1 controls.
// It is spliced into the JSON schema, whose \u escapes make the characters.
const textPattern = `^[^\u0000-\u0008\u000b-\u001f\u007f-\u009f]*$`

func (m *Manager) ptySpecs() []tool.Spec {
	return []tool.Spec{
		{
			Name:        "PtyOpen",
			Description: "Open an interactive shell on a pseudo-terminal inside the sandbox.",
			Prompt: "Opens an interactive shell (bash when present) on a pseudo-terminal inside the same OS sandbox as Bash: the same files, network and environment. " +
				"Returns its id. Send lines with PtySend, read with PtyRead, close with PtyClose. At most " + fmt.Sprint(MaxPTYs) + " per session; all close with the session.",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"cols":{"type":"integer","minimum":10,"maximum":1000},"rows":{"type":"integer","minimum":2,"maximum":1000}}}`),
			Accesses: func(tool.Input) ([]tool.Access, error) {
				return []tool.Access{{Kind: capability.ProcessSpawn, Argv: m.ptyArgvForRules()}}, nil
			},
			Call: m.callPtyOpen,
		},
		{
			Name:        "PtySend",
			Description: "Send input lines (each checked like a Bash command) or a control key to a PTY shell.",
			Prompt: "Sends text to the shell, followed by Enter unless enter is false. Every line is parsed and matched against the permission rules exactly like a Bash command before it reaches the shell. " +
				"Control characters are refused in text (the terminal would interpret them); send ^C, ^D, ^Z or ^\\ with control: \"c\", \"d\", \"z\" or \"\\\\\". " +
				"A line ending in a backslash (continuation) is refused; send complete commands. " +
				"After text sent with enter false, more text is refused until control \"c\" (the shell would read it as the rest of that line).",
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pty_id"],"properties":{"pty_id":` + ptyIDSchema +
				`,"text":{"type":"string","maxLength":16384,"pattern":"` + textPattern + `"},"enter":{"type":"boolean"},"control":{"enum":["c","d","z","\\"]}}}`),
			CheckPermissions: func(_ context.Context, in tool.Input) tool.Permission {
				if t, _ := in.String("text"); t == "" {
					return tool.Permission{Behavior: tool.Allow, Reason: "a control key only"}
				}
				return tool.Permission{Behavior: tool.Ask, Reason: "input for a shell"}
			},
			Accesses: m.sendAccesses,
			Preview:  previewString("text"),
			Call:     m.callPtySend,
		},
		{
			Name:        "PtyRead",
			Description: "Read a PTY shell's output since the last read (bounded), optionally waiting for it.",
			Prompt: fmt.Sprintf("Returns the terminal output since the previous PtyRead, at most %d bytes, with escape sequences removed unless raw is true. "+
				"With timeout_ms it waits for output (and, with until, for output matching that RE2 pattern).", MaxRead),
			Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pty_id"],"properties":{"pty_id":` + ptyIDSchema +
				`,"timeout_ms":{"type":"integer","minimum":0,"maximum":600000},"until":{"type":"string","minLength":1,"maxLength":1000},"raw":{"type":"boolean"}}}`),
			ReadOnly:         always,
			ConcurrencySafe:  always,
			CheckPermissions: allow,
			Accesses:         noAccess,
			Timeout:          11 * time.Minute,
			Call:             m.callPtyRead,
		},
		{
			Name:             "PtyResize",
			Description:      "Resize a PTY shell's terminal.",
			Prompt:           "Sets the terminal size (columns and rows) of a PTY shell.",
			Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pty_id","cols","rows"],"properties":{"pty_id":` + ptyIDSchema + `,"cols":{"type":"integer","minimum":10,"maximum":1000},"rows":{"type":"integer","minimum":2,"maximum":1000}}}`),
			CheckPermissions: allow,
			Accesses:         noAccess,
			Call:             m.callPtyResize,
		},
		{
			Name:             "PtyClose",
			Description:      "Close a PTY shell (kills everything it started).",
			Prompt:           "Closes the PTY and kills the shell's whole process tree.",
			Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["pty_id"],"properties":{"pty_id":` + ptyIDSchema + `}}`),
			CheckPermissions: allow,
			Accesses:         noAccess,
			Call:             m.callPtyClose,
		},
	}
}

// ptyArgvForRules is the spawn a PtyOpen declares: "bash -i" (or "sh -i").
func (m *Manager) ptyArgvForRules() []string {
	return []string{filepath.Base(m.shell), "-i"}
}

// ptyArgv is what runs: the shell with no startup files, no line editing,
// no history expansion (each would make the shell run something other
// than the checked text), as the session leader of the terminal.
func (m *Manager) ptyArgv() []string {
	argv := []string{m.shell, "-i"}
	if m.bash {
		argv = []string{m.shell, "--norc", "--noprofile", "--noediting", "+H", "-i"}
	}
	if fi, err := os.Stat(setsidPath); err == nil && fi.Mode().IsRegular() {
		argv = append([]string{setsidPath, "--wait", "--ctty"}, argv...)
	}
	return argv
}

// errPartial refuses text after a line sent without Enter.
var errPartial = fail(capability.ReasonPtyInputRefused, "PtySend: the previous text was sent without Enter; the shell would read this text as the rest of that line, which was never checked whole: send control \"c\" first")

// checkText refuses what the terminal or the shell would not pass on as
// the checked text: control characters, and a line continuation.
func checkText(s string) error {
	for _, r := range s {
		if r == '\n' || r == '\t' {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fail(capability.ReasonPtyInputRefused, "PtySend: text holds control character %U; use the control field for control keys", r)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		n := len(line) - len(strings.TrimRight(line, `\`))
		if n%2 == 1 {
			return fail(capability.ReasonPtyInputRefused, "PtySend: a line ends in a backslash (continuation); send complete commands")
		}
	}
	return nil
}

// sendAccesses declares every non-blank line of the text as a shell
// command, so the gate parses and checks each one before it is sent.
// Text after a partial line is refused (see ptySession.partial).
func (m *Manager) sendAccesses(in tool.Input) ([]tool.Access, error) {
	t, _ := in.String("text")
	if err := checkText(t); err != nil {
		return nil, err
	}
	if p, err := m.pty(in); err == nil && t != "" {
		p.mu.Lock()
		partial := p.partial
		p.mu.Unlock()
		if partial {
			return nil, errPartial
		}
	}
	var acc []tool.Access
	for _, line := range strings.Split(t, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		acc = append(acc, tool.Access{Kind: capability.ProcessSpawn, Command: line})
	}
	return acc, nil
}

// safeTermios puts the terminal in the mode where the shell reads exactly
// the bytes written: no canonical line editing (erase, kill, word-erase
// and literal-next would let printable input be rewritten), no extended
// processing, no input translation (CR to NL would split a checked line)
// and no flow control; the signal keys are the control characters text
// may not contain. ECHO and output processing are left as the programs set
// them. It is reapplied from the master side before every write, so a
// program that changed the settings cannot make the next input mean
// something else.
func safeTermios(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR | unix.IXON | unix.IXOFF | unix.IXANY | unix.ISTRIP | unix.IUCLC
	t.Lflag &^= unix.ICANON | unix.IEXTEN | unix.ECHOCTL
	t.Lflag |= unix.ISIG
	t.Cc[unix.VINTR], t.Cc[unix.VQUIT], t.Cc[unix.VSUSP] = 0x03, 0x1c, 0x1a
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

type ptyOpenInput struct {
	Cols, Rows uint16
}

func (m *Manager) callPtyOpen(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
	var oi ptyOpenInput
	if err := in.Decode(&oi); err != nil {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	if oi.Cols == 0 {
		oi.Cols = 120
	}
	if oi.Rows == 0 {
		oi.Rows = 40
	}
	m.mu.Lock()
	err := m.checkOpen()
	if err == nil && len(m.ptys) >= MaxPTYs {
		err = fail(capability.ReasonShellLimit, "%d PTYs are open in this session; close one first", len(m.ptys))
	}
	m.mu.Unlock()
	if err != nil {
		return tool.Result{}, err
	}
	exec, err := runner(env)
	if err != nil {
		return tool.Result{}, err
	}
	master, tty, err := pty.Open()
	if err != nil {
		return tool.Result{}, fail(capability.ReasonShellSandbox, "opening a pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Cols: oi.Cols, Rows: oi.Rows}); err == nil {
		err = safeTermios(int(master.Fd()))
	}
	if err != nil {
		master.Close()
		tty.Close()
		return tool.Result{}, fail(capability.ReasonShellSandbox, "configuring the pseudo-terminal: %v", err)
	}
	// The sandbox's init calls setsid, so the terminal is not the
	// controlling terminal of anything on the host side; util-linux setsid
	// inside makes the shell its session leader and controlling process.
	// The prompts are literal (the capability refuses any other PS1).
	cmd := tool.Command{Argv: m.ptyArgv(), Env: []string{"TERM=dumb", "PS1=$ ", "PS2=> "}, Stdin: tty, Stdout: tty, Stderr: tty}

	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkOpen(); err != nil {
		master.Close()
		tty.Close()
		return tool.Result{}, err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	proc, err := exec.Start(pctx, cmd)
	tty.Close() // the child holds its own copies
	if err != nil {
		cancel()
		master.Close()
		return tool.Result{}, startFail(err)
	}
	m.ptySeq++
	p := &ptySession{id: fmt.Sprintf("p%d", m.ptySeq), master: master, proc: proc, cancel: cancel,
		out: newRing(RingSize), done: make(chan struct{}), read: make(chan struct{}), m: m}
	m.ptys[p.id] = p
	// The terminal's output is redacted as one stream (the gate's runner
	// is a tool.Redactor): a secret split across two PtyReads is still
	// masked.
	var out io.Writer = p.out
	flush := func() {}
	if red, ok := exec.(tool.Redactor); ok {
		w := red.Stream(p.out)
		out, flush = w, func() { w.Close() }
	}
	go func() {
		defer close(p.read)
		io.Copy(out, master) // ends with EIO once every tty descriptor is closed
		flush()
		p.out.closeWrites()
	}()
	m.waiters.Add(1)
	go func() {
		defer m.waiters.Done()
		res, _ := proc.Wait()
		p.mu.Lock()
		p.res = res
		p.mu.Unlock()
		close(p.done)
		cancel()
	}()
	return tool.Result{Content: fmt.Sprintf("opened %s: %s on a %dx%d terminal (session %s)", p.id, filepath.Base(m.shell), oi.Cols, oi.Rows, m.cfg.SessionID)}, nil
}

func (m *Manager) pty(in tool.Input) (*ptySession, error) {
	id, _ := in.String("pty_id")
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.ptys[id]
	if !ok {
		return nil, fail(capability.ReasonPtyUnknown, "no open PTY %q in this session", boundID(id))
	}
	return p, nil
}

type sendInput struct {
	Text    string `json:"text"`
	Enter   *bool  `json:"enter"`
	Control string `json:"control"`
}

var controlKeys = map[string]byte{"c": 0x03, "d": 0x04, "z": 0x1a, `\`: 0x1c}

func (m *Manager) callPtySend(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	p, err := m.pty(in)
	if err != nil {
		return tool.Result{}, err
	}
	var si sendInput
	if err := in.Decode(&si); err != nil {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	// Checked again here: this is what the gate declared and decided on.
	if err := checkText(si.Text); err != nil {
		return tool.Result{}, err
	}
	var data []byte
	if si.Text != "" {
		data = append(data, si.Text...)
		if si.Enter == nil || *si.Enter {
			data = append(data, '\n')
		}
	}
	if si.Control != "" {
		k, ok := controlKeys[si.Control]
		if !ok {
			return tool.Result{}, fail(capability.ReasonPtyInputRefused, "unknown control key")
		}
		data = append(data, k)
	}
	if len(data) == 0 {
		return tool.Result{Content: "nothing to send"}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return tool.Result{}, fail(capability.ReasonPtyUnknown, "PTY %s is closed", p.id)
	}
	select {
	case <-p.done:
		return tool.Result{}, fail(capability.ReasonPtyUnknown, "the shell of %s has exited", p.id)
	default:
	}
	if si.Text != "" && p.partial {
		return tool.Result{}, errPartial
	}
	if err := safeTermios(int(p.master.Fd())); err != nil {
		return tool.Result{}, fail(capability.ReasonShellSandbox, "PtySend: resetting the terminal: %v", err)
	}
	p.master.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := p.master.Write(data); err != nil {
		p.partial = true // some of it may have arrived: fail closed
		return tool.Result{}, fail(capability.ReasonToolError, "PtySend: the shell is not reading its input: %v", err)
	}
	if si.Text != "" {
		p.partial = si.Enter != nil && !*si.Enter
	}
	if si.Control == "c" {
		p.partial = false
	}
	return tool.Result{Content: fmt.Sprintf("sent %d bytes to %s", len(data), p.id)}, nil
}

type readInput struct {
	TimeoutMS int64  `json:"timeout_ms"`
	Until     string `json:"until"`
	Raw       bool   `json:"raw"`
}

var ansiRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\x1b\[[0-9;?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[@-Z\\^_=>]`)
})

// clean removes escape sequences, carriage returns and the echoed control
// keys unless raw is set.
func clean(s string, raw bool) string {
	if raw {
		return s
	}
	s = ansiRE().ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\r' || r < 0x20 && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
}

// quiet is how long PtyRead waits for more output after some arrived.
const quiet = 50 * time.Millisecond

func (m *Manager) callPtyRead(ctx context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	p, err := m.pty(in)
	if err != nil {
		return tool.Result{}, err
	}
	var ri readInput
	if err := in.Decode(&ri); err != nil {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	var until *regexp.Regexp
	if ri.Until != "" {
		if until, err = regexp.Compile(ri.Until); err != nil {
			return tool.Result{}, fail(capability.ReasonInvalidRequest, "PtyRead: invalid pattern: %v", err)
		}
	}
	p.mu.Lock()
	cursor := p.cursor
	p.mu.Unlock()
	timedOut := false
	if ri.TimeoutMS > 0 {
		wctx, cancel := context.WithTimeout(ctx, min(time.Duration(ri.TimeoutMS)*time.Millisecond, 10*time.Minute))
		timedOut = !p.waitOutput(wctx, cursor, until, ri.Raw)
		cancel()
	}
	p.mu.Lock()
	data, next, dropped := p.out.readFrom(p.cursor, MaxRead)
	p.cursor = next
	p.mu.Unlock()
	s := clean(string(data), ri.Raw)
	var b strings.Builder
	if dropped > 0 {
		fmt.Fprintf(&b, "[%d bytes of older output were dropped]\n", dropped)
	}
	b.WriteString(text(s))
	if total, _, _ := p.out.state(); total > next {
		fmt.Fprintf(&b, "\n[%d more bytes; call PtyRead again]", total-next)
	}
	select {
	case <-p.done:
		b.WriteString("\n[the shell has exited]")
	default:
	}
	if timedOut && until != nil {
		b.WriteString("\n[timed out waiting for the pattern]")
	}
	return tool.Result{Content: b.String()}, nil
}

// waitOutput waits for output after off (matching until when set), then for
// a short quiet period so a response is read whole. It reports false on
// timeout.
func (p *ptySession) waitOutput(ctx context.Context, off int64, until *regexp.Regexp, raw bool) bool {
	for {
		total, closed, wake := p.out.state()
		if total > off || closed {
			if until == nil || closed {
				break
			}
			data, _, _ := p.out.readFrom(off, RingSize)
			if until.MatchString(clean(string(data), raw)) {
				break
			}
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
	for {
		total, closed, wake := p.out.state()
		if closed {
			return true
		}
		t := time.NewTimer(quiet)
		select {
		case <-wake:
			t.Stop()
			if nt, _, _ := p.out.state(); nt == total {
				continue
			}
		case <-t.C:
			return true
		case <-ctx.Done():
			t.Stop()
			return true
		}
	}
}

func (m *Manager) callPtyResize(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	p, err := m.pty(in)
	if err != nil {
		return tool.Result{}, err
	}
	var oi ptyOpenInput
	if err := in.Decode(&oi); err != nil || oi.Cols == 0 || oi.Rows == 0 {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return tool.Result{}, fail(capability.ReasonPtyUnknown, "PTY %s is closed", p.id)
	}
	if err := pty.Setsize(p.master, &pty.Winsize{Cols: oi.Cols, Rows: oi.Rows}); err != nil {
		return tool.Result{}, fail(capability.ReasonToolError, "PtyResize: %v", err)
	}
	return tool.Result{Content: fmt.Sprintf("resized %s to %dx%d", p.id, oi.Cols, oi.Rows)}, nil
}

func (m *Manager) callPtyClose(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	p, err := m.pty(in)
	if err != nil {
		return tool.Result{}, err
	}
	if err := p.close(); err != nil {
		return tool.Result{}, fail(capability.ReasonToolError, "PtyClose: %v", err)
	}
	return tool.Result{Content: "closed " + p.id}, nil
}

// close kills the shell's tree, waits for it, and releases the terminal.
func (p *ptySession) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.proc.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		return errors.New("the shell's process tree did not exit")
	}
	err := p.master.Close()
	<-p.read
	p.m.mu.Lock()
	delete(p.m.ptys, p.id)
	p.m.mu.Unlock()
	return err
}
