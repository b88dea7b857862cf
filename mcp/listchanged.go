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
// handshake-era call of pairing runs, once per event that may change the
// tool list; stop ends it (before the call's answer is written). It is a
// function of the events hub, not a goroutine per call: each notification
// is written from a goroutine of its own, so that a slow host's stream
// never holds up the hub's delivery, and one that comes after the answer
// is dropped by the stream.
func (s *Server) relayListChanges(st *stream, pairing string) (stop func()) {
	return s.cfg.Events.Subscribe(pairing, func(kind events.Kind) {
		if kind&(events.ToolsChanged|events.ConnectionsChanged) != 0 {
			go st.send(notification{JSONRPC: "2.0", Method: "notifications/tools/list_changed"})
		}
	})
}
