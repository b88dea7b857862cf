package events

import "sync/atomic"

// Listener is a subscription read from a loop (a subscriptions/listen
// stream): the events delivered since the last Take add up, and C says
// there are some. None is lost, and none leaks into another Listener.
type Listener struct {
	pending     atomic.Uint32
	signal      chan struct{}
	unsubscribe func()
}

// Listen subscribes a Listener to pairing's events; Close ends it.
func (h *Hub) Listen(pairing string) *Listener {
	l := &Listener{signal: make(chan struct{}, 1)}
	l.unsubscribe = h.Subscribe(pairing, l.add)
	return l
}

func (l *Listener) add(k Kind) {
	l.pending.Or(uint32(k))
	select {
	case l.signal <- struct{}{}:
	default: // a signal waits already: Take reads this event with it
	}
}

// C has a value once an event is pending.
func (l *Listener) C() <-chan struct{} { return l.signal }

// Take returns the kinds delivered since the last Take (0: none).
func (l *Listener) Take() Kind { return Kind(l.pending.Swap(0)) }

// Close unsubscribes.
func (l *Listener) Close() { l.unsubscribe() }
