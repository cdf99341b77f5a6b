package shell

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/tool"
)

// TaskState is the state of a background task.
type TaskState string

// Task states.
const (
	TaskRunning  TaskState = "running"
	TaskExited   TaskState = "exited"
	TaskKilled   TaskState = "killed"
	TaskTimedOut TaskState = "timed_out"
	TaskFailed   TaskState = "failed"
)

// TaskInfo describes one task, as TaskList shows it.
type TaskInfo struct {
	ID          string    `json:"id"`
	Session     string    `json:"session"`
	Command     string    `json:"command"`
	Description string    `json:"description,omitempty"`
	State       TaskState `json:"state"`
	ExitCode    *int      `json:"exitCode,omitempty"`
	Started     time.Time `json:"started"`
	// Pid is the host pid of the task's sandbox init (for operators and
	// tests; the model is not shown it).
	Pid int `json:"-"`
}

type task struct {
	id, command, desc string
	started           time.Time
	proc              tool.Process
	cancel            context.CancelFunc
	out               *ring
	done              chan struct{}

	mu      sync.Mutex
	cursor  int64 // TaskOutput read offset
	stopped bool
	res     tool.CommandResult
	err     error
}

func (t *task) info(session string) TaskInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	ti := TaskInfo{ID: t.id, Session: session, Command: summary(t.command), Description: t.desc,
		State: TaskRunning, Started: t.started, Pid: t.proc.Pid()}
	select {
	case <-t.done:
	default:
		return ti
	}
	switch {
	case t.err != nil:
		ti.State = TaskFailed
	case t.res.TimedOut:
		ti.State = TaskTimedOut
	case t.stopped || t.res.Signal != 0:
		ti.State = TaskKilled
	default:
		ti.State = TaskExited
		code := t.res.ExitCode
		ti.ExitCode = &code
	}
	return ti
}

// stop kills the task's tree and waits for it to be gone.
func (t *task) stop() {
	t.mu.Lock()
	select {
	case <-t.done:
		t.mu.Unlock()
		return
	default:
	}
	t.stopped = true
	t.mu.Unlock()
	t.cancel()
	t.proc.Kill()
	<-t.done
}

func (m *Manager) startTask(ctx context.Context, exec tool.Runner, bi bashInput) (*task, error) {
	out := newRing(RingSize)
	cmd := tool.Command{Argv: m.shellArgv(bi.Command), Stdout: out, Stderr: out}
	if bi.TimeoutMS > 0 {
		cmd.Timeout = time.Duration(bi.TimeoutMS) * time.Millisecond
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkOpen(); err != nil {
		return nil, err
	}
	running := 0
	for _, t := range m.tasks {
		if t.info("").State == TaskRunning {
			running++
		}
	}
	if running >= MaxRunningTasks {
		return nil, fail(capability.ReasonShellLimit, "%d tasks are already running in this session; stop one first", running)
	}
	// The task outlives the call: its context is detached from the call's
	// and cancelled by TaskStop or Manager.Close.
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	proc, err := exec.Start(tctx, cmd)
	if err != nil {
		cancel()
		return nil, startFail(err)
	}
	m.seq++
	t := &task{id: fmt.Sprintf("t%d", m.seq), command: bi.Command, desc: bi.Description, started: time.Now(),
		proc: proc, cancel: cancel, out: out, done: make(chan struct{})}
	m.tasks[t.id] = t
	m.order = append(m.order, t.id)
	m.evictLocked()
	m.waiters.Add(1)
	go func() {
		defer m.waiters.Done()
		res, err := proc.Wait()
		t.mu.Lock()
		t.res, t.err = res, err
		close(t.done)
		t.mu.Unlock()
		out.closeWrites()
		cancel()
	}()
	return t, nil
}

// evictLocked drops the oldest finished tasks beyond MaxRetainedTasks.
func (m *Manager) evictLocked() {
	for len(m.order) > MaxRetainedTasks {
		evicted := false
		for i, id := range m.order {
			select {
			case <-m.tasks[id].done:
				delete(m.tasks, id)
				m.order = append(m.order[:i], m.order[i+1:]...)
				evicted = true
			default:
				continue
			}
			break
		}
		if !evicted {
			return
		}
	}
}

// Tasks lists the session's tasks, oldest first.
func (m *Manager) Tasks() []TaskInfo {
	m.mu.Lock()
	ts := make([]*task, 0, len(m.order))
	for _, id := range m.order {
		ts = append(ts, m.tasks[id])
	}
	m.mu.Unlock()
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.info(m.cfg.SessionID))
	}
	return out
}

func (m *Manager) task(in tool.Input) (*task, error) {
	id, _ := in.String("task_id")
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok {
		return nil, fail(capability.ReasonTaskUnknown, "no task %q in this session", boundID(id))
	}
	return t, nil
}

func boundID(id string) string {
	if len(id) > 16 {
		return id[:16] + "…"
	}
	return id
}

