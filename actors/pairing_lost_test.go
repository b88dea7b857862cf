package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/protocol"
)

// withLostTab connects tab-a to p1 (whose tabs confirm only hourly) and then
// tells p1 that the link to tab-a's node is lost.
func withLostTab(t *testing.T) (*rig, *testTab) {
	t.Helper()
	r := newRig(t, func(c *Config) { c.ConfirmEvery = time.Hour })
	a := r.connect("p1", "tab-a", epoch)
	r.linkLost(a)
	return r, a
}

// linkLost tells the pairing p1 that tab's node's link is lost, as
// protoactor's remote tells every watcher of an actor at that address: a
// Terminated system message saying AddressTerminated.
func (r *rig) linkLost(tab *testTab) {
	r.t.Helper()
	pid, err := r.caller.router.Pairing(context.Background(), "p1", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	ref, ok := r.system.ProcessRegistry.GetLocal(pid.Id)
	if !ok {
		r.t.Fatal("no pairing actor")
	}
	ref.SendSystemMessage(pid, &actor.Terminated{Who: tab.tab.pid, Why: actor.TerminatedReason_AddressTerminated})
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "the pairing dropped the tab")
}

// TestATabALostLinkTookIsTakenBack is issue 17's item 4 in one process: a
// peer's restart on the same address made protoactor end the pairing's
// watch of a live tab, and the tab, which heard nothing, only came back at
// its next confirm (20 s). The pairing asks the tab whether it lives and
// takes it back: a call made meanwhile reaches the tab once the clock has
// moved by askLostAfter, long before any confirm.
func TestATabALostLinkTookIsTakenBack(t *testing.T) {
	t.Run("a live tab is taken back and gets the call that waited", func(t *testing.T) {
		r, a := withLostTab(t)
		waiting := r.call("p1", "c1", "whoami")
		r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits for a tab")
		r.clock.Advance(askLostAfter)
		a.answer(a.nextCall().ID, "back")
		if got := answerText(t, waiting.outcome(t)); got != "back" {
			t.Fatalf("answered %q", got)
		}
		if got := r.inspect("p1").Tabs; len(got) != 1 || got[0] != "tab-a" {
			t.Fatalf("tabs %v, want tab-a", got)
		}
		if got := testutil.ToFloat64(r.cfg.Metrics.TabsTakenBack); got != 1 {
			t.Fatalf("tabs taken back %v, want 1", got)
		}
		if got := testutil.ToFloat64(r.cfg.Metrics.TabsConnected); got != 1 {
			t.Fatalf("tabs connected %v, want 1", got)
		}
	})
	t.Run("a tab that stopped is asked a few times, then forgotten", func(t *testing.T) {
		r, a := withLostTab(t)
		if err := r.system.Root.PoisonFuture(a.tab.pid).Wait(); err != nil { // its node died
			t.Fatal(err)
		}
		for i := 0; i <= lostAsks; i++ {
			r.eventually(func() bool { return r.clock.Pending() == 2 }, "ask %d armed (and the idle timer)", i+1)
			r.clock.Advance(askLostAfter)
		}
		r.eventually(func() bool { return r.clock.Pending() == 1 }, "the pairing stopped asking")
		r.clock.Advance(DefaultTabGrace)
		if o := r.call("p1", "c1", "whoami").outcome(t); o.Kind != protocol.NoTab {
			t.Fatalf("a call after the grace ended %v, want no_tab", o.Kind)
		}
		if got := testutil.ToFloat64(r.cfg.Metrics.TabsTakenBack); got != 0 {
			t.Fatalf("tabs taken back %v, want 0", got)
		}
	})
	t.Run("a tab back on a new socket meanwhile closes the old one", func(t *testing.T) {
		r, a := withLostTab(t)
		r.connect("p1", "tab-a", epoch) // the same tab reconnected
		r.clock.Advance(askLostAfter)
		select {
		case code := <-a.closed:
			if code != protocol.CloseReplaced {
				t.Fatalf("the old socket closed with %v, want replaced", code)
			}
		case <-time.After(patience):
			t.Fatal("the old socket was kept")
		}
		if got := r.inspect("p1").Tabs; len(got) != 1 {
			t.Fatalf("tabs %v, want the new socket's alone", got)
		}
	})
}

// TestATabsMessageToAGonePairingDoesNotHoldTheTab: what the socket reads
// goes to the pairing under the tab's lock; a pairing that is gone answers
// a request at once, in the same goroutine, with a dead letter, which
// reaches the tab while it holds that lock.
func TestATabsMessageToAGonePairingDoesNotHoldTheTab(t *testing.T) {
	r := newRig(t, nil)
	gone := r.system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	if err := r.system.Root.StopFuture(gone).Wait(); err != nil {
		t.Fatal(err)
	}
	tab := &Tab{hub: r.hub, out: &testTab{t: t, in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)}}
	tab.pid, _ = r.system.ProcessRegistry.Add(tab, "tab-white-box")
	tab.pairing = gone
	done := make(chan struct{})
	go func() {
		tab.Forward(resultOf(t, "c1", protocol.TabResult{}))
		tab.Forward(protocol.Step{Envelope: protocol.Typed(protocol.TypeStep), By: "person"})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("the tab's message to a gone pairing held the tab")
	}
}
