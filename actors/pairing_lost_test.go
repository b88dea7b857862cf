package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// withLostTab connects tab-a to p1 (whose tabs confirm only hourly) and then
// tells p1 that the link to tab-a's node is lost.
func withLostTab(t *testing.T) (*rig, *testTab) {
	t.Helper()
	r := newRig(t, func(c *Config) { c.ConfirmEvery = time.Hour })
	a := r.connect("p1", "tab-a", epoch)
	r.linkLost(a.tab.pid)
	return r, a
}

// linkLost tells the pairing p1 that tab's node's link is lost, as
// protoactor's remote tells every watcher of an actor at that address: a
// Terminated system message saying AddressTerminated.
func (r *rig) linkLost(tab *actor.PID) {
	r.t.Helper()
	r.watchEnded(tab, actor.TerminatedReason_AddressTerminated)
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "the pairing dropped the tab")
}

// watchEnded tells the pairing p1 that its watch of who ended, and why, as
// protoactor does (a system message), and returns once p1 has read it.
func (r *rig) watchEnded(who *actor.PID, why actor.TerminatedReason) {
	r.t.Helper()
	pid, err := r.caller.router.Pairing(context.Background(), "p1", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	ref, ok := r.system.ProcessRegistry.GetLocal(pid.Id)
	if !ok {
		r.t.Fatal("no pairing actor")
	}
	ref.SendSystemMessage(pid, &actor.Terminated{Who: who, Why: why})
	r.inspect("p1") // a request, read after every system message sent before it
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
	t.Run("a tab that stops meanwhile is forgotten without an ask", func(t *testing.T) {
		r, a := withLostTab(t)
		// The socket closed: the tab's node tells its watchers, this
		// pairing among them (the lost link was this node's news only).
		if err := r.system.Root.PoisonFuture(a.tab.pid).Wait(); err != nil {
			t.Fatal(err)
		}
		r.eventually(func() bool { return r.clock.Pending() == 1 }, "the pairing stopped asking (the idle timer alone)")
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

// farTab stands for a tab on another node whose link the test cuts: it
// answers the pairing's asks whether it lives only when told to (a Tab
// answers every ask), and keeps whether the pairing watches it.
type farTab struct {
	pid     *actor.PID
	system  *actor.ActorSystem
	answers atomic.Bool
	watched atomic.Bool
	asks    chan struct{} // an ask that got no answer
}

func (f *farTab) SendUserMessage(_ *actor.PID, message any) {
	_, msg, sender := actor.UnwrapEnvelope(message)
	if _, ok := msg.(*actor.Touch); !ok {
		return
	}
	if f.answers.Load() {
		f.system.Root.Send(sender, &actor.Touched{Who: f.pid})
		return
	}
	f.asks <- struct{}{}
}

func (f *farTab) SendSystemMessage(_ *actor.PID, message any) {
	switch message.(type) {
	case *actor.Watch:
		f.watched.Store(true)
	case *actor.Unwatch:
		f.watched.Store(false)
	}
}

func (f *farTab) Stop(*actor.PID) {}

// asked waits for the pairing's next ask.
func (f *farTab) asked(t *testing.T, n int) {
	t.Helper()
	select {
	case <-f.asks:
	case <-time.After(patience):
		t.Fatalf("ask %d did not come", n)
	}
}

// lostFarTab registers a far tab with pairing p1 and tells p1 that the
// link to its node is lost.
func (r *rig) lostFarTab() *farTab {
	r.t.Helper()
	f := &farTab{system: r.system, asks: make(chan struct{}, 64)}
	f.pid, _ = r.system.ProcessRegistry.Add(f, "tab-far")
	p1, err := r.caller.router.Pairing(context.Background(), "p1", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	reg := &wire.TabRegister{TabId: "tab-far", TabActor: f.pid.Id, TabAddress: f.pid.Address}
	if _, err := r.system.Root.RequestFuture(p1, reg, patience).Result(); err != nil {
		r.t.Fatal(err)
	}
	r.linkLost(f.pid)
	return f
}

// TestAsksTheLinkCutDoNotCountAgainstALostTab: after a peer's restart on
// the same address, protoactor goes on cutting the link there for 1.4–2.5
// s under load, and an ask sent on a connection it cuts is lost without a
// word; with three asks 0.5 s apart all lost, a live tab stayed away until
// its node's confirm, 20 s (TestInProcessALiveTabOutlivesAPeerRestartedOnItsAddress,
// about 1 run in 100 under load). The pairing watches the tab while it
// asks: a watch the link's cut ended makes the asks so far not count.
func TestAsksTheLinkCutDoNotCountAgainstALostTab(t *testing.T) {
	t.Run("a tab whose asks the link cut is asked until it answers", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.ConfirmEvery = time.Hour })
		f := r.lostFarTab()
		const cuts = 2 * lostAsks
		for i := 1; i <= cuts; i++ {
			r.clock.Advance(askLostAfter)
			f.asked(t, i)
			if !f.watched.Load() {
				t.Fatalf("ask %d: the pairing does not watch the tab it asks", i)
			}
			r.watchEnded(f.pid, actor.TerminatedReason_AddressTerminated) // the link cut again, the ask with it
		}
		f.answers.Store(true)
		r.clock.Advance(askLostAfter)
		r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 1 }, "the tab taken back")
		if got := testutil.ToFloat64(r.cfg.Metrics.TabsTakenBack); got != 1 {
			t.Fatalf("tabs taken back %v, want 1", got)
		}
		if got := testutil.ToFloat64(r.cfg.Metrics.TabAsksCut); got != cuts {
			t.Fatalf("asks cut %v, want %d", got, cuts)
		}
	})
	t.Run("a tab that answers none of the asks while the link holds is forgotten", func(t *testing.T) {
		r := newRig(t, func(c *Config) { c.ConfirmEvery = time.Hour })
		f := r.lostFarTab()
		for i := 1; i <= lostAsks; i++ {
			r.clock.Advance(askLostAfter)
			f.asked(t, i)
		}
		r.clock.Advance(askLostAfter)
		r.eventually(func() bool { return !f.watched.Load() }, "the pairing stopped watching the tab")
		if n := r.clock.Pending(); n != 1 {
			t.Fatalf("%d timers, want the idle timer alone (no more asks)", n)
		}
	})
	t.Run("asks the link keeps cutting stop after ConfirmEvery", func(t *testing.T) {
		const confirmEvery = 3 * time.Second // the tab's node confirms it by then
		r := newRig(t, func(c *Config) { c.ConfirmEvery = confirmEvery })
		f := r.lostFarTab()
		for i := 1; i < int(confirmEvery/askLostAfter); i++ {
			r.clock.Advance(askLostAfter)
			f.asked(t, i)
			r.watchEnded(f.pid, actor.TerminatedReason_AddressTerminated)
		}
		r.clock.Advance(askLostAfter)
		r.eventually(func() bool { return !f.watched.Load() }, "the pairing stopped watching the tab")
		if n := r.clock.Pending(); n != 1 {
			t.Fatalf("%d timers, want the idle timer alone (no more asks)", n)
		}
	})
}
