package mcp

import "testing"

// TestEventsMergeForEachListenerAlone: a listener's pending events add up
// (none is lost), and never leak into another listener's.
func TestEventsMergeForEachListenerAlone(t *testing.T) {
	e := NewEvents()
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
