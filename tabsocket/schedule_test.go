package tabsocket

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestPongFrameIsWhatTheClientsSend: the reader's fast path recognises a
// pong by its bytes; the headless tab encodes the envelope with
// encoding/json, the SDK writes JSON.stringify({type: "pong"}): both are
// these bytes. Were the envelope to change, pongs would still be read
// (decoded), and this test says the fast path no longer applies.
func TestPongFrameIsWhatTheClientsSend(t *testing.T) {
	got, err := json.Marshal(protocol.Typed(protocol.TypePong))
	if err != nil || string(got) != string(pongFrame) {
		t.Fatalf("a pong encodes as %s (%v), the fast path knows %s", got, err, pongFrame)
	}
}

// TestPingWheelTakesWhatIsDue: a tick takes the sockets due by now and
// none other, puts them back an interval later, takes none that was
// removed, and skips no step when the clock jumps.
func TestPingWheelTakesWhatIsDue(t *testing.T) {
	const step, interval = time.Second, 25 * time.Second
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := newPingWheel(step, interval)
	a, b, c, gone := &conn{}, &conn{}, &conn{}, &conn{}
	w.add(a, t0.Add(interval).UnixNano())
	w.add(b, t0.Add(interval+500*time.Millisecond).UnixNano())
	w.add(c, t0.Add(3*interval).UnixNano()) // two turns of the wheel later, in a's slot or near
	w.add(gone, t0.Add(interval).UnixNano())
	w.remove(gone)
	take := func(at time.Time) []*conn {
		due := slices.Clone(w.take(at, interval))
		w.done(w.due)
		return due
	}
	if due := take(t0.Add(interval - step)); len(due) != 0 {
		t.Fatalf("a step early: %d due", len(due))
	}
	if due := take(t0.Add(interval)); len(due) != 1 || due[0] != a {
		t.Fatalf("at the interval: %v, want a alone", due)
	}
	if due := take(t0.Add(interval + step)); len(due) != 1 || due[0] != b {
		t.Fatalf("a step later: %v, want b alone", due)
	}
	if a.nextPing != t0.Add(2*interval).UnixNano() || b.nextPing != t0.Add(2*interval+step).UnixNano() {
		t.Fatal("the pinged are not due an interval after their ping")
	}
	// The clock jumps past two intervals: everyone due is taken once.
	due := take(t0.Add(3*interval + step))
	if len(due) != 3 || !slices.Contains(due, a) || !slices.Contains(due, b) || !slices.Contains(due, c) {
		t.Fatalf("after the jump: %d due, want a, b and c", len(due))
	}
	if gone.nextPing != 0 {
		t.Fatal("a removed socket is back on the wheel")
	}
	w.remove(a)
	w.remove(b)
	w.remove(c)
	for i, s := range w.slots {
		if len(s) != 0 {
			t.Fatalf("slot %d holds %d sockets after every one was removed", i, len(s))
		}
	}
}

// TestAStaleTickArmsNoSecondTimer: a timer that fired while the last
// socket left (stop) and a new one came (start) runs its tick after them;
// that tick is stale. Before generations, it dropped the new timer from
// sight and armed one more: two timers ticked from then on, and stop
// stopped one.
func TestAStaleTickArmsNoSecondTimer(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	runs := 0
	sc := &schedule{clock: c, step: time.Second, run: func(time.Time) { runs++ }}
	sc.start()
	fired := sc.gen // the timer armed now, which fires…
	sc.stop()       // …as the last socket leaves,
	sc.start()      // and a new one comes, before its tick takes the lock
	sc.tick(fired)
	if runs != 0 || c.Pending() != 1 {
		t.Fatalf("after the stale tick: %d runs, %d timers; want 0 runs, 1 timer", runs, c.Pending())
	}
	c.Advance(3 * time.Second)
	if runs != 3 || c.Pending() != 1 {
		t.Fatalf("after three steps: %d runs, %d timers; want 3 runs, 1 timer", runs, c.Pending())
	}
	sc.stop()
	if c.Pending() != 0 {
		t.Fatalf("after stop: %d timers armed, want none", c.Pending())
	}
}
