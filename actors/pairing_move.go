package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// A pairing whose node drains while it holds calls moves to another node,
// state and all, rather than holding the drain up until its calls end (a
// call may wait minutes for the person). The other node's activator starts
// an actor with the state, which takes the pairing's record; the old actor
// tells its tabs and waiters where the pairing is now and, for a while,
// forwards what still reaches it.

// handOff (node → pairing): the node drains. A pairing without calls stops
// at once: its tabs activate it again where they are. One with calls moves
// to the node whose activator adopter is; without an adopter (one node), or
// when the move fails, it stops once its calls are done.
type handOff struct {
	adopters []*actor.PID // other nodes' activators, tried in turn; none: no move
	member   string       // this node's member id, which the pairing's record names
}

// adoptWait bounds the wait for another node to start the pairing. An
// adopter answers the same ask again with the same actor, so an ask whose
// answer was lost is asked once more before the next adopter is tried.
const adoptWait = 3 * time.Second

// moveLinger is how long a moved actor forwards what still reaches it:
// messages its tabs and waiters sent before they heard of the move.
const moveLinger = 2 * time.Second

// moveOver (timer → moved pairing): stop forwarding.
type moveOver struct{}

// moveFlushed (moved pairing → itself): what was in its mailbox when the
// move was done has been forwarded.
type moveFlushed struct{}

// held is a message a moving pairing keeps until it knows whether the move
// worked: then it goes to the new actor, or is handled here after all.
type held struct {
	msg    any
	sender *actor.PID
}

// intercept takes the messages of a pairing that is moving or has moved;
// it returns false for those the pairing handles as usual.
func (p *pairing) intercept(ctx actor.Context) bool {
	if !p.moving && p.movedTo == nil {
		return false
	}
	switch ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		return false
	}
	if p.moving {
		p.held = append(p.held, held{msg: ctx.Message(), sender: ctx.Sender()})
		return true
	}
	switch ctx.Message().(type) {
	case *moveOver, *wire.Superseded:
		// (Superseded names this actor: it is not the new one's.)
		ctx.Stop(ctx.Self())
		return true
	case *moveFlushed:
		if p.movedSettles {
			ctx.Send(p.movedTo, &wire.MoveDone{})
		}
		return true
	}
	// Moved: what the tabs and waiters send goes on; its own timers and
	// watches are the new actor's business now.
	p.forward(ctx, ctx.Message(), ctx.Sender())
	return true
}

// isWire tells the relay's messages (which the new actor handles) from
// protoactor's and the actor's own.
func isWire(msg any) bool {
	m, ok := msg.(proto.Message)
	return ok && m.ProtoReflect().Descriptor().ParentFile().Package() == "tabrelay.wire.v1"
}

func (p *pairing) forward(ctx actor.Context, msg any, sender *actor.PID) {
	switch msg.(type) {
	case *wire.Superseded, *wire.MoveDone: // they name this actor, not the new one
		return
	}
	switch m := msg.(type) { // said here; the new actor may be elsewhere
	case protocol.FromTab:
		msg = fromTab(m)
	case *callRequest:
		msg = toWireCall(m.id, m.req)
	}
	if !isWire(msg) {
		return
	}
	// Whoever still talks to this actor (a waiter that found it, a tab
	// that registered meanwhile) must talk to the new one: tell it. A note
	// from an actor it does not talk to is ignored.
	switch m := msg.(type) {
	case *wire.TabRegister: // its sender is a future: the tab is named inside
		ctx.Request(actor.NewPID(m.GetTabAddress(), m.GetTabActor()), movedNote(p.movedTo))
	case wire.FromTab, wire.FromCaller:
		if sender != nil {
			ctx.Request(sender, movedNote(p.movedTo))
		}
	}
	ctx.RequestWithCustomSender(p.movedTo, msg, sender)
}

func movedNote(to *actor.PID) *wire.PairingMoved {
	return &wire.PairingMoved{Address: to.Address, Id: to.Id}
}

// move asks the adopters' nodes, in turn, to take the pairing over: each
// is asked twice when no answer comes (the answer may have been lost), and
// the next one is tried when an adopter refuses (it drains too, say).
func (p *pairing) move(ctx actor.Context, h *handOff) {
	p.moving = true
	ask := &wire.Adopt{State: p.export(), FromMember: h.member, FromAddress: ctx.Self().Address, FromId: ctx.Self().Id}
	p.askAdopter(ctx, ask, h.adopters, 0)
}

