package mcp

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/protocol"
)

// Events carries what the subscriptions/listen streams of a browser must
// hear: its tools changed (a tab's permissions-changed, a new bundle), or
// one of its tokens was revoked (the streams check theirs again). A Bus,
// when there is one, carries them to the other nodes too.
type Events struct {
	bus Bus // nil on a single node

	mu       sync.Mutex // guards the fields below
	subs     map[string]map[chan EventKind]struct{}
	forwards []forward
	closing  chan struct{}
	closed   bool
}

// Bus carries events to the other nodes of a cluster.
type Bus interface {
	Publish(kind EventKind, pairing string)
}

// forward is one Forward: fn hears the events of kinds.
type forward struct {
	kinds EventKind
	fn    func(pairing string)
}

// EventKind is what happened to a browser.
type EventKind uint8

// Kinds of event, as flags: a listener's pending events add up.
const (
	ToolsChanged EventKind = 1 << iota
	TokenRevoked
	// ConnectionsChanged: a connection of the browser was approved,
	// derived, forgotten, or its scope written. What a host may list may
	// have changed with it, so listeners hear it as ToolsChanged too.
	ConnectionsChanged
)

// NewEvents returns an empty hub; bus, when not nil, carries its events
// to the other nodes.
func NewEvents(bus Bus) *Events {
	return &Events{bus: bus, subs: map[string]map[chan EventKind]struct{}{}, closing: make(chan struct{})}
}

// Forward hands fn the pairing of every event of kinds delivered on this
// node, after its listeners (the tab sockets push a browser's
// connections).
func (e *Events) Forward(kinds EventKind, fn func(pairing string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forwards = append(e.forwards, forward{kinds: kinds, fn: fn})
}

// ToolsChanged tells this node's listeners of pairing, and the Bus.
func (e *Events) ToolsChanged(pairing string) { e.Publish(ToolsChanged, pairing) }

// ConnectionsChanged tells this node's listeners of pairing, and the Bus.
func (e *Events) ConnectionsChanged(pairing string) { e.Publish(ConnectionsChanged, pairing) }

// Revoked makes the listeners of pairing check their tokens again, here
// and (through the Bus) on every node.
func (e *Events) Revoked(pairing string) { e.Publish(TokenRevoked, pairing) }

// Publish tells this node's listeners of pairing, and the Bus.
func (e *Events) Publish(kind EventKind, pairing string) {
	e.Deliver(kind, pairing)
	if e.bus != nil {
		e.bus.Publish(kind, pairing)
	}
}

// Deliver tells this node's listeners of pairing (what the Bus calls for
// an event on another node), then what Forward asked for it.
func (e *Events) Deliver(kind EventKind, pairing string) {
	for _, f := range e.deliverListeners(kind, pairing) {
		if f.kinds&kind != 0 {
			f.fn(pairing)
		}
	}
}

// deliverListeners tells the listeners of pairing, and returns the
// forwards, to be called without the lock.
func (e *Events) deliverListeners(kind EventKind, pairing string) []forward {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.subs[pairing] {
		send := kind
		for sent := false; !sent; {
			select {
			case ch <- send:
				sent = true
			case pending := <-ch: // merge with what waits for this listener: none is lost
				send |= pending
			}
		}
	}
	return e.forwards // appended to only: the caller's copy stays as it is
}

func (e *Events) subscribe(pairing string) (<-chan EventKind, func()) {
	ch := make(chan EventKind, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.subs[pairing] == nil {
		e.subs[pairing] = map[chan EventKind]struct{}{}
	}
	e.subs[pairing][ch] = struct{}{}
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.subs[pairing], ch)
		if len(e.subs[pairing]) == 0 {
			delete(e.subs, pairing)
		}
	}
}

// Close ends every listen stream gracefully (the node is draining).
func (e *Events) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.closing)
	}
}

// listen serves subscriptions/listen (2026-07-28): an acknowledgement
// first, then only what was asked, each message carrying the listen
// request's id as the subscription id, and a result at a graceful end.
func (s *Server) listen(w http.ResponseWriter, r *http.Request, req *request, e era, g protocol.Grant) {
	if !e.modern {
		s.notFound(w, req, e)
		return
	}
	var p struct {
		Notifications struct {
			ToolsListChanged bool `json:"toolsListChanged"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(req.Params, &p)
	meta := map[string]any{metaSubscription: req.ID}
	honoured := map[string]any{}
	if p.Notifications.ToolsListChanged {
		honoured["toolsListChanged"] = true
	}
	release, ok := s.streams.take(g.ConnectionID)
	if !ok {
		w.Header().Set("Retry-After", retryAfter)
		writeError(w, req.ID, protocol.ErrLimited.Withf(
			"This connection already holds %d open subscriptions/listen streams on this relay node, the most it allows; "+
				"close one before opening another.", MaxStreamsPerConnection).WithData(map[string]any{"limit": MaxStreamsPerConnection}))
		return
	}
	defer release()
	changes, cancel := s.cfg.Events.subscribe(g.PairingID)
	defer cancel()
	st := newStream(w, s.cfg.KeepAlive, nil)
	defer st.stop()
	st.send(notification{JSONRPC: "2.0", Method: "notifications/subscriptions/acknowledged",
		Params: map[string]any{"notifications": honoured, "_meta": meta}})
	recheck := time.NewTicker(s.cfg.KeepAlive)
	defer recheck.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-recheck.C:
			if !s.stillValid(r) {
				return // revoked or forgotten: the stream ends, the host's next request gets 401
			}
		case <-s.cfg.Events.closing:
			res := s.finish(e, map[string]any{}, false)
			res["_meta"].(map[string]any)[metaSubscription] = req.ID
			st.send(response{JSONRPC: "2.0", ID: req.ID, Result: res})
			return
		case kind := <-changes:
			if !s.stillValid(r) {
				return
			}
			if kind&(ToolsChanged|ConnectionsChanged) != 0 && p.Notifications.ToolsListChanged {
				st.send(notification{JSONRPC: "2.0", Method: "notifications/tools/list_changed", Params: map[string]any{"_meta": meta}})
			}
		}
	}
}

// stillValid checks a long-lived request's token again: a stream must not
// outlive its connection's Forget or its family's revocation.
func (s *Server) stillValid(r *http.Request) bool {
	token, found := httpx.Bearer(r)
	if !found {
		return false
	}
	_, err := s.cfg.Verifier.Verify(r.Context(), token)
	return err == nil
}

// MaxStreamsPerConnection bounds the subscriptions/listen streams one
// connection (every token of it) holds open on one node at once: a host
// needs one, a few while it reconnects (issue 15 item 13).
const MaxStreamsPerConnection = 8

// streamCounts counts the open listen streams of each connection.
type streamCounts struct {
	mu sync.Mutex // guards n
	n  map[string]int
}

// take holds one stream of conn, unless it holds MaxStreamsPerConnection
// already; release gives it back.
func (c *streamCounts) take(conn string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	if c.n[conn] >= MaxStreamsPerConnection {
		return nil, false
	}
	c.n[conn]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[conn]--; c.n[conn] <= 0 {
			delete(c.n, conn)
		}
	}, true
}
