package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestATabClosedMidCallIsAnsweredAfterTheGrace (issue 15 item 9): the
// browser's only tab closes with a call in it and no tab comes back: the
// host is answered after the tab grace, not at the 225 s wait, that the
// call may or may not have run; a tab that comes back before the deadline
// gets the call again (same id), and its answer is late.
func TestATabClosedMidCallIsAnsweredAfterTheGrace(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	p := r.call("p1", "c1", "counter")
	first := a.nextCall()
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-a gone")

	r.clock.Advance(r.cfg.TabGrace - time.Millisecond)
	select {
	case o := <-p.done:
		t.Fatalf("ended %v before the tab grace ran out", o.Kind)
	case <-time.After(100 * time.Millisecond):
	}
	r.clock.Advance(time.Millisecond)
	o := p.outcome(t)
	if o.Kind != protocol.TabClosed || o.CallID != first.ID {
		t.Fatalf("outcome %v (call %s), want tab_closed for %s", o.Kind, o.CallID, first.ID)
	}
	if s := o.Sentence("Demo", ""); !strings.Contains(s, "may or may not have run") {
		t.Fatalf("sentence %q does not say the call may or may not have run", s)
	}
	if got := testutil.ToFloat64(r.cfg.Metrics.Calls.WithLabelValues("tab_closed")); got != 1 {
		t.Fatalf("calls{outcome=tab_closed} = %v, want 1", got)
	}
	if s := r.inspect("p1"); s.Calls != 0 {
		t.Fatalf("%d calls in flight after the answer, want 0", s.Calls)
	}

	back := r.connect("p1", "tab-a", epoch)
	again := back.nextCall()
	if again.ID != first.ID || again.Redelivery != 1 {
		t.Fatalf("the returning tab got %+v, want call %s redelivered", again, first.ID)
	}
	back.answer(again.ID, "ran after all")
	r.eventually(func() bool { return testutil.ToFloat64(r.cfg.Metrics.LateAnswers) == 1 }, "the late answer counted")
}

// TestACallWhoseTabClosedIsKeptOnlyUntilItsDeadline: past the call's
// deadline a tab that comes back gets nothing.
func TestACallWhoseTabClosedIsKeptOnlyUntilItsDeadline(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	p := r.call("p1", "c1", "counter")
	a.nextCall()
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-a gone")
	r.clock.Advance(r.cfg.TabGrace)
	if o := p.outcome(t); o.Kind != protocol.TabClosed {
		t.Fatalf("outcome %v, want tab_closed", o.Kind)
	}
	r.clock.Advance(r.cfg.CallWait)
	back := r.connect("p1", "tab-a", epoch)
	r.inspect("p1") // the registration and anything it sent are done
	back.nothingQueued("a tab back after the deadline got %v")
}

// TestACallNoTabHadIsStillNoTab: a call that came in the grace of a tab
// that had gone before it did not run: no tab is the answer.
func TestACallNoTabHadIsStillNoTab(t *testing.T) {
	r := newRig(t, nil)
	a := r.connect("p1", "tab-a", epoch)
	a.tab.Close()
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 0 }, "tab-a gone")
	p := r.call("p1", "c1", "counter")
	r.eventually(func() bool { return r.inspect("p1").Pending == 1 }, "the call waits")
	r.clock.Advance(r.cfg.TabGrace)
	if o := p.outcome(t); o.Kind != protocol.NoTab {
		t.Fatalf("outcome %v, want no_tab", o.Kind)
	}
}