func (p *pairing) askAdopter(ctx actor.Context, ask *wire.Adopt, adopters []*actor.PID, attempt int) {
	f := ctx.RequestFuture(adopters[0], ask, adoptWait)
	ctx.ReenterAfter(f, func(res any, err error) {
		a, ok := res.(*wire.Activated)
		switch {
		case ok && a.GetError() == "":
			p.moving = false
			p.movedTo = actor.NewPID(a.GetAddress(), a.GetId())
			p.movedSettles = a.GetSettles()
			p.handOver(ctx)
			// Counted once handed over: what reaches this actor from now on
			// comes after its note to self, so the new actor has its
			// MoveDone before it.
			p.cfg.Metrics.Moves.WithLabelValues("moved").Inc()
			return
		case !ok && attempt == 0: // no answer: once more, to the same
			p.askAdopter(ctx, ask, adopters, 1)
			return
		case len(adopters) > 1:
			p.askAdopter(ctx, ask, adopters[1:], 0)
			return
		}
		why := "no answer"
		if ok {
			why = a.GetError()
		}
		p.moving = false
		p.cfg.Metrics.Moves.WithLabelValues("stayed").Inc()
		p.logger().Warn("pairing could not move; it stays until its calls end", "calls", len(p.calls), "why", why)
		p.replay(ctx)
		p.stopWhenIdle(ctx)
	})
}

// replay hands the held messages back to the pairing itself, after a move
// that failed.
func (p *pairing) replay(ctx actor.Context) {
	for _, h := range p.held {
		ctx.RequestWithCustomSender(ctx.Self(), h.msg, h.sender)
	}
	p.held = nil
}

// handOver completes a move: the tabs and waiters hear of the new actor,
// the held messages go to it, and this actor forwards for moveLinger.
func (p *pairing) handOver(ctx actor.Context) {
	// What was held goes first: it was sent before anything the tabs and
	// waiters send the new actor once they hear of it. Then the new actor
	// may act on what it adopted.
	for _, h := range p.held {
		p.forward(ctx, h.msg, h.sender)
	}
	// This runs as the answer's continuation, ahead of messages still in
	// the mailbox: they are forwarded before the note to self comes
	// round, and MoveDone after them.
	ctx.Send(ctx.Self(), &moveFlushed{})
	note := movedNote(p.movedTo)
	for _, t := range p.tabs {
		ctx.Unwatch(t.pid)
		ctx.Request(t.pid, note)
	}
	told := map[pidKey]bool{} // a switchboard holds every call of its node: one note
	for _, c := range p.calls {
		if c.waiter != nil && !told[keyOf(c.waiter)] {
			told[keyOf(c.waiter)] = true
			ctx.Request(c.waiter, note)
		}
	}
	p.unwatchWaiters(ctx)
	p.logger().Info("pairing moved with its calls", "to", p.movedTo.Address, "calls", len(p.calls), "tabs", len(p.tabs))
	p.cfg.Metrics.TabsConnected.Sub(float64(len(p.tabs)))
	p.stopTimers()
	p.held, p.tabs, p.calls = nil, nil, map[string]*call{}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	p.cfg.Clock.AfterFunc(moveLinger, func() { root.Send(self, &moveOver{}) })
}

// export is the pairing's state, for the actor that takes it over.
func (p *pairing) export() *wire.PairingState {
	// Orphans (calls whose tab closed and whose waiter was answered) stay
	// behind: nobody waits for them.
	s := &wire.PairingState{Pairing: p.id, TabsBackByUnixNano: unixNano(p.tabsBackBy)}
	for _, d := range p.detached {
		s.Detached = append(s.Detached, d.id)
	}
	if conn, t := p.lastTurn(); t != nil {
		s.TurnId, s.TurnConn, s.TurnLastUnixNano = t.id, conn, unixNano(t.last)
	}
	for conn, t := range p.turns {
		s.Turns = append(s.Turns, &wire.TurnState{Conn: conn, Id: t.id, LastUnixNano: unixNano(t.last)})
	}
	for _, t := range p.tabs {
		s.Tabs = append(s.Tabs, &wire.TabState{Address: t.pid.Address, Id: t.pid.Id, TabId: t.tabID,
			FocusedAtUnixNano: unixNano(t.focusedAt), JoinedUnixNano: unixNano(t.joined)})
	}
	for id, q := range p.queries {
		for _, a := range q.askers { // one entry per asker: a question's askers share its id
			s.Queries = append(s.Queries, &wire.QueryState{Id: id, AskerAddress: a.Address, AskerId: a.Id, AtUnixNano: unixNano(q.at)})
		}
	}
	for _, c := range p.calls {
		until := c.until
		if c.checking {
			until = p.cfg.Clock.Now() // its wait is over: the adopter reads the drain's mark itself
		}
		cs := &wire.CallState{Call: toTab(c.msg).GetCall(), Asking: c.asking, StartedUnixNano: unixNano(c.started),
			GraceUntilUnixNano: unixNano(until), Sent: c.sent}
		if c.waiter != nil {
			cs.WaiterAddress, cs.WaiterId = c.waiter.Address, c.waiter.Id
		}
		if c.tab != nil {
			cs.TabAddress, cs.TabId = c.tab.Address, c.tab.Id
		}
		s.Calls = append(s.Calls, cs)
	}
	return s
}

