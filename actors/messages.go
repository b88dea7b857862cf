package actors

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// The messages between front ends (switchboards), pairing actors and tabs
// are the protobuf types of package wire: any of them may cross nodes, and
// protoactor's remote carries protobuf only. The ones below never leave the
// process that made them (timers and an actor's notes to itself).

// idleCheck (timer → pairing): passivate when still idle. Gen tells a
// check of a timer since disarmed from the current one.
type idleCheck struct {
	Since time.Time
	Gen   int
}

// tabGone (pairing → itself): a watched tab stopped. Terminated is a
// system message and overtakes the tab's last user messages (a result);
// the pairing removes the tab only after reading those. LinkLost: protoactor
// said so because the link to the tab's node was lost (AddressTerminated),
// and the tab may well live.
type tabGone struct {
	Tab      *actor.PID
	LinkLost bool
}

// askLost (timer → pairing): ask a tab that a lost link took away whether
// it lives.
type askLost struct{ Tab *actor.PID }

// Snapshot is a pairing's state as seen from outside.
type Snapshot struct {
	Tabs     []string // tab ids, focused last first
	Calls    int
	Pending  int // calls waiting for a tab
	Asking   int // calls whose tab is asking the person
	Detached int
	TurnConn string
}

func toWireConnection(c protocol.Connection) *wire.Connection {
	return &wire.Connection{Id: c.ID, Kind: c.Kind, Client: c.Client, Host: c.Host}
}

func fromWireConnection(c *wire.Connection) protocol.Connection {
	return protocol.Connection{ID: c.GetId(), Kind: c.GetKind(), Client: c.GetClient(), Host: c.GetHost()}
}

// toWireEvent and fromWireEvent carry a call's events across nodes: the
// wire has one asking kind, whose flag says whether the person is still
// being asked.
func toWireEvent(e protocol.CallEvent) *wire.Event {
	w := &wire.Event{CallId: e.CallID, Progress: e.Progress, Total: e.Total, Message: e.Message, Level: e.Level, Data: e.Data}
	switch e.Kind {
	case protocol.CallAsking, protocol.CallAnswered:
		w.Kind, w.Asking = wire.EventKind_EVENT_ASKING, e.Kind == protocol.CallAsking
	case protocol.CallProgress:
		w.Kind = wire.EventKind_EVENT_PROGRESS
	case protocol.CallLog:
		w.Kind = wire.EventKind_EVENT_LOG
	}
	return w
}

func fromWireEvent(e *wire.Event) protocol.CallEvent {
	c := protocol.CallEvent{CallID: e.GetCallId(), Progress: e.GetProgress(), Total: e.GetTotal(), Message: e.GetMessage(),
		Level: e.GetLevel(), Data: e.GetData()}
	switch e.GetKind() {
	case wire.EventKind_EVENT_ASKING:
		c.Kind = protocol.CallAnswered
		if e.GetAsking() {
			c.Kind = protocol.CallAsking
		}
	case wire.EventKind_EVENT_PROGRESS:
		c.Kind = protocol.CallProgress
	case wire.EventKind_EVENT_LOG:
		c.Kind = protocol.CallLog
	}
	return c
}

// callRequest asks a pairing in the caller's process to run a call, as
// the front end made it (never crosses nodes: a pairing elsewhere gets a
// wire.CallRequest, toWireCall).
type callRequest struct {
	id   string
	req  protocol.CallRequest
	hand handover // the caller's offer to write the call's frame itself
}

// handover lets the goroutine of a call's caller write the call's frame
// to its tab, instead of waking a writer of its own: a pairing's handling
// runs in its sender's goroutine (pairingMailbox), so when the caller
// found the pairing idle, the pairing delivered the call before the
// caller's send returned, and the caller, which only waits from then on,
// writes. Whichever side comes second does the writing: the caller
// (take) when the socket's writer was handed over (give) before, or the
// socket in a goroutine of its own when the caller had gone on waiting
// (the pairing was busy, and handled the call later in another goroutine).
//
// The pairing sends the handover itself to a tab in this process, with
// the call it delivers (call).
type handover struct {
	state atomic.Int32      // handOpen, then handGiven or handLeft
	start func(inline bool) // the socket's writer, set before handGiven
	call  protocol.Call     // set by the pairing as it delivers it
}

const (
	handOpen = iota
	handGiven
	handLeft
)

// give hands the caller the socket writer's start, or starts it in a
// goroutine of its own when the caller has gone on waiting.
func (h *handover) give(start func(inline bool)) {
	h.start = start
	if !h.state.CompareAndSwap(handOpen, handGiven) {
		start(false)
	}
}

// take runs the writer handed over, in the caller's goroutine; after it
// nothing more is taken (a later give starts its own).
func (h *handover) take() {
	if !h.state.CompareAndSwap(handOpen, handLeft) {
		h.start(true)
	}
}

