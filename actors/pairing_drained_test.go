package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	tabpairing "github.com/tabrelay/tabrelay/pairing"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/store/bolt"
)

// readMarks is the embedded store as the pairings read it, counting the
// reads that returned; with a gate, each read waits until it is closed.
type readMarks struct {
	*bolt.Store
	reads atomic.Int32
	gate  chan struct{}
}

func (m *readMarks) Drained(ctx context.Context, id string, now time.Time) (tabpairing.Drained, bool, error) {
	if m.gate != nil {
		<-m.gate
	}
	d, found, err := m.Store.Drained(ctx, id, now)
	m.reads.Add(1)
	return d, found, err
}

// drainedRig is a rig whose pairings read the drains' marks in a real
// embedded store.
func drainedRig(t *testing.T, gate chan struct{}) (*rig, *readMarks) {
	t.Helper()
	s, err := bolt.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	marks := &readMarks{Store: s, gate: gate}
	return newRig(t, func(c *Config) { c.Drained = marks }), marks
}

func (r *rig) markDrained(m *readMarks, id string, at, until time.Time) {
	r.t.Helper()
	if err := m.MarkDrained(context.Background(), map[string]tabpairing.Drained{id: {At: at, Until: until}}); err != nil {
		r.t.Fatal(err)
	}
}

// TestACallWaitsForTheTabsOfADrainedBrowser (issue 25, item 2): a
// pairing that knows nothing of its browser's tabs (a node restarted
// after it drained them) finds the drain's mark when a call finds no tab,
// and the call waits for the tab that comes back; a browser without a
// mark is answered at once, and one whose mark ran out too. A mark older
// than the last tab that registered is spent: once that tab went, a call
// waits only the tab grace.
func TestACallWaitsForTheTabsOfADrainedBrowser(t *testing.T) {
	r, marks := drainedRig(t, nil)
	r.markDrained(marks, "p1", epoch.Add(-time.Second), epoch.Add(20*time.Second))
	r.markDrained(marks, "p2", epoch.Add(-time.Second), epoch.Add(20*time.Second))

	waiting := r.call("p1", "c1", "whoami")
	r.eventually(func() bool { return marks.reads.Load() == 1 }, "the pairing reads its mark")
	r.clock.Advance(10 * time.Second) // past the tab grace, within the mark
	back := r.connect("p1", "tab-a", epoch)
	back.answer(back.nextCall().ID, "a")
	if got := answerText(t, waiting.outcome(t)); got != "a" {
		t.Fatalf("answered by %q", got)
	}

	if o := r.call("p3", "c1", "whoami").outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("a browser no drain marked: %v, want no_tab at once", o.Kind)
	}

	late := r.call("p2", "c1", "whoami")
	r.eventually(func() bool { return marks.reads.Load() == 3 }, "p2's pairing reads its mark")
	r.clock.Advance(10 * time.Second) // the mark's end
	// The pairing may handle the read after the Advance, and arm its wait
	// for a time that is now: Advance(0) fires what is due by then.
	r.eventually(func() bool { r.clock.Advance(0); return len(late.done) == 1 }, "the call whose mark ran out ends")
	if o := late.outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("a call whose browser's mark ran out: %v, want no_tab", o.Kind)
	}

	back.tab.Close() // the tab that came back after the drain goes
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "the tab gone")
	r.markDrained(marks, "p1", epoch.Add(-time.Second), r.clock.Now().Add(time.Minute))
	spent := r.call("p1", "c1", "whoami")
	r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits the tab grace")
	r.clock.Advance(r.cfg.TabGrace)
	if o := spent.outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("a call after the grace, the mark older than the tab that came back: %v, want no_tab", o.Kind)
	}
}

// TestACallWaitsPastTheGraceForADrainedTab (issue 25, item 3): the
// pairing holds a tab whose socket a node drains (that node is not the
// pairing's: only its tab went); a call waits the tab grace, and then as
// long as the drain's mark says, for the tab that comes back.
func TestACallWaitsPastTheGraceForADrainedTab(t *testing.T) {
	r, marks := drainedRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	r.clock.Advance(time.Second)
	r.markDrained(marks, "p1", r.clock.Now(), r.clock.Now().Add(30*time.Second))
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "the drained tab gone")

	waiting := r.call("p1", "c1", "whoami")
	r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits the tab grace")
	r.clock.Advance(r.cfg.TabGrace)
	r.eventually(func() bool { return marks.reads.Load() == 1 }, "the pairing reads the mark at the grace's end")
	r.clock.Advance(10 * time.Second)
	back := r.connect("p1", "tab-a", r.clock.Now())
	back.answer(back.nextCall().ID, "back")
	if got := answerText(t, waiting.outcome(t)); got != "back" {
		t.Fatalf("answered by %q", got)
	}
}

// TestACallAskingForADrainsMarkMovesAndAsksAgain: a pairing that moves
// (its node drains) while a call waits for the store's answer about a
// drain's mark hands the call over as one whose wait for a tab is over:
// the new actor asks the store itself and answers it (here: no mark, no
// tab), rather than keeping it until its deadline.
func TestACallAskingForADrainsMarkMovesAndAsksAgain(t *testing.T) {
	gate := make(chan struct{})
	r, _ := drainedRig(t, gate)
	other := NewActivations(r.system, r.cfg, nil) // the other node's
	waiting := r.call("p1", "c1", "whoami")
	r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits for the store")
	router := r.hub.router.(*LocalRouter)
	old, _ := router.Active("p1")
	r.handOff(adopterOf(r, other, nil))
	moved := r.activeIn(other, "p1")
	r.movesDone(1)
	r.snapshotOf(old)           // read after the move's end: its linger is armed
	r.clock.Advance(moveLinger) // the old actor has forwarded all, MoveDone too, and stops
	r.eventually(func() bool { _, ok := router.Active("p1"); return !ok }, "the old actor stops")
	r.snapshotOf(moved) // the new actor has read the old one's MoveDone
	close(gate)
	r.clock.Advance(time.Millisecond)
	if o := waiting.outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("the moved call ended %v, want no_tab", o.Kind)
	}
}
