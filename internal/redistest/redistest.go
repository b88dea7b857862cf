// Package redistest runs a real redis-server for tests: on a free loopback
// port, in a directory of the test's own, stopped when the test ends. A
// Server can be stopped and started again on the same port and directory,
// so that a test can take Redis away and bring it back (with its
// append-only file, when the server was started with persistence).
package redistest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	conf  string // a sentinel's configuration file, or ""

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
	return startWith(t, extra, nil)
}

// startWith starts a server; conf, when set, writes its configuration
// file (a sentinel's) for the port it is given, before each attempt.
func startWith(t testing.TB, extra []string, conf func(s *Server) string) *Server {
	t.Helper()
	s := &Server{t: t, Dir: t.TempDir(), extra: extra}
	t.Cleanup(s.Stop)
	// A free port can be taken by another test's listener before
	// redis-server binds it: then it is tried again on another.
	for attempt := 1; ; attempt++ {
		s.Port = FreePort(t)
		if conf != nil {
			s.conf = filepath.Join(s.Dir, "sentinel.conf")
			if err := os.WriteFile(s.conf, []byte(conf(s)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := s.launch()
		if err == nil {
			return s
		}
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			t.Fatal(err)
		}
	}
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
	if err := s.launch(); err != nil {
		s.t.Fatal(err)
	}
}

// errPortTaken is launch's error when something else listens on the port.
var errPortTaken = errors.New("the port is taken")

// launch starts redis-server and returns once it answers PING itself: a
// server that answers from its port with another process id is not ours.
func (s *Server) launch() error {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return errors.New("redis-server not found: run make test, scripts/ensure-deps.sh installs it")
	}
	var args []string
	if s.conf != "" {
		args = []string{s.conf, "--sentinel"} // a sentinel rewrites its file: it must come first
	}
	args = append(append(args, "--port", s.Port, "--bind", "127.0.0.1", "--dir", s.Dir), s.extra...)
	cmd := exec.Command(path, args...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited, s.out = cmd, exited, out
	s.mu.Unlock()
	ping := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1,
		DialTimeout: 250 * time.Millisecond, ReadTimeout: 250 * time.Millisecond}) // a foreign listener may never answer
	defer ping.Close()
	want := "process_id:" + strconv.Itoa(cmd.Process.Pid) + "\r\n"
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := ping.Info(context.Background(), "server").Result()
		if err == nil && strings.Contains(info, want) {
			return nil
		}
		select {
		case <-exited:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			if strings.Contains(out.String(), "Address already in use") {
				return fmt.Errorf("redis-server on port %s: %w", s.Port, errPortTaken)
			}
			return fmt.Errorf("redis-server exited:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer INFO within 10s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop ends the server (SIGTERM: it writes what it must first) and waits
// for it. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

// Kill ends the server at once (SIGKILL: a crash, nothing written on the
// way out) and waits for it. Killing a stopped server does nothing.
func (s *Server) Kill() { s.end(syscall.SIGKILL) }

// end sends sig and waits for the server to exit (SIGKILL after 10 s).
func (s *Server) end(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
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

// FreePort returns a loopback port nothing listens on now and that this
// process has not handed out before. Servers started later bind it, so
// it is chosen below the kernel's ephemeral range where there is room:
// the kernel then never gives it meanwhile to a connection or to another
// ":0" listener (node 0's admin port was once node 2's too).
func FreePort(t testing.TB) string {
	t.Helper()
	lo, hi := portRange()
	given.Lock()
	defer given.Unlock()
	for range 1000 {
		want := 0
		if hi > lo {
			want = lo + rand.IntN(hi-lo)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(want)))
		if err != nil {
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given.ports[port] {
			given.ports[port] = true
			return strconv.Itoa(port)
		}
	}
	t.Fatal("redistest: no free loopback port")
	return ""
}

// given holds the ports FreePort handed out.
var given = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// portRange is where FreePort picks: the 10,000 ports below the kernel's
// ephemeral range, or none (the kernel picks) when that range starts low.
func portRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	var first int
	if _, err := fmt.Sscan(string(b), &first); err != nil || first < 12000 {
		return 0, 0
	}
	return first - 10000, first
}
