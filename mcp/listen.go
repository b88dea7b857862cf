package mcp

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/events"
	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/protocol"
)

// listen serves subscriptions/listen (2026-07-28): an acknowledgement
// first, then only what was asked, each message carrying the listen
// request's id as the subscription id, and a result at a graceful end.
func (s *Server) listen(w http.ResponseWriter, r *http.Request, req *request, e era, g protocol.Grant) {
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
	changes := s.cfg.Events.Listen(g.PairingID)
	defer changes.Close()
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
		case <-s.cfg.Events.Closing():
			res := s.finish(e, map[string]any{}, false)
			res["_meta"].(map[string]any)[metaSubscription] = req.ID
			st.send(response{JSONRPC: "2.0", ID: req.ID, Result: res})
			return
		case <-changes.C():
			kind := changes.Take()
			if kind == 0 {
				continue // read with the signal before this one
			}
			if !s.stillValid(r) {
				return
			}
			if kind&(events.ToolsChanged|events.ConnectionsChanged) != 0 && p.Notifications.ToolsListChanged {
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
