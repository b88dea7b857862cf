package mcp

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// callTool runs a tools/call through the one call path (SPEC §4): the
// grant's connection → the caller (pairing actor → the tab focused last)
// → the encoded result. A host that accepts an event stream gets one once
// there is something to stream or the call lasts (Config.JSONWait): the
// person being asked reaches it as progress, keep-alives hold the wait
// (progress of what the call waits for, to a host that sent a token), and
// closing it, or a notifications/cancelled naming the call (cancel.go),
// cancels the call (the tab is told). A result that comes first is answered
// as JSON (issue 13: most calls, to an instant tab).
func (s *Server) callTool(w http.ResponseWriter, r *http.Request, req *request, p *paramsMeta, e era, g protocol.Grant) {
	started := time.Now()
	logLevel, ok := logLevelOf(p.Meta)
	if !ok || p.Name == "" {
		writeError(w, req.ID, protocol.ErrInvalidParams.With("tools/call needs a tool name."))
		return
	}
	tool, ok := s.tool(p.Name)
	if !ok {
		writeError(w, req.ID, protocol.ErrInvalidParams.With("Unknown tool: "+protocol.Clip(p.Name, 100)))
		return
	}
	args, err := protocol.DecodeArguments(p.Arguments)
	if err != nil {
		writeError(w, req.ID, protocol.ErrInvalidParams.With(err.Error()+"."))
		return
	}
	action := actionOf(tool, args)
	if !s.guardCall(w, req, e, g, tool, action, started) || !s.checkArguments(w, req, g, tool, args, started) {
		return
	}
	call := protocol.CallRequest{Pairing: g.PairingID, Tool: p.Name, Arguments: args.JSON, Connection: g.Connection()}
	ctx, cancel, done := s.calls.start(r.Context(), g.ConnectionID, req.ID)
	defer done()
	grant := s.watchGrant(ctx, cancel, r, g.PairingID, tool.Name, action)
	// outcome is the call's answer for the host, unless its grant ended or
	// narrowed while it ran (withdraw.go).
	outcome := func(o protocol.Outcome) callResult {
		if why := grant.withdrawn(r.Context()); why != grantHolds {
			protocol.LogOutcome(s.cfg.Logger, protocol.Withdrawn, o.CallID, g.ConnectionID, p.Name, time.Since(started))
			return s.finishCall(e, s.withdrawal(why, tool.Name, action))
		}
		s.logOutcome(o, g, p.Name, started)
		return s.finishCall(e, protocol.EncodeOutcome(s.cfg.Bundle, o))
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		stop := grant.everyKeepAlive()
		o := s.cfg.Caller.Call(ctx, call, nil)
		stop()
		writeResult(w, req.ID, outcome(o))
		return
	}
	n := &notifier{tag: s.cfg.Bundle.Tag(), token: p.Meta["progressToken"], logLevel: logThreshold(e, logLevel)}
	beat := func(st *stream) bool { // each keep-alive checks the grant again, then beats
		grant.recheck()
		return n.heartbeat(st)
	}
	st := newLazyStream(w, s.cfg.KeepAlive, s.cfg.JSONWait, beat)
	n.st = st
	defer st.stop()
	if !e.modern {
		grant.relayListChanges(st)
	}
	out := outcome(s.cfg.Caller.Call(ctx, call, n.event))
	if !st.sendLast(response{JSONRPC: "2.0", ID: req.ID, Result: out}) {
		writeResult(w, req.ID, out) // the stream never opened
	}
}

// logLevelOf reads a request's _meta log level ("" when it names none);
// false when it is no string. Its string is on the heap only when there
// is one.
func logLevelOf(meta map[string]json.RawMessage) (string, bool) {
	raw, ok := meta[metaLogLevel]
	if !ok {
		return "", true
	}
	var level string
	return level, json.Unmarshal(raw, &level) == nil
}

// logOutcome tells the operator of a call that ended without the tab's
// result: the relay's own answer (no tab, a timeout, a detach, a restart,
// too many calls, the tab closed, the host cancelled).
func (s *Server) logOutcome(o protocol.Outcome, g protocol.Grant, tool string, started time.Time) {
	if o.Kind != protocol.Answered {
		protocol.LogOutcome(s.cfg.Logger, o.Kind.String(), o.CallID, g.ConnectionID, tool, time.Since(started))
	}
}

// Limits of the tab's words in a notification: a progress message and a
// log line's data are cut to these many characters (tags aside).
const (
	maxProgressChars = 1_000
	maxLogChars      = 4_000
)

// The relay's own progress messages (plain: no words of the tab's).
const (
	askingMessage       = "The person is being asked about this call in their tab; waiting for their answer."
	answeredMessage     = "The person answered in their tab."
	stillAskingMessage  = "Still waiting for the person to answer in their tab."
	stillRunningMessage = "Still running in the tab; waiting for its answer."
)

