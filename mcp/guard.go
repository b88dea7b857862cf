package mcp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// actionOf is the named action a call asks for: its "action" argument,
// when the tool declares actions. It reads the arguments the tab gets
// (protocol.DecodeArguments): the exact key, its last value when written
// twice, as the tab's parser reads it. Go's struct decoding would match
// "ACTION" too, and the guard and the tab must read the same field.
func actionOf(t *protocol.Tool, args protocol.Arguments) string {
	if len(t.Actions) == 0 {
		return ""
	}
	a, _ := args.String("action") // absent or not a string: only protocol.AllActions grants it
	return a
}

// guardCall is the control of SPEC §8: a call the connection's scope does
// not grant is refused here, before it reaches the pairing, with a tool
// error the model reads (action: actionOf the call's arguments). It
// answers and returns false when refused.
func (s *Server) guardCall(w http.ResponseWriter, req *request, e era, g protocol.Grant, t *protocol.Tool, action string, started time.Time) bool {
	if protocol.Allows(g.Scope, t.Name, action) {
		return true
	}
	s.cfg.Metrics.ScopeRefusals.Inc()
	protocol.LogOutcome(s.cfg.Logger, protocol.Refused, "", g.ConnectionID, t.Name, time.Since(started), "action", loggedAction(t, action))
	writeResult(w, req.ID, s.finishCall(e, protocol.ToolResult{IsError: true, Content: []protocol.Content{{Type: "text",
		Text: s.refusal(t.Name, action)}}}))
	return false
}

// loggedAction is what a log line may say of a call's action: its name
// when the tool declares it, else only that it was none of them. The
// argument itself is the host's, of any length and content, and no
// argument goes in a log line (SPEC §9).
func loggedAction(t *protocol.Tool, action string) string {
	if len(t.Actions) == 0 {
		return ""
	}
	for _, a := range t.Actions {
		if a.Name == action {
			return action
		}
	}
	if action == "" {
		return "(none named)"
	}
	return "(not one the tool declares)"
}

// refusal is the sentence a refused call answers with: which tool and
// action, where the person can widen it, and that retrying will not help.
func (s *Server) refusal(tool, action string) string {
	tag, app := s.cfg.Bundle.Tag(), s.cfg.Bundle.App.Title
	what := "The tool " + protocol.QuoteName(tag, tool)
	if action != "" {
		what = fmt.Sprintf("The action %s of the tool %s", protocol.QuoteName(tag, action), protocol.QuoteName(tag, tool))
	}
	return what + " is not among what the person allowed this connection, so nothing ran. " +
		"The person can allow it in " + app + "'s Connections panel; calling again will not help until they do."
}

// checkArguments holds a call's arguments to its tool's inputSchema
// (issue 24 item 10): arguments it refuses never reach the tab, and the
// host reads -32602 with the schema's complaint. It answers and returns
// false when refused.
func (s *Server) checkArguments(w http.ResponseWriter, req *request, g protocol.Grant, t *protocol.Tool, args protocol.Arguments, started time.Time) bool {
	err := t.CheckArguments(args)
	if err == nil {
		return true
	}
	protocol.LogOutcome(s.cfg.Logger, protocol.InvalidArguments, "", g.ConnectionID, t.Name, time.Since(started))
	writeError(w, req.ID, protocol.ErrInvalidParams.Withf("The arguments of %s do not match its inputSchema: %s.", t.Name, err))
	return false
}
