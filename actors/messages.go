package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/protocol"
)

// The messages between front ends (waiters), pairing actors and tab actors.
// Each names its direction. They are plain Go values while every actor of a
// pairing lives in one process; crossing nodes needs protobuf messages
// registered on both sides (reference/protoactor.md).

// callRequest (waiter → pairing) asks the pairing to run a call. The
// request's sender is the waiter, where the call's answer goes.
type callRequest struct {
	Call protocol.Call // ID, Tool, Arguments, Connection set; the pairing sets Turn and DeadlineMs
}

// callAccepted (pairing → waiter) says the pairing holds the call now.
type callAccepted struct {
	ID   string
	Turn string
}

// cancelCall (waiter → pairing): the host went away.
type cancelCall struct{ ID string }

// callEvent (pairing → waiter): the person is being asked or answered,
// or the tab reported progress or a log line.
type callEvent struct{ Event Event }

// callDone (pairing → waiter) ends a call.
type callDone struct{ Outcome Outcome }

// callDeadline (timer → pairing): the call's wait ran out.
type callDeadline struct{ ID string }

// idleCheck (timer → pairing): passivate when still idle. Gen tells a
// check of a timer since disarmed from the current one.
type idleCheck struct {
	Since time.Time
	Gen   int
}

// tabGone (pairing → itself): a watched tab stopped. Terminated is a
// system message and overtakes the tab's last user messages (a result);
// the pairing removes the tab only after reading those.
type tabGone struct{ Tab *actor.PID }

// tabRegister (tab → pairing), as a request whose sender is the tab actor.
type tabRegister struct {
	TabID     string
	FocusedAt time.Time
}

// tabRegistered (pairing → tab) answers tabRegister.
type tabRegistered struct{ Accepted bool }

// tabFocus, tabResult, tabAsking, tabStep, tabPermissionsChanged
// (tab → pairing) carry what the tab said; the sender is the tab actor.
type tabFocus struct{ At time.Time }
type tabResult struct{ Msg protocol.Result }
type tabAsking struct {
	ID     string
	Asking bool
}
type tabStep struct{ By string }

// tabEvent (tab → pairing): progress or a log line of a call.
type tabEvent struct{ Event Event }

// toTab (pairing → tab): a message for the socket (a call or a cancel).
type toTab struct{ Msg any }

// closeTab (pairing → tab): end the socket with Code.
type closeTab struct{ Code protocol.CloseCode }

// snapshotRequest asks a pairing for its state (tests, /debug/check).
type snapshotRequest struct{}

// Snapshot is a pairing's state as seen from outside.
type Snapshot struct {
	Tabs     []string // tab ids, focused last first
	Calls    int
	Pending  int // calls waiting for a tab
	Asking   int // calls whose tab is asking the person
	Detached int
	TurnConn string
}

// permissionsRequest (front end → pairing), as a request: ask the tab
// focused last about the tools for one connection. The answer is a
// *PermissionsAnswer, sent to the request's sender.
type permissionsRequest struct {
	Connection protocol.Connection
	Tools      []string
}

// PermissionsAnswer is the tab's answer (Answered false: no tab).
type PermissionsAnswer struct {
	Answered bool
	Tools    map[string]string
}

// tabPermissions (tab → pairing) carries the tab's answer.
type tabPermissions struct{ Msg protocol.Permissions }

// pendingQuery is a permissions question on its way to a tab.
type pendingQuery struct {
	asker *actor.PID
	at    time.Time
}
