package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// TestAResultForwardedAsItsTabClosesIsNotOvertakenByTheEnd: a tab's socket
// reads a result while something else closes the tab (a replacement, a
// drain). Either the result was forwarded, and then the pairing reads it
// before it hears the tab ended (so the call never goes to the browser's
// other tab), or the closed tab dropped it, and the other tab gets the
// call and answers. A call answered by the closing tab that also went to
// the other tab is the end overtaking the result (Tab.Close tells its
// pairing after the forwards under way).
//
// In half the rounds the forward waits, past its check that the tab is
// open, until Tab.Close has returned and the pairing has answered a
// request (testHookForwarding): it reads the system messages sent to it
// before a request first, so an end told without waiting for the forward
// has reached it by then.
func TestAResultForwardedAsItsTabClosesIsNotOvertakenByTheEnd(t *testing.T) {
	r := newRig(t, nil)
	type hold struct {
		tab     *Tab
		pairing string
		closed  chan struct{} // Close returned
	}
	var held atomic.Pointer[hold]
	testHookForwarding = func(tab *Tab) {
		if h := held.Load(); h != nil && h.tab == tab {
			select {
			case <-h.closed:
			case <-time.After(patience):
			}
			_, _ = r.caller.Inspect(context.Background(), h.pairing) // an error fails the round's call instead
		}
	}
	defer func() { testHookForwarding = nil }()
	var answeredByA, answeredByB int
	for i := range 200 {
		pairing := fmt.Sprintf("p%d", i)
		b := r.connect(pairing, "tab-b", epoch.Add(-time.Minute))
		a := r.connect(pairing, "tab-a", epoch)
		waiting := r.call(pairing, "c1", "whoami")
		c := a.nextCall()
		start := make(chan struct{})
		var both sync.WaitGroup
		both.Add(2)
		closed := make(chan struct{})
		if i%2 == 0 {
			held.Store(&hold{a.tab, pairing, closed})
		}
		result := resultOf(t, c.ID, protocol.TabResult{Data: json.RawMessage(`{"text":"a"}`)})
		go func() { defer both.Done(); <-start; a.tab.Forward(result) }()
		go func() {
			defer both.Done()
			<-start
			for range i % 4 { // let the forward get further, more often as i grows
				runtime.Gosched()
			}
			a.tab.Close()
			close(closed)
		}()
		close(start)
		both.Wait()

		redelivered := false
		var o protocol.Outcome
	wait:
		for {
			select {
			case o = <-waiting.done:
				break wait
			case m := <-b.in:
				if call, ok := m.(protocol.Call); ok {
					redelivered = true
					b.answer(call.ID, "b")
				}
			case <-time.After(patience):
				t.Fatalf("%s: the call did not end", pairing)
			}
		}
		// A call sent to b before the pairing read a's result is in b's
		// queue by now: the pairing sent it before it answered the waiter.
		for len(b.in) > 0 {
			if _, ok := (<-b.in).(protocol.Call); ok {
				redelivered = true
			}
		}
		byA := answerText(t, o) == "a"
		if byA && redelivered {
			t.Fatalf("%s: the closing tab's result was read after its end: the call went to the other tab too", pairing)
		}
		if byA {
			answeredByA++
		} else {
			answeredByB++
		}
		b.tab.Close()
		held.Store(nil)
	}
	t.Logf("answered by the closing tab %d times, by the other %d times", answeredByA, answeredByB)
}
