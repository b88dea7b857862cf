package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// callTool runs a tools/call through the one call path (SPEC §4): the
// grant's connection → the caller (pairing actor → the tab focused last)
// → the encoded result. A host that accepts an event stream gets one: the
// person being asked reaches it as progress, keep-alives hold the wait,
// and closing it cancels the call (the tab is told).
func (s *Server) callTool(w http.ResponseWriter, r *http.Request, req *request, e era, g Grant) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.Name == "" {
		writeError(w, req.ID, rpcError(http.StatusOK, CodeInvalidParams, "tools/call needs a tool name.", nil))
		return
	}
	if _, ok := s.tool(p.Name); !ok {
		writeError(w, req.ID, rpcError(http.StatusOK, CodeInvalidParams, "Unknown tool: "+clip(p.Name), nil))
		return
	}
	if len(p.Arguments) == 0 || string(p.Arguments) == "null" {
		p.Arguments = json.RawMessage("{}")
	}
	call := ToolCall{Pairing: g.PairingID, Tool: p.Name, Arguments: p.Arguments,
		Connection: protocol.Connection{ID: g.ConnectionID, Kind: "connector", Client: g.ClientName, Host: g.Host}}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		res := s.cfg.Caller.CallTool(r.Context(), call, nil)
		writeResult(w, req.ID, s.finishCall(e, res))
		return
	}
	st := newStream(w, s.cfg.KeepAlive)
	defer st.stop()
	progress := 0
	asking := func(a bool) {
		if len(p.Meta.ProgressToken) == 0 {
			return
		}
		progress++
		msg := "The person answered in their tab."
		if a {
			msg = "The person is being asked about this call in their tab; waiting for their answer."
		}
		st.send(notification{JSONRPC: "2.0", Method: "notifications/progress",
			Params: map[string]any{"progressToken": p.Meta.ProgressToken, "progress": progress, "message": msg}})
	}
	res := s.cfg.Caller.CallTool(r.Context(), call, asking)
	st.send(response{JSONRPC: "2.0", ID: req.ID, Result: s.finishCall(e, res)})
}

func (s *Server) finishCall(e era, res protocol.ToolResult) map[string]any {
	out := map[string]any{"content": res.Content}
	if res.IsError {
		out["isError"] = true
	}
	return s.finish(e, out, false)
}

// stream is one SSE response: messages and keep-alive comments, written
// by one goroutine at a time.
type stream struct {
	mu    sync.Mutex // guards w
	w     http.ResponseWriter
	flush http.Flusher
	tick  *time.Ticker
	done  chan struct{}
}

func newStream(w http.ResponseWriter, keepAlive time.Duration) *stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not hold the stream back
	w.WriteHeader(http.StatusOK)
	flush, _ := w.(http.Flusher)
	st := &stream{w: w, flush: flush, tick: time.NewTicker(keepAlive), done: make(chan struct{})}
	st.flushNow()
	go st.keepAlive()
	return st
}

func (st *stream) keepAlive() {
	for {
		select {
		case <-st.done:
			return
		case <-st.tick.C:
			st.mu.Lock()
			fmt.Fprint(st.w, ": keep-alive\n\n")
			st.flushNow()
			st.mu.Unlock()
		}
	}
}

func (st *stream) send(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	fmt.Fprintf(st.w, "event: message\ndata: %s\n\n", data)
	st.flushNow()
}

func (st *stream) flushNow() {
	if st.flush != nil {
		st.flush.Flush()
	}
}

func (st *stream) stop() {
	st.tick.Stop()
	close(st.done)
	st.mu.Lock() // wait for a keep-alive being written
	st.mu.Unlock()
}
