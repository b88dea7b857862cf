package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// confirmsRig is a rig whose pairings stand in for pairings on another
// node: their tabs' registrations are confirmed (confirmLocal).
func confirmsRig(t *testing.T, tweak func(*Config)) *rig {
	return newRig(t, func(c *Config) {
		c.confirmLocal = true
		if tweak != nil {
			tweak(c)
		}
	})
}

// confirming waits until the node's confirms hold n tabs: a tab joins them
// once it read its registration's answer, which comes after the pairing
// holds it.
func (r *rig) confirming(n int) {
	r.t.Helper()
	r.eventually(func() bool { tabs, _ := r.hub.confirms.scheduled(); return tabs == n }, "%d tabs on the confirms", n)
}

// confirmsSent reports the confirms sent so far, one message per node and
// one per tab.
func (r *rig) confirmsSent() (node, tab float64) {
	return testutil.ToFloat64(r.cfg.Metrics.Confirms.WithLabelValues("node")),
		testutil.ToFloat64(r.cfg.Metrics.Confirms.WithLabelValues("tab"))
}

// dropUnseen makes pairing p1 drop tab as a broken link between two nodes
// does (a Terminated the tab knows nothing of).
func (r *rig) dropUnseen(tab *testTab) {
	r.t.Helper()
	pid, err := r.caller.router.Pairing(context.Background(), "p1", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.system.Root.Send(pid, &actor.Terminated{Who: tab.tab.pid})
}

// TestATabDroppedByItsPairingRegistersAgain: between nodes, a broken
// connection looks to the pairing like its tab stopping, while the tab
// heard nothing. The node's next confirm of its tabs brings the tab back,
// within one ConfirmEvery, in one message.
func TestATabDroppedByItsPairingRegistersAgain(t *testing.T) {
	r := confirmsRig(t, func(c *Config) { c.ConfirmEvery = time.Second }) // within the tab grace
	a := r.connect("p1", "tab-a", epoch)
	r.connect("p1", "tab-b", epoch.Add(time.Second))
	r.confirming(2)
	r.dropUnseen(a)
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 1 }, "the pairing dropped the tab")
	r.clock.Advance(time.Second)
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 2 }, "the tab registered again")
	if got := testutil.ToFloat64(r.cfg.Metrics.TabsConnected); got != 2 {
		t.Fatalf("tabs connected %v, want 2", got)
	}
	if node, tab := r.confirmsSent(); node != 1 || tab != 0 {
		t.Fatalf("confirms sent: %v for the node, %v by tabs; want one for the node", node, tab)
	}
	// The tab was taken back as it was: its focus time came with it.
	if got := r.inspect("p1").Tabs; got[0] != "tab-b" || got[1] != "tab-a" {
		t.Fatalf("tabs in focus order %v, want tab-b, tab-a", got)
	}
}

// TestTheTabsOfANodeAreConfirmedInOneMessage: N tabs of several pairings
// on one node cost one confirm message a round, not N; a round lists at
// most confirmChunk of them.
func TestTheTabsOfANodeAreConfirmedInOneMessage(t *testing.T) {
	for _, tc := range []struct {
		name             string
		tabs             int
		messagesPerRound float64
	}{
		{"a few tabs", 12, 1},
		{"more tabs than a message lists", confirmChunk + 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := confirmsRig(t, nil)
			for i := 0; i < tc.tabs; i++ {
				pairing := fmt.Sprintf("p%d", i/DefaultMaxTabs)
				r.hub.Accept(TabInfo{Pairing: pairing, TabID: fmt.Sprintf("tab-%d", i)}, &testTab{t: t, in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)})
			}
			r.confirming(tc.tabs)
			for round := 1; round <= 3; round++ {
				r.clock.Advance(DefaultConfirmEvery)
				r.eventually(func() bool { _, pending := r.hub.confirms.scheduled(); return pending == 0 }, "round %d answered", round)
				if node, tab := r.confirmsSent(); node != tc.messagesPerRound*float64(round) || tab != 0 {
					t.Fatalf("after %d rounds: %v messages for the node, %v by tabs; want %v a round for the node",
						round, node, tab, tc.messagesPerRound)
				}
			}
			if got := testutil.ToFloat64(r.cfg.Metrics.TabsConnected); got != float64(tc.tabs) {
				t.Fatalf("tabs connected %v, want %d", got, tc.tabs)
			}
		})
	}
}

// confirmLog keeps the TabConfirms that reach a node's confirms.
type confirmLog struct {
	mu   sync.Mutex
	msgs []*wire.TabConfirm
}

func (l *confirmLog) record(message any) {
	if m, ok := actor.UnwrapEnvelopeMessage(message).(*wire.TabConfirm); ok {
		l.mu.Lock()
		l.msgs = append(l.msgs, m)
		l.mu.Unlock()
	}
}

func (l *confirmLog) received() []*wire.TabConfirm {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*wire.TabConfirm(nil), l.msgs...)
}

// blackHole stands in for a node's confirms that never answer (the node
// is gone, or its answers are lost): it keeps what reaches it.
type blackHole struct{ confirmLog }