func (m *Manager) callTaskList(context.Context, tool.Env, tool.Input) (tool.Result, error) {
	ts := m.Tasks()
	if len(ts) == 0 {
		return tool.Result{Content: "no tasks in this session"}, nil
	}
	var b strings.Builder
	for _, t := range ts {
		code := "-"
		if t.ExitCode != nil {
			code = fmt.Sprint(*t.ExitCode)
		}
		fmt.Fprintf(&b, "%s\t%s\texit=%s\tstarted=%s\t%s\n", t.ID, t.State, code, t.Started.UTC().Format(time.RFC3339), t.Command)
	}
	return tool.Result{Content: b.String()}, nil
}

type waitInput struct {
	TaskID    string `json:"task_id"`
	Block     bool   `json:"block"`
	TimeoutMS *int64 `json:"timeout_ms"`
	Pattern   string `json:"pattern"`
}

func waitFor(p *int64, def time.Duration) time.Duration {
	if p == nil {
		return def
	}
	return min(time.Duration(*p)*time.Millisecond, 10*time.Minute)
}

func (m *Manager) callTaskOutput(ctx context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	t, err := m.task(in)
	if err != nil {
		return tool.Result{}, err
	}
	var wi waitInput
	if err := in.Decode(&wi); err != nil {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	t.mu.Lock()
	cursor := t.cursor
	t.mu.Unlock()
	if wi.Block {
		wctx, cancel := context.WithTimeout(ctx, waitFor(wi.TimeoutMS, 30*time.Second))
		t.out.wait(wctx, cursor)
		cancel()
	}
	t.mu.Lock()
	data, next, dropped := t.out.readFrom(t.cursor, MaxRead)
	t.cursor = next
	t.mu.Unlock()
	total, _, _ := t.out.state()
	info := t.info(m.cfg.SessionID)
	var b strings.Builder
	if dropped > 0 {
		fmt.Fprintf(&b, "[%d bytes of older output were dropped]\n", dropped)
	}
	b.WriteString(text(string(data)))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	if rest := total - next; rest > 0 {
		fmt.Fprintf(&b, "[%d more bytes; call TaskOutput again]\n", rest)
	}
	b.WriteString(stateLine(info))
	return tool.Result{Content: b.String()}, nil
}

func stateLine(ti TaskInfo) string {
	if ti.ExitCode != nil {
		return fmt.Sprintf("[task %s %s, exit code %d]", ti.ID, ti.State, *ti.ExitCode)
	}
	return fmt.Sprintf("[task %s %s]", ti.ID, ti.State)
}

func (m *Manager) callTaskStop(_ context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	t, err := m.task(in)
	if err != nil {
		return tool.Result{}, err
	}
	t.stop()
	return tool.Result{Content: stateLine(t.info(m.cfg.SessionID))}, nil
}

// callMonitor waits for the pattern in the task's retained output, the
// task's exit, or the timeout. Complete lines are matched as they arrive;
// the last partial line is matched once the task has exited.
func (m *Manager) callMonitor(ctx context.Context, _ tool.Env, in tool.Input) (tool.Result, error) {
	t, err := m.task(in)
	if err != nil {
		return tool.Result{}, err
	}
	var wi waitInput
	if err := in.Decode(&wi); err != nil {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "shell: bad input")
	}
	re, err := regexp.Compile(wi.Pattern)
	if err != nil {
		return tool.Result{}, fail(capability.ReasonInvalidRequest, "Monitor: invalid pattern: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, waitFor(wi.TimeoutMS, time.Minute))
	defer cancel()
	var scanned int64
	for {
		total, closed, wake := t.out.state()
		data, next, _ := t.out.readFrom(scanned, RingSize)
		upto := len(data)
		if !closed {
			upto = strings.LastIndexByte(string(data), '\n') + 1
		}
		if loc := re.FindIndex(data[:upto]); loc != nil {
			return tool.Result{Content: fmt.Sprintf("matched: %s\n%s", text(lineAround(data, loc)), stateLine(t.info(m.cfg.SessionID)))}, nil
		}
		scanned = next - int64(len(data)-upto)
		if closed && scanned >= total {
			return tool.Result{Content: "the task exited without a match\n" + stateLine(t.info(m.cfg.SessionID))}, nil
		}
		select {
		case <-wake:
		case <-wctx.Done():
			if ctx.Err() != nil {
				return tool.Result{}, ctx.Err()
			}
			return tool.Result{Content: fmt.Sprintf("timed out after %s without a match\n%s", waitFor(wi.TimeoutMS, time.Minute), stateLine(t.info(m.cfg.SessionID))), IsError: true}, nil
		}
	}
}

// lineAround returns the line(s) holding data[loc[0]:loc[1]], bounded.
func lineAround(data []byte, loc []int) string {
	s := strings.LastIndexByte(string(data[:loc[0]]), '\n') + 1
	e := loc[1]
	if i := strings.IndexByte(string(data[e:]), '\n'); i >= 0 {
		e += i
	} else {
		e = len(data)
	}
	if e-s > 2000 {
		e = s + 2000
	}
	return string(data[s:e])
}