// toWireCall is the call id of req as it crosses nodes.
func toWireCall(id string, req protocol.CallRequest) *wire.CallRequest {
	return &wire.CallRequest{Id: id, Tool: req.Tool, Arguments: req.Arguments, Connection: toWireConnection(req.Connection)}
}

// callEvent is an event of a call whose pairing is in its caller's
// process, as it is (never crosses nodes: a waiter elsewhere gets a
// CallEvent).
type callEvent struct{ e protocol.CallEvent }

// callEnded ends a call whose pairing is in its caller's process: the
// outcome as it is, the tab's result as its socket decoded it (never
// crosses nodes: a waiter elsewhere gets a CallDone).
type callEnded struct{ o protocol.Outcome }

// done is the message that ends a call with o; result is the tab's result
// as JSON when o is Answered.
func done(o protocol.Outcome, result []byte) *wire.CallDone {
	return &wire.CallDone{Kind: wire.OutcomeKind(o.Kind), CallId: o.CallID, Turn: o.Turn, Result: result,
		Limit: int32(o.Limit), WaitMs: o.Wait.Milliseconds()}
}

// outcome reads a CallDone; a result that does not parse (which the relay
// never sends) ends the call as restarting rather than as an empty answer.
func outcome(m *wire.CallDone) protocol.Outcome {
	o := protocol.Outcome{Kind: protocol.OutcomeKind(m.GetKind()), CallID: m.GetCallId(), Turn: m.GetTurn(), Limit: int(m.GetLimit()),
		Wait: time.Duration(m.GetWaitMs()) * time.Millisecond}
	if o.Kind == protocol.Answered && json.Unmarshal(m.GetResult(), &o.Result) != nil {
		o.Kind = protocol.Restarting
	}
	return o
}

// sendTab sends msg to the tab tab: as it is to a tab in this process
// (its socket encodes it), wrapped for the wire to one on another node.
func sendTab(ctx actor.Context, tab *actor.PID, msg protocol.ToTab) {
	if tab.Address == ctx.Self().Address {
		ctx.Send(tab, msg)
		return
	}
	ctx.Send(tab, toTab(msg))
}

// toTab wraps a message for the socket: a call for the tab actor to
// encode, anything else as its JSON.
func toTab(msg protocol.ToTab) *wire.ToTab {
	if c, ok := msg.(protocol.Call); ok {
		return &wire.ToTab{Call: &wire.Call{Id: c.ID, Tool: c.Tool, Arguments: c.Arguments, Connection: toWireConnection(c.Connection),
			Turn: c.Turn, DeadlineMs: c.DeadlineMs, Redelivery: int32(c.Redelivery)}}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err) // the relay's own wire types always marshal
	}
	return &wire.ToTab{Json: b}
}

// fromTab wraps what a tab said for its pairing: the messages the wire
// has a message of its own for (their bytes are what other builds send and
// read) in it, every other one as its JSON in a TabMessage.
func fromTab(msg protocol.FromTab) wire.FromTab {
	switch m := msg.(type) {
	case protocol.Result:
		return &wire.TabResult{Id: m.ID, Result: m.Result}
	case protocol.Asking:
		return &wire.TabAsking{Id: m.ID, Asking: m.Type == protocol.TypeAsking}
	case protocol.Progress, protocol.Log:
		e, _ := callEventOf(m)
		return &wire.TabEvent{Event: toWireEvent(e)}
	case protocol.Permissions:
		return &wire.TabPermissions{Id: m.ID, Tools: m.Tools}
	case protocol.Step:
		return &wire.TabStep{By: m.By}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err) // the relay's own wire types always marshal
	}
	return &wire.TabMessage{Json: b}
}

// callEventOf is the call's event a tab's progress or log line is.
func callEventOf(msg protocol.FromTab) (protocol.CallEvent, bool) {
	switch m := msg.(type) {
	case protocol.Progress:
		return protocol.CallEvent{CallID: m.ID, Kind: protocol.CallProgress, Progress: m.Progress, Total: m.Total, Message: m.Message}, true
	case protocol.Log:
		return protocol.CallEvent{CallID: m.ID, Kind: protocol.CallLog, Level: m.Level, Data: m.Data}, true
	}
	return protocol.CallEvent{}, false
}

// fromWireCall is the call a ToTab carries, as the socket sends it.
func fromWireCall(c *wire.Call) protocol.Call {
	return protocol.Call{Envelope: protocol.Typed(protocol.TypeCall), ID: c.GetId(), Tool: c.GetTool(), Arguments: c.GetArguments(),
		Connection: fromWireConnection(c.GetConnection()), Turn: c.GetTurn(), DeadlineMs: c.GetDeadlineMs(), Redelivery: int(c.GetRedelivery())}
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