func (b *blackHole) SendUserMessage(_ *actor.PID, message any) { b.record(message) }
func (b *blackHole) SendSystemMessage(*actor.PID, any)         {}
func (b *blackHole) Stop(*actor.PID)                           {}

// silence puts a black hole where the rig's confirms are reached: the
// confirms the node sends are never answered.
func (r *rig) silence() *blackHole {
	b := &blackHole{}
	r.system.ProcessRegistry.Remove(actor.NewPID(r.system.Address(), confirmsName))
	if _, ok := r.system.ProcessRegistry.Add(b, confirmsName); !ok {
		r.t.Fatal("the confirms are still registered")
	}
	return b
}

// lookupCounter counts the lookups of the router under it.
type lookupCounter struct {
	Router
	n atomic.Int64
}

func (c *lookupCounter) Pairing(ctx context.Context, id string, stale *actor.PID) (*actor.PID, error) {
	c.n.Add(1)
	return c.Router.Pairing(ctx, id, stale)
}

// TestTabsWhoseConfirmIsNotAnsweredLookTheirPairingsUpAgain: a confirm
// whose answer never comes makes its tabs look their pairings up at the
// next round, as new tabs do: the pairing, alive here, is not replaced,
// and it sends each tab its call again (what the tab answered meanwhile
// may have been lost too).
func TestTabsWhoseConfirmIsNotAnsweredLookTheirPairingsUpAgain(t *testing.T) {
	r := confirmsRig(t, nil)
	router := &lookupCounter{Router: r.hub.router}
	r.hub.router = router
	a := r.connect("p1", "tab-a", epoch)
	b := r.connect("p1", "tab-b", epoch.Add(time.Second))
	r.confirming(2)
	before, _ := router.Router.(*LocalRouter).Active("p1")
	r.call("p1", "c1", "whoami")
	c := b.nextCall() // the tab focused last
	hole := r.silence()

	r.clock.Advance(DefaultConfirmEvery)
	r.eventually(func() bool { return len(hole.received()) == 1 }, "the round's confirm sent")
	if got := hole.received()[0].GetTabs(); len(got) != 2 {
		t.Fatalf("the confirm lists %d tabs, want 2", len(got))
	}
	looked := router.n.Load()
	r.clock.Advance(DefaultConfirmEvery)
	r.eventually(func() bool { return router.n.Load() == looked+2 }, "both tabs look their pairing up again")
	again := b.nextCall()
	if again.ID != c.ID || again.Redelivery != 1 {
		t.Fatalf("tab-b got %s (redelivery %d), want %s again", again.ID, again.Redelivery, c.ID)
	}
	a.nothingQueued("tab-a got %+v; it had no call")
	if now, _ := router.Router.(*LocalRouter).Active("p1"); !now.Equal(before) {
		t.Fatalf("the pairing's actor is %v now, want %v kept", now, before)
	}
	r.confirming(2) // registered again, and confirmed from now on
	if got := r.inspect("p1").Tabs; len(got) != 2 {
		t.Fatalf("tabs %v, want both", got)
	}
}

// TestATabOfAGonePairingItNeverHeardOfLooksItUpAgain: the pairing's actor
// stopped, and the tab's watch of it was lost: the confirm's answer names
// the actor gone, and the tab registers with a new one.
func TestATabOfAGonePairingItNeverHeardOfLooksItUpAgain(t *testing.T) {
	r := confirmsRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	r.confirming(1)
	old, _ := r.hub.router.(*LocalRouter).Active("p1")
	ref, _ := r.system.ProcessRegistry.GetLocal(old.Id)
	ref.SendSystemMessage(old, &actor.Unwatch{Watcher: a.tab.pid}) // the watch lost on the way
	if err := r.system.Root.StopFuture(old).Wait(); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(DefaultConfirmEvery)
	r.eventually(func() bool { now, ok := r.hub.router.(*LocalRouter).Active("p1"); return ok && !now.Equal(old) }, "a new actor of p1")
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 1 }, "the tab registered with it")
}

// TestATabAFullPairingCannotTakeBackIsClosed: a pairing that dropped a tab
// unseen and took another meanwhile, up to its limit, closes the tab
// that its confirm names, as it refuses a registration.
func TestATabAFullPairingCannotTakeBackIsClosed(t *testing.T) {
	r := confirmsRig(t, func(c *Config) { c.MaxTabs = 1 })
	a := r.connect("p1", "tab-a", epoch)
	r.confirming(1)
	r.dropUnseen(a)
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "the pairing dropped the tab")
	r.connect("p1", "tab-b", epoch)
	r.confirming(2)
	r.clock.Advance(DefaultConfirmEvery)
	select {
	case code := <-a.closed:
		if code != protocol.CloseTooManyTabs {
			t.Fatalf("the dropped tab closed with %v, want too many tabs", code)
		}
	case <-time.After(patience):
		t.Fatal("the dropped tab was kept open")
	}
	if got := r.inspect("p1").Tabs; len(got) != 1 || got[0] != "tab-b" {
		t.Fatalf("tabs %v, want tab-b", got)
	}
}

