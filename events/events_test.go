package events

import (
	"slices"
	"testing"
)

// TestListenersAddUpAlone: a listener's pending events add up (none is
// lost), and never leak into another listener's.
func TestListenersAddUpAlone(t *testing.T) {
	h := New(nil)
	for round := 0; round < 20; round++ { // map order varies: each order is met
		first, second := h.Listen("p1"), h.Listen("p1")
		h.Deliver(TokenRevoked, "p1")
		<-second.C()
		if got := second.Take(); got != TokenRevoked {
			t.Fatalf("second listener got %b, want the revocation", got)
		}
		h.Deliver(ToolsChanged, "p1")
		<-first.C()
		if got := first.Take(); got != TokenRevoked|ToolsChanged {
			t.Fatalf("first listener got %b, want both kinds", got)
		}
		<-second.C()
		if got := second.Take(); got != ToolsChanged {
			t.Fatalf("second listener got %b, want tools changed only", got)
		}
		first.Close()
		second.Close()
	}
	h.Deliver(ToolsChanged, "p1")
	if len(h.subs) != 0 {
		t.Fatalf("closed listeners are still subscribed: %v", h.subs)
	}
}

// TestForwardsHearTheirKindsAfterTheListeners: a Forward hears the subject
// of each event of its kinds delivered here (the tab sockets push a
// browser's connections), after the listeners, and nothing of other kinds.
func TestForwardsHearTheirKindsAfterTheListeners(t *testing.T) {
	h := New(nil)
	l := h.Listen("p1")
	defer l.Close()
	var heard []string
	h.Forward(ConnectionsChanged, func(pairing string) {
		if l.Take()&ConnectionsChanged == 0 {
			t.Error("the forward was called before the listener heard the event")
		}
		heard = append(heard, pairing)
	})
	h.Deliver(ToolsChanged, "p1")
	h.ConnectionsChanged("p1")
	h.Deliver(ConnectionsChanged|TokenRevoked, "p1")
	if len(heard) != 2 || heard[0] != "p1" || heard[1] != "p1" {
		t.Fatalf("the forward heard %v, want p1 twice (the connection changes only)", heard)
	}
}

type recorder struct{ sent []string }

func (r *recorder) Publish(kind Kind, subject string) {
	r.sent = append(r.sent, string(rune('0'+kind))+subject)
}

// TestTheBusCarriesWhatHappensElsewhere: Publish delivers here and tells
// the bus; Elsewhere (a cancelled call) only tells the bus, and reaches no
// listener; an event from another node runs FromElsewhere before its
// listeners hear it, and its Forward after.
func TestTheBusCarriesWhatHappensElsewhere(t *testing.T) {
	bus := &recorder{}
	h := New(bus)
	l := h.Listen("p1")
	defer l.Close()
	h.Revoked("p1")
	h.Elsewhere(CallCancelled, "p1")
	if got := l.Take(); got != TokenRevoked {
		t.Fatalf("the listener heard %b, want the revocation only", got)
	}
	if want := []string{string(rune('0'+TokenRevoked)) + "p1", string(rune('0'+CallCancelled)) + "p1"}; !slices.Equal(bus.sent, want) {
		t.Fatalf("the bus carried %q, want the revocation and the cancel, %q", bus.sent, want)
	}
	var order []string
	h.FromElsewhere(TokenRevoked, func(string) {
		if l.Take() != 0 {
			t.Error("the listener heard the event before FromElsewhere ran")
		}
		order = append(order, "dropped")
	})
	h.Forward(CallCancelled, func(key string) { order = append(order, "cancel "+key) })
	h.Arrived(TokenRevoked, "p1")
	h.Arrived(CallCancelled, "p1")
	if l.Take() != TokenRevoked || len(order) != 2 || order[0] != "dropped" || order[1] != "cancel p1" {
		t.Fatalf("arrivals ran %q", order)
	}
	if len(bus.sent) != 2 {
		t.Fatalf("an arrival went back on the bus: %q", bus.sent)
	}
}
