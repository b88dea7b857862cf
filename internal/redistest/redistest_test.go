package redistest

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"
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

// TestShapesFailOver: the Sentinel set and the Cluster start, take writes
// and promote a replica when their master is killed.
func TestShapesFailOver(t *testing.T) {
	t.Run("sentinel", func(t *testing.T) {
		s := StartSentinel(t)
		c := s.Client()
		if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		s.Replicated(5 * time.Second)
		old, at := s.KillMaster()
		promoted := s.WaitPromoted(old, 30*time.Second)
		t.Logf("promoted %v after the kill", promoted.Sub(at).Round(time.Millisecond))
		if v, err := c.Get(context.Background(), "k").Result(); err != nil || v != "v" {
			t.Fatalf("after the failover: %q, %v", v, err)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cl := StartCluster(t, 3, 1, "{members}")
		c := cl.Client()
		if err := c.Set(context.Background(), "x{members}", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if cl.MasterOf("{members}") != cl.Nodes[0] {
			t.Fatal("master 0 does not hold {members}")
		}
		cl.Replicated(5 * time.Second)
		old, at := cl.KillMasterOf("{members}")
		promoted := cl.WaitPromoted(old, "{members}", 30*time.Second)
		t.Logf("promoted %v after the kill", promoted.Sub(at).Round(time.Millisecond))
		var v string
		var err error
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if v, err = c.Get(context.Background(), "x{members}").Result(); err == nil {
				break
			}
		}
		if v != "v" {
			t.Fatalf("after the failover: %q, %v", v, err)
		}
	})
}