// oldBuildPairing answers registrations as a pairing of a build before
// the node's confirms does (TabRegistered without node_confirms), and
// counts them.
type oldBuildPairing struct{ registers *atomic.Int64 }

func (o oldBuildPairing) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*wire.TabRegister); ok {
		o.registers.Add(1)
		ctx.Respond(&wire.TabRegistered{Accepted: true})
	}
}

// TestATabOfAnOlderBuildsPairingIsConfirmedByItself: a pairing whose node
// does not read TabConfirm (a rolling restart) is never sent one: each of
// its tabs is sent a TabRegister of its own every round, as before.
func TestATabOfAnOlderBuildsPairingIsConfirmedByItself(t *testing.T) {
	r := confirmsRig(t, nil)
	var registers atomic.Int64
	old := r.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return oldBuildPairing{&registers} }))
	hub := NewHub(r.system, fixedRouter{old}, r.cfg)
	for _, id := range []string{"tab-a", "tab-b"} {
		hub.Accept(TabInfo{Pairing: "p1", TabID: id}, &testTab{t: t, in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)})
	}
	r.confirming(2)
	hole := r.silence()
	for round := int64(1); round <= 2; round++ {
		r.clock.Advance(DefaultConfirmEvery)
		r.eventually(func() bool { return registers.Load() == 2+2*round }, "round %d: a registration per tab", round)
	}
	if got := hole.received(); len(got) != 0 {
		t.Fatalf("%d TabConfirms sent to a node of an older build", len(got))
	}
	if node, tab := r.confirmsSent(); node != 0 || tab != 4 {
		t.Fatalf("confirms sent: %v for the node, %v by tabs; want 4 by tabs", node, tab)
	}
}

// TestATabFollowingAMovedPairingIsConfirmedByItselfOnce: the actor its
// pairing moved to may be of another build, so the tab's next confirm is
// a TabRegister of its own; its answer says the node takes TabConfirms,
// and the rounds after list the tab with the node's others.
func TestATabFollowingAMovedPairingIsConfirmedByItselfOnce(t *testing.T) {
	r := confirmsRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	r.confirming(1)
	from, _ := r.hub.router.(*LocalRouter).Active("p1")
	to, err := NewActivations(r.system, r.cfg, nil).Activate("p1", false) // where p1 moved
	if err != nil {
		t.Fatal(err)
	}
	r.system.Root.RequestWithCustomSender(a.tab.pid, &wire.PairingMoved{Address: to.Address, Id: to.Id}, from)
	r.eventually(func() bool { pid, _, _ := a.tab.confirmation(); return pid.Equal(to) }, "the tab follows its pairing")

	r.clock.Advance(DefaultConfirmEvery)
	r.eventually(func() bool { return len(r.snapshotOf(to).GetTabs()) == 1 }, "the actor it moved to holds the tab")
	if node, tab := r.confirmsSent(); node != 0 || tab != 1 {
		t.Fatalf("first round: %v for the node, %v by the tab; want one by the tab", node, tab)
	}
	r.eventually(func() bool { _, _, node := a.tab.confirmation(); return node }, "the answer says the node takes TabConfirms")
	r.clock.Advance(DefaultConfirmEvery)
	if node, tab := r.confirmsSent(); node != 1 || tab != 1 {
		t.Fatalf("second round: %v for the node, %v by the tab; want one for the node", node, tab)
	}
}

// TestAStaleConfirmDoesNotReplaceTheTabsNewSocket: a pairing dropped a
// tab's socket unseen, and the tab came back on a new socket, while the
// old socket (which nothing told) still confirms its registration. The
// confirm is the old socket's: it must not replace the new one, which
// the browser uses; the old socket is the one closed, as replaced.
func TestAStaleConfirmDoesNotReplaceTheTabsNewSocket(t *testing.T) {
	r := confirmsRig(t, func(c *Config) { c.ConfirmEvery = time.Second })
	old := r.connect("p1", "tab-a", epoch)
	r.confirming(1)
	r.dropUnseen(old)
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "the pairing dropped the old socket")
	fresh := r.connect("p1", "tab-a", epoch.Add(time.Second))
	r.confirming(2)
	r.clock.Advance(time.Second)
	select {
	case code := <-old.closed:
		if code != protocol.CloseReplaced {
			t.Fatalf("the old socket closed with %v, want %v", code, protocol.CloseReplaced)
		}
	case <-time.After(patience):
		t.Fatal("the old socket's confirm did not close it")
	}
	select {
	case code := <-fresh.closed:
		t.Fatalf("the new socket closed with %v: a stale confirm replaced it", code)
	default:
	}
	if got := r.inspect("p1").Tabs; len(got) != 1 || got[0] != "tab-a" {
		t.Fatalf("tabs %v, want the new socket of tab-a alone", got)
	}
	p := r.call("p1", "conn-1", "counter") // the call goes to the new socket
	defer p.cancel()
	fresh.nextCall()
}
