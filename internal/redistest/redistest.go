// Package redistest runs a real redis-server for tests: on a free loopback
// port, in a directory of the test's own, stopped when the test ends. A
// Server can be stopped and started again on the same port and directory,
// so that a test can take Redis away and bring it back (with its
// append-only file, when the server was started with persistence).
package redistest

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// Server is one redis-server process of a test.
type Server struct {
	t     testing.TB
	Port  string
	Dir   string
	extra []string

	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{}
	out    *syncbuf.Buffer
}

// Start runs redis-server without persistence; extra arguments are added
// to its command line.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return start(t, append([]string{"--save", "", "--appendonly", "no"}, extra...))
}

// StartPersistent runs redis-server with append-only persistence (fsync
// every write), as a deployment must run it.
func StartPersistent(t testing.TB, extra ...string) *Server {
	t.Helper()
	return start(t, append([]string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}, extra...))
}

func start(t testing.TB, extra []string) *Server {
	t.Helper()
	s := &Server{t: t, Port: FreePort(t), Dir: t.TempDir(), extra: extra}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + s.Port }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client() *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Restart starts the server (again) and returns once it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		s.t.Fatal("redis-server not found: run make test, scripts/ensure-deps.sh installs it")
	}
	args := append([]string{"--port", s.Port, "--bind", "127.0.0.1", "--dir", s.Dir}, s.extra...)
	cmd := exec.Command(path, args...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.out = cmd, exited, out
	s.mu.Unlock()
	ping := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer ping.Close()
	deadline := time.Now().Add(10 * time.Second)
	for ping.Ping(context.Background()).Err() != nil {
		select {
		case <-exited:
			s.t.Fatalf("redis-server exited:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server did not answer PING within 10s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop ends the server (SIGTERM: it writes what it must first) and waits
// for it. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// Output is what the server printed so far.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// FreePort returns a loopback port nothing listens on now.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
