package actors

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// Caller runs tool calls on pairings: the one call path from the MCP front
// end (mcp.Caller) to the tab and back (SPEC §4), with the node's rule for
// the calls in flight while it drains (Refuse, StopCalls).
type Caller struct {
	system *actor.ActorSystem
	router Router
	cfg    Config
	sb     *switchboard

	inflight atomic.Int64  // calls running in Call
	refusing atomic.Bool   // Refuse ran: no call starts
	stopOnce sync.Once     // closes stop
	stop     chan struct{} // closed by StopCalls: the calls in flight end
}

// NewCaller returns a Caller that reaches pairings through router.
func NewCaller(system *actor.ActorSystem, router Router, cfg Config) *Caller {
	cfg = cfg.withDefaults()
	return &Caller{system: system, router: router, cfg: cfg, sb: switchboardOf(system, cfg), stop: make(chan struct{})}
}

// activationAttempts bounds how often a call looks its pairing up again
// when the actor it found was stopping (passivation races a call).
const activationAttempts = 3

// safetyMargin is how long past the call wait a caller waits for its
// pairing before it answers with the restarting sentence itself: the
// pairing ends every call at its deadline, so this only fires when the
// pairing cannot (SPEC §3: never left hanging).
const safetyMargin = 30 * time.Second

// Call runs req on its pairing's tab and waits for its end: the tab's
// result, or the relay's own outcome (no tab, detach, timeout, restarting,
// too many calls). events, when not nil, hears the person being asked; it
// must not block. A cancelled ctx cancels the call (the tab is told): it
// ends as Cancelled. After Refuse no call starts (restarting, before
// anything ran); after StopCalls the calls in flight end as restarting.
func (c *Caller) Call(ctx context.Context, req protocol.CallRequest, events func(protocol.CallEvent)) protocol.Outcome {
	c.inflight.Add(1) // before the check: a drain counts this call, or this call sees the drain
	defer c.inflight.Add(-1)
	if c.refusing.Load() {
		return protocol.Outcome{Kind: protocol.Restarting}
	}
	id := NewID("call-")
	var stale *actor.PID
	for attempt := 0; ; attempt++ {
		pid, err := c.router.Pairing(ctx, req.Pairing, stale)
		if err != nil {
			return protocol.Outcome{Kind: protocol.Restarting, CallID: id}
		}
		o, retry := c.await(ctx, pid, id, req, events)
		if !retry || attempt+1 >= activationAttempts {
			return o
		}
		stale = pid
	}
}

// Refuse makes every call that enters end at once with the restarting
// sentence (a single node drains: nothing can take it). In a cluster a
// draining node's front end goes on calling: pairings live on other
// nodes, or hand off from this one.
func (c *Caller) Refuse() { c.refusing.Store(true) }

// StopCalls ends the calls in flight with the restarting sentence (the
// drain's time for them is over); their tabs are told.
func (c *Caller) StopCalls() { c.stopOnce.Do(func() { close(c.stop) }) }

// InFlight is how many calls run in Call.
func (c *Caller) InFlight() int64 { return c.inflight.Load() }

// await sends the call to pid and waits on the switchboard for its end.
// retry is true when the pairing was gone before it took the call.
func (c *Caller) await(ctx context.Context, pid *actor.PID, id string, req protocol.CallRequest, events func(protocol.CallEvent)) (o protocol.Outcome, retry bool) {
	var local *callRequest // to a pairing in this process, as it is
	var msg any
	if pid.Address == c.system.Address() {
		local = &callRequest{id: id, req: req}
		msg = local
	} else {
		msg = toWireCall(id, req)
	}
	w := c.sb.start(pid, id, msg, events != nil)
	if local != nil {
		local.hand.take() // the call's frame, when the pairing delivered it meanwhile to a tab here
	}
	for {
		select {
		case <-w.signal: // nil without events: never ready
			c.events(w, events)
		case m := <-w.end:
			c.events(w, events) // what came before the end goes first
			switch m := m.(type) {
			case *callEnded:
				return m.o, false
			case *wire.CallDone:
				return outcome(m), false
			case pairingGone:
				return protocol.Outcome{Kind: protocol.Restarting, CallID: id}, !m.accepted
			default: // safetyOver
				return protocol.Outcome{Kind: protocol.Restarting, CallID: id}, false
			}
		case <-ctx.Done():
			c.sb.cancel(w) // the pairing tells the tab
			return protocol.Outcome{Kind: protocol.Cancelled, CallID: id}, false
		case <-c.stop:
			c.sb.cancel(w)
			return protocol.Outcome{Kind: protocol.Restarting, CallID: id}, false
		}
	}
}

func (c *Caller) events(w *waiting, events func(protocol.CallEvent)) {
	if events == nil {
		return
	}
	for _, e := range c.sb.takeEvents(w) {
		events(e)
	}
}

// pairingGone ends a call whose pairing stopped; accepted says whether it
// had taken the call (if not, the call can go to a new activation).
type pairingGone struct{ accepted bool }

// Inspect returns a pairing's state (for tests and /debug/check). It
// activates the pairing when it is not active.
func (c *Caller) Inspect(ctx context.Context, pairing string) (*Snapshot, error) {
	res, err := c.ask(ctx, pairing, &wire.SnapshotRequest{}, 5*time.Second)
	if err != nil {
		return nil, err
	}
	s, ok := res.(*wire.Snapshot)
	if !ok {
		return nil, ErrUnavailable
	}
	return &Snapshot{Tabs: s.GetTabs(), Calls: int(s.GetCalls()), Pending: int(s.GetPending()), Asking: int(s.GetAsking()),
		Detached: int(s.GetDetached()), TurnConn: s.GetTurnConn()}, nil
}

// Permissions asks the browser's tab focused last what the person's
// settings make of tools for conn (mcp.Caller), waiting at most
// Config.PermissionsWait. ok is false when no tab answered in time.
func (c *Caller) Permissions(ctx context.Context, pairing string, conn protocol.Connection, tools []string) (map[string]string, bool) {
	return c.permissions(ctx, pairing, conn, tools, c.cfg.PermissionsWait)
}

func (c *Caller) permissions(ctx context.Context, pairing string, conn protocol.Connection, tools []string, wait time.Duration) (map[string]string, bool) {
	res, err := c.ask(ctx, pairing, &wire.PermissionsRequest{Connection: toWireConnection(conn), Tools: tools}, wait)
	a, isAnswer := res.(*wire.PermissionsAnswer)
	if err != nil || !isAnswer || !a.GetAnswered() {
		return nil, false
	}
	return a.GetTools(), true
}

// ask sends one request to the pairing's actor and waits for the answer.
// An actor found gone (a dead letter: it passivated, or its node went) is
// looked up again once, past it.
func (c *Caller) ask(ctx context.Context, pairing string, msg any, wait time.Duration) (any, error) {
	var stale *actor.PID
	for attempt := 0; ; attempt++ {
		pid, err := c.router.Pairing(ctx, pairing, stale)
		if err != nil {
			return nil, err
		}
		res, err := c.system.Root.RequestFuture(pid, msg, wait).Result()
		if _, gone := res.(*actor.DeadLetterResponse); !gone || attempt > 0 {
			return res, err
		}
		stale = pid
	}
}
