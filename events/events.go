// Package events is what happens to a browser, and who hears it: its tools
// changed (a tab's permissions-changed, a new bundle), a connection of it
// changed, a token of it was revoked; and, on a cluster, a host's
// cancellation of a call that runs on another node. A node's Hub hands
// each event to the listeners of that browser on this node (the
// subscriptions/listen streams, the calls in flight), then to what asked
// for its kind (the tab sockets push a browser's connections); a Bus, when
// there is one, carries it to the other nodes, whose hubs do the same.
//
// The producers (oauth, the tab sockets) are handed the Hub's methods as
// plain functions; the package imports nothing of the relay's.
package events

import "sync"

// Kind is what happened, as a flag: a listener's pending events add up.
// Its values cross nodes (the Bus carries them as numbers).
type Kind uint8

// Kinds of event. The first three happen to a browser (the subject is its
// pairing id); CallCancelled names a call (the subject is its key).
const (
	ToolsChanged Kind = 1 << iota
	TokenRevoked
	// ConnectionsChanged: a connection of the browser was approved,
	// derived, forgotten, or its scope written. What a host may list may
	// have changed with it, so listeners hear it as ToolsChanged too.
	ConnectionsChanged

	// CallCancelled: a host cancelled a call that does not run on the
	// node it told (its subject is the call's key, mcp's cancel key). It
	// only goes to the other nodes (Elsewhere), never to a listener.
	CallCancelled Kind = 0x80
)

// browser is the kinds that happen to a browser: its listeners hear them.
const browser = ToolsChanged | TokenRevoked | ConnectionsChanged

// Bus carries events to the other nodes of a cluster.
type Bus interface {
	Publish(kind Kind, subject string)
}

// Hub is one node's events. Its zero value is not ready: New.
type Hub struct {
	bus Bus // nil on a single node

	mu       sync.Mutex // guards the fields below
	subs     map[string]map[*subscriber]struct{}
	forwards []forward // every delivery here, after the listeners
	arrivals []forward // an event from another node, before its delivery
	closing  chan struct{}
	closed   bool
}

// subscriber is one listener of a browser: fn hears each event.
type subscriber struct{ fn func(Kind) }

// forward is one Forward (or FromElsewhere): fn hears the events of kinds.
type forward struct {
	kinds Kind
	fn    func(subject string)
}

// New returns an empty hub; bus, when not nil, carries its events to the
// other nodes.
func New(bus Bus) *Hub {
	return &Hub{bus: bus, subs: map[string]map[*subscriber]struct{}{}, closing: make(chan struct{})}
}

// ToolsChanged tells this node's listeners of pairing, and the other nodes.
func (h *Hub) ToolsChanged(pairing string) { h.Publish(ToolsChanged, pairing) }

// ConnectionsChanged tells this node's listeners of pairing, and the
// other nodes.
func (h *Hub) ConnectionsChanged(pairing string) { h.Publish(ConnectionsChanged, pairing) }

// Revoked makes the listeners of pairing check their tokens again, here
// and on every node.
func (h *Hub) Revoked(pairing string) { h.Publish(TokenRevoked, pairing) }

// Publish delivers an event here, and tells the other nodes.
func (h *Hub) Publish(kind Kind, subject string) {
	h.Deliver(kind, subject)
	h.Elsewhere(kind, subject)
}

// Elsewhere tells only the other nodes (none on a single node).
func (h *Hub) Elsewhere(kind Kind, subject string) {
	if h.bus != nil {
		h.bus.Publish(kind, subject)
	}
}

// Arrived is an event another node published (what the Bus hands this
// node): what FromElsewhere asked for it first, then its delivery here.
func (h *Hub) Arrived(kind Kind, subject string) {
	h.mu.Lock()
	arrivals := h.arrivals // appended to only: this copy stays as it is
	h.mu.Unlock()
	for _, f := range arrivals {
		if f.kinds&kind != 0 {
			f.fn(subject)
		}
	}
	h.Deliver(kind, subject)
}

// Deliver tells this node's listeners of subject, then what Forward asked
// for its kind. A listener's function runs in the deliverer's goroutine:
// it must not block.
func (h *Hub) Deliver(kind Kind, subject string) {
	h.mu.Lock()
	var heard []*subscriber
	if kind&browser != 0 {
		for s := range h.subs[subject] {
			heard = append(heard, s)
		}
	}
	forwards := h.forwards
	h.mu.Unlock()
	for _, s := range heard {
		s.fn(kind)
	}
	for _, f := range forwards {
		if f.kinds&kind != 0 {
			f.fn(subject)
		}
	}
}

// Forward hands fn the subject of every event of kinds delivered on this
// node, after its listeners (the tab sockets push a browser's connections;
// a cancelled call is looked for here).
func (h *Hub) Forward(kinds Kind, fn func(subject string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forwards = append(h.forwards, forward{kinds: kinds, fn: fn})
}

// FromElsewhere hands fn the subject of every event of kinds that another
// node published, before this node's listeners hear it (the token checks
// this node kept of that browser are dropped first).
func (h *Hub) FromElsewhere(kinds Kind, fn func(subject string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.arrivals = append(h.arrivals, forward{kinds: kinds, fn: fn})
}

// Subscribe hands fn every event of pairing delivered on this node, in
// the deliverer's goroutine (fn must not block), until unsubscribe.
func (h *Hub) Subscribe(pairing string, fn func(Kind)) (unsubscribe func()) {
	s := &subscriber{fn: fn}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[pairing] == nil {
		h.subs[pairing] = map[*subscriber]struct{}{}
	}
	h.subs[pairing][s] = struct{}{}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[pairing], s)
		if len(h.subs[pairing]) == 0 {
			delete(h.subs, pairing)
		}
	}
}

// Close ends every listen stream gracefully (the node is draining).
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
}

// Closing is closed once Close ran.
func (h *Hub) Closing() <-chan struct{} { return h.closing }
