package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// Caller runs tool calls on pairings: the actor half of the one call path
// the MCP front end takes (SPEC §4).
type Caller struct {
	system *actor.ActorSystem
	router Router
	cfg    Config
}

// NewCaller returns a Caller that reaches pairings through router.
func NewCaller(system *actor.ActorSystem, router Router, cfg Config) *Caller {
	return &Caller{system: system, router: router, cfg: cfg.withDefaults()}
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
// must not block. A cancelled ctx cancels the call (the tab is told) and
// returns ctx's error.
func (c *Caller) Call(ctx context.Context, req protocol.CallRequest, events func(protocol.CallEvent)) (protocol.Outcome, error) {
	id := NewID("call-")
	var stale *actor.PID
	for attempt := 0; ; attempt++ {
		pid, err := c.router.Pairing(ctx, req.Pairing, stale)
		if err != nil {
			return protocol.Outcome{Kind: protocol.Restarting, CallID: id}, nil
		}
		o, retry, err := c.await(ctx, pid, id, req, events)
		if !retry || attempt+1 >= activationAttempts {
			return o, err
		}
		stale = pid
	}
}

// await sends the call to pid through a waiter actor and waits. retry is
// true when the pairing was gone before it took the call.
func (c *Caller) await(ctx context.Context, pid *actor.PID, id string, req protocol.CallRequest, events func(protocol.CallEvent)) (o protocol.Outcome, retry bool, err error) {
	w := &waiter{
		every:   c.cfg.ProbeEvery,
		clock:   c.cfg.Clock,
		pairing: pid,
		req:     &wire.CallRequest{Id: id, Tool: req.Tool, Arguments: req.Arguments, Connection: toWireConnection(req.Connection)},
		out:     make(chan any, 8),
		gone:    make(chan struct{}),
	}
	defer close(w.gone)
	wpid := c.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return w }))
	safety := make(chan struct{})
	t := c.cfg.Clock.AfterFunc(c.cfg.CallWait+safetyMargin, func() { close(safety) })
	defer t.Stop()
	for {
		select {
		case m := <-w.out:
			switch m := m.(type) {
			case *wire.CallEvent:
				if events != nil {
					events(fromWireEvent(m.GetEvent()))
				}
			case *wire.CallDone:
				return outcome(m), false, nil
			case pairingGone:
				return protocol.Outcome{Kind: protocol.Restarting, CallID: id}, !m.accepted, nil
			}
		case <-ctx.Done():
			c.system.Root.Stop(wpid) // the pairing watches the waiter: it cancels the call
			return protocol.Outcome{Kind: protocol.Cancelled, CallID: id}, false, ctx.Err()
		case <-safety:
			c.system.Root.Stop(wpid)
			return protocol.Outcome{Kind: protocol.Restarting, CallID: id}, false, nil
		}
	}
}

// pairingGone tells await that the pairing stopped; accepted says whether
// it had taken the call (if not, the call can go to a new activation).
type pairingGone struct{ accepted bool }

// checkGone is the waiter's note to itself that its pairing stopped.
// Terminated is a system message and overtakes user messages already in
// the mailbox, a callAccepted among them: the waiter decides whether the
// call was taken only once those are read. who is the pairing actor that
// stopped: a note that the pairing moved, read meanwhile, makes it moot.
type checkGone struct{ who *actor.PID }

// waiter is where a call's answer goes: a short-lived actor on the front
// end's node that watches the pairing, so that a pairing that dies with the
// call in flight is noticed at once.
type waiter struct {
	every    time.Duration // how often to probe the pairing
	clock    clock.Clock
	probe    clock.Timer
	pairing  *actor.PID
	req      *wire.CallRequest
	out      chan any
	gone     chan struct{} // closed when nobody reads out any more
	accepted bool          // the pairing took the call
	missed   bool          // a probe found the call not (yet) there
}

func (w *waiter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Watch(w.pairing)
		ctx.Request(w.pairing, w.req)
		w.armProbe(ctx)
	case *actor.Stopping:
		w.stopProbe()
		ctx.Unwatch(w.pairing) // stopped from outside (cancelled): the pairing need not keep the watch
	case *probeTick:
		ctx.Request(w.pairing, &wire.CallProbe{Id: w.req.GetId()})
		w.armProbe(ctx)
	case *wire.CallProbeReply:
		if !m.GetHeld() {
			if !w.accepted && !w.missed {
				// A call its moved pairing forwards may not be there yet:
				// a call not accepted is given one more probe.
				w.missed = true
				return
			}
			// The pairing does not hold this call: its end, or the
			// request itself, was lost on the way.
			w.finish(ctx, pairingGone{accepted: w.accepted})
		}
	case *wire.CallAccepted:
		w.accepted = true
	case *wire.PairingMoved:
		// The pairing moved to another node with the call (its node
		// drains): watch and probe the actor that holds it now.
		if sender := ctx.Sender(); sender != nil && sender.Equal(w.pairing) {
			ctx.Unwatch(w.pairing)
			w.pairing = actor.NewPID(m.GetAddress(), m.GetId())
			ctx.Watch(w.pairing)
		}
	case *wire.CallEvent:
		w.put(m)
	case *wire.CallDone:
		ctx.Unwatch(w.pairing) // or the pairing keeps a watcher per call it ever ran
		w.finish(ctx, m)
	case *actor.DeadLetterResponse:
		// The call request, or a later probe, reached no pairing: a call it
		// had accepted is not sent anew.
		w.finish(ctx, pairingGone{accepted: w.accepted})
	case *actor.Terminated:
		if m.Who.Equal(w.pairing) {
			ctx.Send(ctx.Self(), &checkGone{who: m.Who})
		}
	case *checkGone:
		if m.who.Equal(w.pairing) {
			w.finish(ctx, pairingGone{accepted: w.accepted})
		}
	}
}

// probeTick is the waiter's note to itself to probe its pairing.
type probeTick struct{}

func (w *waiter) armProbe(ctx actor.Context) {
	self, root := ctx.Self(), ctx.ActorSystem().Root
	w.probe = w.clock.AfterFunc(w.every, func() { root.Send(self, &probeTick{}) })
}

// finish hands the caller its last message m and stops the waiter. The
// probe timer stops first, so that nothing of the call is left pending by
// the time the caller has its answer.
func (w *waiter) finish(ctx actor.Context, m any) {
	w.stopProbe()
	w.put(m)
	ctx.Stop(ctx.Self())
}

func (w *waiter) stopProbe() {
	if w.probe != nil {
		w.probe.Stop()
	}
}

func (w *waiter) put(m any) {
	select {
	case w.out <- m:
	case <-w.gone:
	}
}

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
// settings make of tools for conn, waiting at most wait. ok is false when
// no tab answered in time.
func (c *Caller) Permissions(ctx context.Context, pairing string, conn protocol.Connection, tools []string, wait time.Duration) (map[string]string, bool) {
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
