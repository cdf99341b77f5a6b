package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/door/agenthook"
)

// maxAnswer bounds a daemon's answer read by the client.
const maxAnswer = 1 << 20

// Client forwards a command hook's input to a daemon on a Unix socket.
type Client struct {
	// Socket is the daemon's socket ([ListenUnix]).
	Socket string
	// ProjectDir is the project directory the command hook was given
	// (Claude Code's $CLAUDE_PROJECT_DIR), sent with the input
	// ([ProjectDirHeader]); empty: none.
	ProjectDir string
	// Fail renders the agent's refusal when the daemon accepted the
	// request but gave no usable answer; it is given a *capability.Error
	// with [capability.ReasonServeNoAnswer]. Nil answers exit 2 with no
	// output, which the agents' command hooks honour as a block.
	Fail func(err error) Answer
	// ConnectTimeout bounds the connect (0: 100ms); a daemon that does
	// not take the connection in time counts as none.
	ConnectTimeout time.Duration
	// Timeout bounds the whole answer (0: 20s), below the agents' own
	// hook timeouts (Claude Code's default is 60s), so the deny is ours.
	Timeout time.Duration
}

// Forward sends body, the hook input of agent, to the daemon and returns
// its answer. ok is false when no daemon took the connection (no socket,
// nobody listening, not in time): nothing was sent, and the caller decides
// itself; so is a socket whose listener is another user's process. Once
// the connection is made, any failure — the daemon dies or is
// killed, times out, answers an error status or something malformed —
// returns ok with the refusal of Fail: a daemon that may have crashed on
// this input never lets it through by being asked again.
func (c Client) Forward(ctx context.Context, agent agenthook.Agent, body []byte) (a Answer, ok bool) {
	connect := c.ConnectTimeout
	if connect <= 0 {
		connect = 100 * time.Millisecond
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	d := net.Dialer{Timeout: connect}
	conn, err := d.DialContext(ctx, "unix", c.Socket)
	if err != nil {
		return Answer{}, false
	}
	// The daemon must be ours too: a socket another user managed to put
	// at this path would answer whatever it likes. Nothing is sent to it;
	// the caller decides itself.
	if uid, err := peerUID(conn.(*net.UnixConn)); err != nil || uid != os.Getuid() {
		conn.Close()
		return Answer{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, err = c.roundTrip(ctx, conn, agent, body)
	if err != nil {
		return c.fail(err), true
	}
	return a, true
}

// roundTrip sends one request on conn (closed when done) and reads the
// answer.
func (c Client) roundTrip(ctx context.Context, conn net.Conn, agent agenthook.Agent, body []byte) (Answer, error) {
	used := false
	tr := &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used {
				return nil, errors.New("daemon: one connection per forward")
			}
			used = true
			return conn, nil
		},
		DisableKeepAlives:  true,
		DisableCompression: true,
		Proxy:              nil,
	}
	defer tr.CloseIdleConnections()
	defer conn.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://norma-serve/hooks/"+string(agent), bytes.NewReader(body))
	if err != nil {
		return Answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(EnvelopeHeader, "1")
	if c.ProjectDir != "" {
		req.Header.Set(ProjectDirHeader, c.ProjectDir)
	}
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}).Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Answer{}, fmt.Errorf("the daemon answered %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return Answer{}, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if len(b) > maxAnswer {
		return Answer{}, errors.New("the daemon's answer is too large")
	}
	var a Answer
	if err := json.Unmarshal(b, &a); err != nil {
		return Answer{}, errors.New("the daemon's answer is malformed")
	}
	if a.Exit < 0 || a.Exit > 255 || strconv.Itoa(a.Exit) != resp.Header.Get(ExitHeader) {
		return Answer{}, errors.New("the daemon's answer has no valid exit code")
	}
	return a, nil
}

func (c Client) fail(cause error) Answer {
	if ue, ok := errors.AsType[*url.Error](cause); ok {
		cause = ue.Err // not the request's made-up URL
	}
	err := &capability.Error{
		Decision: capability.Decision{Mode: capability.Deny, Reason: capability.ReasonServeNoAnswer, Layer: capability.LayerHook},
		Detail:   "norma serve took the hook request and gave no answer (" + cause.Error() + "); denied",
		Err:      cause,
	}
	if c.Fail == nil {
		return Answer{Exit: 2, Stderr: "NORMA " + err.Error()}
	}
	return c.Fail(err)
}