// notifier turns a call's events into the notifications the host asked
// for, on the call's own stream. What the tab wrote reaches the host as
// data between the data tags, like a result (SPEC §4); the relay's own
// sentences (the person is being asked, answered, still waiting) stay
// plain.
type notifier struct {
	st       *stream
	tag      string          // the bundle's data tag
	token    json.RawMessage // progress goes only to a host that sent a token
	logLevel int             // lowest level sent; -1: no logs
	mu       sync.Mutex      // guards the fields below
	last     float64         // progress sent so far: it never goes back
	total    float64         // the tab's last total (0: none said)
	asking   bool            // the person is being asked now
}

func (n *notifier) event(e protocol.CallEvent) {
	switch e.Kind {
	case protocol.CallLog:
		n.log(e.Level, protocol.TagNote(n.tag, e.Data, maxLogChars))
		return
	case protocol.CallAsking:
		e.Message = askingMessage
	case protocol.CallAnswered:
		e.Message = answeredMessage
	case protocol.CallProgress:
		if e.Message != "" {
			msg, _ := json.Marshal(e.Message)
			e.Message = protocol.TagNote(n.tag, msg, maxProgressChars)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if e.Kind == protocol.CallAsking || e.Kind == protocol.CallAnswered {
		n.asking = e.Kind == protocol.CallAsking
	}
	if e.Kind == protocol.CallProgress {
		n.total = e.Total // left out: unknown (again)
	}
	if len(n.token) == 0 {
		// A host that sent no progress token still hears that the person is
		// being asked, as a log line where it listens (SPEC §3).
		if e.Kind == protocol.CallAsking || e.Kind == protocol.CallAnswered {
			n.log("notice", e.Message)
		}
		return
	}
	n.st.write(n.progressLocked(e.Kind == protocol.CallProgress, e.Progress, e.Message))
}

// heartbeat is the call stream's keep-alive when the host sent a progress
// token: a progress notification that says what the call waits for, so
// that a host whose request timeout is reset by progress (the TypeScript
// SDK's resetTimeoutOnProgress) holds on while the person is asked or a
// long tool runs (issue 25). false: no token, and a keep-alive comment
// goes instead (no progress may reach such a host, and no client resets
// its timeout on a comment).
func (n *notifier) heartbeat(st *stream) bool {
	if len(n.token) == 0 {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock() // held while it is written: progress goes out in the order it grows
	msg := stillRunningMessage
	if n.asking {
		msg = stillAskingMessage
	}
	st.write(n.progressLocked(false, 0, msg))
	return true
}

// progressLocked is the next notifications/progress message; n.mu is
// held until it is written. Progress must grow with every
// notification: the tab's own figure when it is higher (fromTab), else a
// step of the relay's own — one, or half the way to the tab's total when
// it said one, so that the relay never claims the call is done.
func (n *notifier) progressLocked(fromTab bool, value float64, msg string) []byte {
	if fromTab && value > n.last {
		n.last = value
	} else {
		next := n.last + 1
		if half := n.last + (n.total-n.last)/2; half > n.last && half < next {
			next = half
		}
		n.last = next
	}
	params := map[string]any{"progressToken": n.token, "progress": n.last, "message": msg}
	if n.total > 0 && n.total >= n.last {
		params["total"] = n.total
	}
	return message(notification{JSONRPC: "2.0", Method: "notifications/progress", Params: params})
}

// log sends a notifications/message at level (a name the tab sent; an
// unknown one is sent as info) when the host listens at that level.
func (n *notifier) log(level string, data string) {
	rank := levelRank(level)
	if n.logLevel < 0 || rank < n.logLevel {
		return
	}
	n.st.send(notification{JSONRPC: "2.0", Method: "notifications/message",
		Params: map[string]any{"level": logLevels[rank], "logger": "tab", "data": data}})
}

var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelRank(l string) int {
	for i, x := range logLevels {
		if x == l {
			return i
		}
	}
	return 1 // unknown: as info
}

// logThreshold is the lowest level a call's logs are sent at: in the
// modern era only when the request asked (its logLevel _meta); in the
// handshake era always from info (a stateless server cannot remember a
// logging/setLevel).
func logThreshold(e era, requested string) int {
	if e.modern {
		if requested == "" {
			return -1
		}
		return levelRank(requested)
	}
	return levelRank("info")
}

// callResult is a tools/call's result as the host reads it, with what
// finish adds in the modern era: a struct, not a map (issue 27: the
// encoding of a map sorted its keys and boxed each value on every call).
// The fields are in the order a map's keys were encoded in.
type callResult struct {
	Meta       map[string]any     `json:"_meta,omitempty"`
	Content    []protocol.Content `json:"content"`
	IsError    bool               `json:"isError,omitempty"`
	ResultType string             `json:"resultType,omitempty"`
}

func (s *Server) finishCall(e era, res protocol.ToolResult) callResult {
	out := callResult{Content: res.Content, IsError: res.IsError}
	if e.modern {
		out.ResultType, out.Meta = resultComplete, s.resultMeta()
	}
	return out
}
