package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PrivateServer is a PostgreSQL server of one test's own: a cluster made
// by initdb in a temporary directory, listening on a free loopback port
// and a Unix socket in that directory, with trust authentication for
// user postgres. PostgreSQL refuses to run as root, so under root it runs
// as the system user postgres, which owns the directory.
type PrivateServer struct {
	t      testing.TB
	bin    string // the directory of initdb and postgres
	dir    string // owned by the server's user: data/, the socket, the log
	port   int
	cred   *syscall.Credential
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Cluster initdb's and starts a private server, stopped and removed when t
// ends. Without PostgreSQL's programs it skips t (fails it under
// NORMA_REQUIRE_SANDBOX=1).
func Cluster(t testing.TB) *PrivateServer {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		Require(t, err.Error())
	}
	s := &PrivateServer{t: t, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			Require(t, "running as root, and there is no user postgres to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if s.dir, err = os.MkdirTemp("", "norma-pg-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.dir) })
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	initdb := s.command("initdb", "-D", s.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	t.Cleanup(s.stop)
	s.Start()
	return s
}

// binDir finds PostgreSQL's programs: pg_config --bindir, else the newest
// /usr/lib/postgresql/N/bin (Debian's layout), else initdb on $PATH.
func binDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := string(bytes.TrimSpace(out))
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("PostgreSQL's initdb is not installed (Debian: apt-get install postgresql)")
}

// version is N of /usr/lib/postgresql/N/bin/initdb.
func version(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

func (s *PrivateServer) data() string { return filepath.Join(s.dir, "data") }

// command is program of the server's bin directory, run as its user, in
// its own process group (so that Kill reaches every backend).
func (s *PrivateServer) command(program string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, program), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	return cmd
}

// Port is the server's loopback TCP port.
func (s *PrivateServer) Port() int { return s.port }

// URL is the superuser URL of database db ("" means postgres) over
// loopback TCP.
func (s *PrivateServer) URL(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Database creates a fresh database in the server, as [CreateDatabase].
func (s *PrivateServer) Database(t testing.TB) string {
	t.Helper()
	return CreateDatabase(t, s.URL(""))
}

// Start starts the server (again, after [PrivateServer.Kill]) and waits
// until it accepts connections, which after a kill includes its crash
// recovery. It fails the test when it cannot.
func (s *PrivateServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatal("pgtest: Start of a running server")
	}
	deadline := time.Now().Add(60 * time.Second)
	for attempt := 0; ; attempt++ {
		logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			s.t.Fatal(err)
		}
		cmd := s.command("postgres", "-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=on")
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Start()
		logf.Close()
		if err != nil {
			s.t.Fatalf("pgtest: start postgres: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if s.ready(exited, deadline) {
			s.cmd, s.exited = cmd, exited
			return
		}
		select {
		case <-exited: // e.g. the killed server's shared memory still in use: retry
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.t.Fatalf("pgtest: postgres did not start (attempt %d):\n%s", attempt+1, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ready waits until the server accepts a connection, it exits or the
// deadline passes.
func (s *PrivateServer) ready(exited <-chan struct{}, deadline time.Time) bool {
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL(""))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// Kill sends SIGKILL to the postmaster and every backend (the server's
// process group) at once, as a crash of the machine would stop them, and
// waits for the postmaster to be gone. What was committed must survive;
// [PrivateServer.Start] brings the server back through crash recovery.
func (s *PrivateServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// stop shuts the server down (fast shutdown), killing it when it does
// not stop in time.
func (s *PrivateServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	// Backends left by a killed postmaster end on their own; make sure.
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd = nil
}