// settleWait bounds how long an adopted pairing waits for the old actor's
// MoveDone: the old actor sends it once the adopter's answer reaches it,
// which may take its second ask.
const settleWait = 2*adoptWait + time.Second

// settleOver (timer → adopted pairing): no MoveDone came; act anyway.
type settleOver struct{}

// adopt takes over the state of a pairing actor that moved here. It acts
// on that state (watches the tabs and waiters, runs the deadlines and
// graces, hands waiting calls to a tab) only once the old actor has
// forwarded what it held during the move: a tab's answer held there must
// come before the news that the tab closed, or the call would go to
// another tab, and before the call's deadline.
func (p *pairing) adopt(ctx actor.Context, s *wire.PairingState) {
	for _, id := range s.GetDetached() {
		p.detached = append(p.detached, detachedCall{id: id})
	}
	if s.GetTurnId() != "" {
		p.turns[s.GetTurnConn()] = &turn{id: s.GetTurnId(), last: fromUnixNano(s.GetTurnLastUnixNano())}
	}
	for _, t := range s.GetTurns() {
		p.turns[t.GetConn()] = &turn{id: t.GetId(), last: fromUnixNano(t.GetLastUnixNano())}
	}
	p.tabsBackBy = fromUnixNano(s.GetTabsBackByUnixNano())
	for _, t := range s.GetTabs() {
		p.tabs = append(p.tabs, &tabEntry{pid: actor.NewPID(t.GetAddress(), t.GetId()), tabID: t.GetTabId(),
			focusedAt: fromUnixNano(t.GetFocusedAtUnixNano()), joined: fromUnixNano(t.GetJoinedUnixNano())})
		p.noteJoined(p.tabs[len(p.tabs)-1].joined)
	}
	p.sortTabs()
	p.cfg.Metrics.TabsConnected.Add(float64(len(p.tabs)))
	for _, q := range s.GetQueries() {
		pq := p.queries[q.GetId()]
		if pq == nil {
			pq = &pendingQuery{at: fromUnixNano(q.GetAtUnixNano())}
			p.queries[q.GetId()] = pq
		}
		pq.askers = append(pq.askers, actor.NewPID(q.GetAskerAddress(), q.GetAskerId()))
	}
	for _, cs := range s.GetCalls() {
		if cs.GetWaiterId() == "" || cs.GetCall() == nil {
			continue
		}
		c := &call{msg: fromWireCall(cs.GetCall()), waiter: actor.NewPID(cs.GetWaiterAddress(), cs.GetWaiterId()),
			asking: cs.GetAsking(), started: fromUnixNano(cs.GetStartedUnixNano()), until: fromUnixNano(cs.GetGraceUntilUnixNano()),
			sent: cs.GetSent()}
		if cs.GetTabId() != "" {
			c.tab = actor.NewPID(cs.GetTabAddress(), cs.GetTabId())
		}
		p.calls[c.msg.ID] = c
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	p.settling = p.cfg.Clock.AfterFunc(settleWait, func() { root.Send(self, &settleOver{}) })
}

// settle acts on the adopted state, as it is now: what was forwarded
// meanwhile has been handled (calls answered, tabs replaced).
func (p *pairing) settle(ctx actor.Context) {
	if p.settling == nil {
		return
	}
	p.settling.Stop()
	p.settling = nil
	for _, t := range p.tabs {
		ctx.Watch(t.pid)
	}
	for _, c := range p.calls {
		if !c.due.IsZero() {
			continue // taken here after the move: on the schedule already
		}
		p.holdWaiter(ctx, c.waiter)
		p.armDeadline(ctx, c, time.UnixMilli(c.msg.DeadlineMs))
		if !c.until.IsZero() {
			p.armGrace(ctx, c, c.until)
		}
		if c.tab == nil {
			p.redeliver(ctx, c)
		}
	}
	if h := p.deferred; h != nil {
		p.deferred = nil
		p.onHandOff(ctx, h)
	}
}
