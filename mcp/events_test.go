package mcp

import "testing"

// TestEventsMergeForEachListenerAlone: a listener's pending events add up
// (none is lost), and never leak into another listener's.
func TestEventsMergeForEachListenerAlone(t *testing.T) {
	e := NewEvents(nil)
	for round := 0; round < 20; round++ { // map order varies: each order is met
		first, stopFirst := e.subscribe("p1")
		second, stopSecond := e.subscribe("p1")
		e.Deliver(TokenRevoked, "p1")
		<-second // the second listener read its event; the first did not
		e.Deliver(ToolsChanged, "p1")
		if got := <-first; got != TokenRevoked|ToolsChanged {
			t.Fatalf("first listener got %b, want both kinds", got)
		}
		if got := <-second; got != ToolsChanged {
			t.Fatalf("second listener got %b, want tools changed only", got)
		}
		stopFirst()
		stopSecond()
	}
}

// TestEventsForwardTheKindsAskedFor: a Forward hears the pairing of each
// event of its kinds delivered here (the tab sockets push a browser's
// connections), after the listeners, and nothing of other kinds.
func TestEventsForwardTheKindsAskedFor(t *testing.T) {
	e := NewEvents(nil)
	listener, stop := e.subscribe("p1")
	defer stop()
	var heard []string
	e.Forward(ConnectionsChanged, func(pairing string) {
		select {
		case <-listener:
		default:
			t.Error("the forward was called before the listener heard the event")
		}
		heard = append(heard, pairing)
	})
	e.Deliver(ToolsChanged, "p1")
	<-listener
	e.ConnectionsChanged("p1")
	e.Deliver(ConnectionsChanged|TokenRevoked, "p1")
	if len(heard) != 2 || heard[0] != "p1" || heard[1] != "p1" {
		t.Fatalf("the forward heard %v, want p1 twice (the connection changes only)", heard)
	}
}
