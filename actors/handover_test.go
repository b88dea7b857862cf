package actors

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/testwait"
	"github.com/tabrelay/tabrelay/protocol"
)

// Whichever side of a handover comes second starts the writer, once: the
// caller inline when the writer was handed over before it went on
// waiting, a goroutine of the socket's own when it had gone on.
func TestAHandoverStartsTheWriterOnceOnTheSecondSide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		giveFirst  bool
		wantInline bool
	}{{"given, then taken", true, true}, {"taken, then given", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var starts, inlines atomic.Int32
			start := func(inline bool) {
				starts.Add(1)
				if inline {
					inlines.Add(1)
				}
			}
			h := &handover{}
			if tc.giveFirst {
				h.give(start)
				h.take()
			} else {
				h.take()
				h.give(start)
			}
			if starts.Load() != 1 || (inlines.Load() == 1) != tc.wantInline {
				t.Fatalf("writer started %d times, %d inline; want once, inline %v", starts.Load(), inlines.Load(), tc.wantInline)
			}
		})
	}
}

// heldTab is a tab endpoint whose writer is idle: a held send hands its
// start to whoever must run it, and that start is where the frame goes.
type heldTab struct {
	*testTab
	inline atomic.Int32 // frames written in the goroutine of their call's caller
	other  atomic.Int32 // frames written by a writer of the socket's own
}

func (h *heldTab) SendHeld(msg protocol.ToTab) (func(bool), bool) {
	return func(inline bool) {
		if inline {
			h.inline.Add(1)
		} else {
			h.other.Add(1)
		}
		h.in <- msg
	}, true
}

// A call to an idle pairing whose focused tab is in this process and has
// no writer running is written by its caller's goroutine: no goroutine
// is woken between the host's request and the tab's frame (issue 27's
// latency, docs/BENCHMARKS.md "A call without a hand-off"). Without the
// handover the frame goes to a writer of its own.
func TestACallToAnIdlePairingIsWrittenByItsCaller(t *testing.T) {
	r := newRig(t, nil)
	tt := r.connect("p1", "t1", epoch)
	h := &heldTab{testTab: &testTab{t: t, id: "t2", in: make(chan any, 8), closed: make(chan protocol.CloseCode, 1)}}
	h.tab = r.hub.Accept(TabInfo{Pairing: "p1", TabID: "t2", FocusedAt: epoch.Add(time.Second)}, h)
	r.eventually(func() bool { return len(r.inspect("p1").Tabs) == 2 }, "tab t2 registers")
	call := func(i int) {
		p := r.call("p1", "conn", "whoami")
		c := h.testTab.nextCall()
		h.tab.Forward(resultOf(t, c.ID, protocol.TabResult{Data: []byte(`{"n":1}`)}))
		if o := p.outcome(t); o.Kind != protocol.Answered {
			t.Fatalf("call %d: %v, want answered", i, o.Kind)
		}
	}
	// Until the first call written by its caller: the watches of the
	// registration (system messages) run the mailbox in a goroutine of its
	// own for a moment, and a call that comes then goes with them.
	testwait.Eventually(t, func() bool { call(-1); return h.inline.Load() > 0 }, "a call written by its caller")
	h.inline.Store(0)
	h.other.Store(0)
	for i := range 20 {
		call(i)
	}
	if h.inline.Load() != 20 || h.other.Load() != 0 {
		t.Fatalf("%d frames written by their callers, %d by a writer of their own; want 20 and 0", h.inline.Load(), h.other.Load())
	}
	select {
	case m := <-tt.in:
		t.Fatalf("the tab not focused got %T", m)
	default:
	}
}
