//go:build !race

// Two actor systems over protoactor's remote (why without the race
// detector: confirms_remote_test.go).

package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/internal/clock"
)

// cutLink stands in b's registry for a tab: while cutting, an ask whether
// the tab lives that reaches it is lost, and the link from a is cut with
// it, as protoactor cuts it after a peer restarted on the same address (it
// closes a's connection there, which reports itself lost and closes the
// next one). Everything else reaches the tab.
type cutLink struct {
	actor.Process // the tab
	cut           func()
	cutting       atomic.Bool
	asks          atomic.Int32 // asks lost
}

func (c *cutLink) SendUserMessage(pid *actor.PID, message any) {
	if _, ok := actor.UnwrapEnvelopeMessage(message).(*actor.Touch); ok && c.cutting.Load() {
		c.asks.Add(1)
		c.cut()
		return
	}
	c.Process.SendUserMessage(pid, message)
}

// TestInProcessAsksOfALostTabOutlastCutsOfItsLink: a pairing on node a
// asks its tab on node b whether it lives after protoactor cut the link,
// and protoactor goes on cutting it, each ask with it. The cuts reach the
// pairing's watch of the tab, the asks they cut do not count, and the tab
// is taken back once an ask gets through, after twice as many asks as a
// tab that stays silent gets.
func TestInProcessAsksOfALostTabOutlastCutsOfItsLink(t *testing.T) {
	n := startTwoNodes(t, 1, 1)
	r, tab, metrics := n.rig, n.tabs[0].tab, n.acfg.Metrics
	link := &cutLink{Process: tab, cut: func() {
		n.a.EventStream.Publish(&remote.EndpointTerminatedEvent{Address: tab.pid.Address})
	}}
	r.system.ProcessRegistry.Remove(tab.pid)
	if _, ok := r.system.ProcessRegistry.Add(link, tab.pid.Id); !ok {
		t.Fatal("the tab is still registered")
	}
	held := func() bool { return len(r.inspect("p0").Tabs) == 1 }

	link.cut()
	r.eventually(func() bool { return !held() }, "p0 dropped the tab")
	// From here a's clock keeps pace with the real one, so that asks are
	// as far apart as protoactor's cuts expect (each connection it closes
	// reports itself lost within milliseconds, closing the next one if an
	// ask opened it meanwhile).
	link.cutting.Store(true)
	keepPace(t, n.acfg.Clock.(*clock.Fake))
	r.eventually(func() bool { return link.asks.Load() >= 2*lostAsks }, "%d asks the link cut", 2*lostAsks)
	link.cutting.Store(false)
	r.eventually(held, "the tab taken back")
	if got := testutil.ToFloat64(metrics.TabAsksCut); got < 2*lostAsks {
		t.Fatalf("asks cut %v, want at least %d", got, 2*lostAsks)
	}
}

// keepPace moves c with the real clock until the test ends.
func keepPace(t *testing.T, c *clock.Fake) {
	const tick = 20 * time.Millisecond
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped })
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(tick):
				c.Advance(tick)
			}
		}
	}()
}
