package redistest

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// TestATakenPortIsReportedNotUsed: a server whose port another listener
// holds says so, rather than returning with a PING answered by someone else.
func TestATakenPortIsReportedNotUsed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := &Server{t: t, Port: strconv.Itoa(l.Addr().(*net.TCPAddr).Port), Dir: t.TempDir()}
	defer s.Stop()
	if err := s.launch(); !errors.Is(err, errPortTaken) {
		t.Fatalf("launch on a taken port: %v, want %v", err, errPortTaken)
	}
}

// TestAnotherRedisOnThePortIsNotTakenForOurs: a port where another
// redis-server answers is taken too.
func TestAnotherRedisOnThePortIsNotTakenForOurs(t *testing.T) {
	other := Start(t)
	s := &Server{t: t, Port: other.Port, Dir: t.TempDir()}
	defer s.Stop()
	if err := s.launch(); !errors.Is(err, errPortTaken) {
		t.Fatalf("launch where another redis-server listens: %v, want %v", err, errPortTaken)
	}
}

// TestFreePortsAreDistinctAndOutsideTheKernelsPicks: ports handed out are
// never handed out again, can be bound, and are not where the kernel picks
// ports for connections and ":0" listeners.
func TestFreePortsAreDistinctAndOutsideTheKernelsPicks(t *testing.T) {
	lo, hi := portRange()
	seen := map[string]bool{}
	for range 200 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %s handed out twice", p)
		}
		seen[p] = true
		n, _ := strconv.Atoi(p)
		if hi > lo && (n < lo || n >= hi) {
			t.Fatalf("port %d outside [%d, %d)", n, lo, hi)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Fatalf("port %s cannot be bound: %v", p, err)
		}
		l.Close()
	}
}
