package protocol

import (
	"encoding/json"
	"log/slog"
	"time"
)

// A tool call as the front ends and the actors share it (SPEC §3, §4): the
// request, what happens to it meanwhile, and how it ends, which the
// pairing actor decides and the MCP front end encodes for the host (the
// tab's result, or one of the relay's own sentences).

// CallRequest is one tool call for one pairing.
type CallRequest struct {
	Pairing    string
	Tool       string
	Arguments  json.RawMessage
	Connection Connection
}

// CallEvent is something that happened to a call before its end.
type CallEvent struct {
	CallID string
	Kind   CallEventKind

	Progress, Total float64         // CallProgress
	Message         string          // CallProgress
	Level           string          // CallLog
	Data            json.RawMessage // CallLog
}

// CallEventKind says what a CallEvent reports.
type CallEventKind int

// Kinds of CallEvent.
const (
	CallAsking   CallEventKind = iota // the person is being asked about the call in their tab
	CallAnswered                      // the person answered
	CallProgress                      // the tab's progress
	CallLog                           // a log line of the tab's
)

// OutcomeKind says how a call ended. Its values cross nodes as the numbers
// of wire.OutcomeKind.
type OutcomeKind int

// How a call can end.
const (
	Answered     OutcomeKind = iota // the tab answered: Outcome.Result holds it
	NoTab                           // no tab connected (and none lately): answered at once
	Detached                        // the wait ran out while the person was asked
	TimedOut                        // the wait ran out
	Restarting                      // the pairing went away with the call in flight
	TooManyCalls                    // over the pairing's limit of calls in flight
	Cancelled                       // the host went away
	TabClosed                       // the call's tab closed mid-call and none came back within the tab grace
)

var outcomeNames = [...]string{"answered", "no_tab", "detached", "timeout", "restarting", "too_many_calls", "cancelled", "tab_closed"}

func (k OutcomeKind) String() string { return outcomeNames[k] }

// Outcome is how one call ended.
type Outcome struct {
	Kind   OutcomeKind
	CallID string
	Turn   string
	Result TabResult     // when Kind is Answered
	Limit  int           // when Kind is TooManyCalls
	Wait   time.Duration // when Kind is TimedOut
}

// Sentence is the relay's own sentence for an outcome without the tab's
// result ("" when Answered). answersAt is the bundle's AnswersAt: where an
// agent can see what a call did (empty: it is told to ask the person).
func (o Outcome) Sentence(appTitle, answersAt string) string {
	switch o.Kind {
	case NoTab:
		return NoTabSentence(appTitle)
	case Detached:
		return DetachSentence(answersAt)
	case TimedOut:
		return TimeoutSentence(o.Wait, answersAt)
	case Restarting:
		return RestartingSentence(answersAt)
	case TooManyCalls:
		return TooManyCallsSentence(o.Limit)
	case Cancelled:
		return CancelledSentence()
	case TabClosed:
		return TabClosedSentence(appTitle, answersAt)
	}
	return ""
}

// EncodeOutcome is the result a host reads of a call that ended with o
// (SPEC §4): the tab's result between the bundle's data tags, or the
// relay's sentence, an error unless the call detached (a detach is news
// to read, not a failure).
func EncodeOutcome(b *Bundle, o Outcome) ToolResult {
	if o.Kind == Answered {
		return EncodeResult(b.Tag(), o.Result)
	}
	return ToolResult{Content: []Content{{Type: "text", Text: o.Sentence(b.App.Title, b.AnswersAt)}}, IsError: o.Kind != Detached}
}

// LateAnswer names, in the operator's log, the answer a tab sent for a
// call the relay had stopped waiting for (detached, or its tab closed);
// Refused a call the connection's scope did not allow; Withdrawn a call
// whose connection the person forgot or narrowed while it ran (the host
// reads that, whatever the tab answered); InvalidArguments a call whose
// arguments the tool's inputSchema refuses. All are outcomes of a call the
// operator sees beside the OutcomeKinds.
const (
	LateAnswer       = "late_answer"
	Refused          = "refused"
	Withdrawn        = "withdrawn"
	InvalidArguments = "invalid_arguments" // refused before the tab: they do not match the tool's inputSchema
)

// LogOutcome writes the operator's line of a call that did not end with
// the tab's plain result (issue 25 item 5): how it ended, the call, its
// connection and tool, and how long it lasted — never its arguments or
// result (SPEC §9). extra: more attributes of the caller's.
func LogOutcome(l *slog.Logger, outcome, callID, connection, tool string, lasted time.Duration, extra ...any) {
	l.Info("call outcome", append([]any{"outcome", outcome, "call", callID, "connection", connection, "tool", tool,
		"duration", lasted.Round(time.Millisecond).String()}, extra...)...)
}
