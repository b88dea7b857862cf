package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/protocol"
)

// A host cancels a tools/call it no longer waits for with
// notifications/cancelled naming the call's request id (MCP
// "Cancellation"), or by closing the call's HTTP request. Either way the
// call's context ends: the pairing tells the tab (cancel, reason
// "cancelled"), whose handler's signal fires and whose question to the
// person, if any, is withdrawn. The relay keeps no sessions, so a call is
// found by its connection and request id; the notification may reach
// another node than the call's, which the events' bus tells
// (events.CallCancelled).

// maxCancelKey bounds the request id a notification may name: longer is
// no id of a call in flight (validID bounds nothing by itself).
const maxCancelKey = 256

// calls are the tools/calls running on this node, by cancelKey. Request
// ids are unique within a host's session, not within a connection: two
// sessions of one connection (two chats of one host) may run calls of the
// same id at once. A cancel naming such an id is ambiguous, and ignored
// (the protocol lets a receiver ignore a cancellation): it must never end
// the other session's call.
type calls struct {
	mu      sync.Mutex
	running map[string][]*runningCall
}

// runningCall is one call's cancel.
type runningCall struct{ cancel context.CancelFunc }

// cancelKey names a call: its connection and its request id, as the
// decoder kept it (a string or a number: no space in it to compact).
func cancelKey(connection string, id json.RawMessage) (string, bool) {
	if !validID(id) || len(id)+len(connection)+1 > maxCancelKey {
		return "", false
	}
	return connection + " " + string(id), true
}

// start registers a call of connection with request id; the returned
// context ends when the host cancels it or cancel is called (the call's
// grant watch ends it too: one context per call), and done must be called
// when it ends.
func (c *calls) start(ctx context.Context, connection string, id json.RawMessage) (_ context.Context, cancel context.CancelFunc, done func()) {
	key, ok := cancelKey(connection, id)
	ctx, cancel = context.WithCancel(ctx)
	if !ok {
		return ctx, cancel, cancel
	}
	rc := &runningCall{cancel: cancel}
	c.mu.Lock()
	if c.running == nil {
		c.running = map[string][]*runningCall{}
	}
	c.running[key] = append(c.running[key], rc)
	c.mu.Unlock()
	return ctx, cancel, func() {
		c.mu.Lock()
		rest := slices.DeleteFunc(c.running[key], func(o *runningCall) bool { return o == rc })
		if len(rest) == 0 {
			delete(c.running, key)
		} else {
			c.running[key] = rest
		}
		c.mu.Unlock()
		cancel()
	}
}

// CancelLocal cancels the call named key if it runs on this node, and
// says whether one does (two of that name: neither is cancelled). The
// cluster's hint of another node's notifications/cancelled ends here.
func (s *Server) CancelLocal(key string) bool {
	s.calls.mu.Lock()
	running := s.calls.running[key]
	s.calls.mu.Unlock()
	if len(running) == 1 {
		running[0].cancel()
	}
	return len(running) > 0
}

// cancelled handles a host's notifications/cancelled: the call it names,
// of the same connection, ends here or, through the events' bus, on the
// node where it runs. A notification naming no call of ours is ignored,
// as the protocol asks.
func (s *Server) cancelled(g protocol.Grant, params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	key, ok := cancelKey(g.ConnectionID, p.RequestID)
	if !ok || s.CancelLocal(key) {
		return
	}
	s.cfg.Events.Elsewhere(events.CallCancelled, key)
}

// count is how many calls run here.
func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, rs := range c.running {
		n += len(rs)
	}
	return n
}
