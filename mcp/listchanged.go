package mcp

import "github.com/tabrelay/tabrelay/events"

// A handshake-era host has no stream of its own to hear of changes on
// (GET / answers 405: the relay keeps no session), but while one of its
// tools/call requests is answered as an event stream, that stream is one:
// the 2025-06-18 and 2025-11-25 transports let a server send notifications
// on a request's stream before its response. So a call's stream carries
// notifications/tools/list_changed when its browser's tools or connections
// change (issue 24 item 12), the way subscriptions/listen carries them in
// the stateless era; the capability says tools.listChanged in both eras.
// The stateless era's call streams carry only the call's own progress and
// logs (its listen stream carries the rest).

// relayListChanges sends notifications/tools/list_changed on st while a
// handshake-era call runs, once per event of its browser that may change
// the tool list, until the call ends (before its answer is written). The
// call's grant watch hears the events (withdraw.go: one subscription to
// the events hub per call), not a goroutine per call: each notification
// is written from a goroutine of its own, so that a slow host's stream
// never holds up the hub's delivery, and one that comes after the answer
// is dropped by the stream.
func (w *grantWatch) relayListChanges(st *stream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changes = st
}

// relayListChange sends one notification for an event that may change
// the tool list.
func relayListChange(st *stream, kind events.Kind) {
	if kind&(events.ToolsChanged|events.ConnectionsChanged) != 0 {
		go st.send(notification{JSONRPC: "2.0", Method: "notifications/tools/list_changed"})
	}
}
