package actors

import (
	"log/slog"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// pairing is the actor of one browser (SPEC §3). Everything it holds can be
// rebuilt: tabs register again (each with its last focus time), and calls in
// flight are answered by their waiters with the restarting sentence when the
// actor goes away.
type pairing struct {
	id  string
	cfg Config

	tabs  []*tabEntry         // focused last first
	lost  map[pidKey]*lostTab // tabs a lost link took away, asked whether they live
	calls map[string]*call    // calls in flight, by id
	// orphans are calls whose tab closed mid-call and whose waiter was
	// answered so after the tab grace: kept, until their deadline, for a
	// tab that comes back (same id: it runs each at most once); their
	// answer is late. Not moved with the pairing.
	orphans  map[string]*call
	queries  map[string]*pendingQuery // permissions questions waiting for the tab, by id (pairing_perms.go)
	answers  map[string]answered      // the tab's answers kept, by question
	detached []detachedCall           // detached calls, oldest first (bounded)
	turns    map[string]*turn         // each connection's turn, by connection id (SPEC §1)
	waiters  map[pidKey]*heldWaiter   // waiters on other nodes, watched (pairing_schedule.go)
	sched    clock.Timer              // the calls' schedule (pairing_schedule.go)
	schedAt  time.Time                // when sched fires
	schedGen int                      // counts schedules armed; a tick of an older one is stale
	idle     clock.Timer
	idleGen  int                                              // counts idle timers armed; a check of an older one is stale
	released func(id string, self *actor.PID, handedOff bool) // told when the actor stops
	// handingOff: the node drains; the actor stops once no call is in
	// flight (its tabs then register where they are now).
	handingOff bool
	// tabsBackBy: the last tab went away; until then, a call waits for a
	// tab to come back rather than being told that none is open.
	tabsBackBy time.Time
	// tabJoined: when a tab last registered (a drain's mark from before
	// is spent); readingMark: the store is being asked for the drain's
	// mark (pairing_drained.go).
	tabJoined   time.Time
	readingMark bool

	// A move to another node (pairing_move.go). Adopting: adopted is the
	// state this actor starts from; settling runs until the old actor's
	// MoveDone, and only then does the actor act on that state; deferred
	// is a hand-off that came meanwhile. Moving away: moving, the move
	// is under way (messages are held); movedTo, the actor that holds the
	// pairing now.
	adopted      *wire.PairingState
	settling     clock.Timer
	deferred     *handOff
	moving       bool
	held         []held
	movedTo      *actor.PID
	movedSettles bool // movedTo waits for a MoveDone
}

// detachedCall is a call answered with the detach sentence: its late
// answer is counted, and logged with what it was. One that moved here
// with the pairing knows only its id.
type detachedCall struct {
	id, connection, tool string
	started              time.Time
}

type tabEntry struct {
	pid       *actor.PID
	tabID     string
	focusedAt time.Time
	joined    time.Time
}

type call struct {
	msg     protocol.Call
	waiter  *actor.PID
	tab     *actor.PID // nil while waiting for a tab
	asking  bool
	started time.Time
	sent    bool      // delivered to a tab at least once
	due     time.Time // its deadline on the schedule (zero: adopted, not settled yet)
	until   time.Time // while it waits for a tab that went away lately, until then (zero: it does not)
	// checking: its wait for a tab is over, or it found none, and it
	// waits for the store's answer whether a drain's mark keeps it
	// waiting (pairing_drained.go).
	checking bool
}

// turn is what a connection's calls share (SPEC §1, seed 000): it lasts
// until somebody else makes a step in the tab, or until the connection has
// been idle for TurnIdle since its last call ended.
type turn struct {
	id   string
	last time.Time // the last call of the turn started or ended
}

// newPairing makes the actor of pairing id. rebuilt says it replaces an
// actor that went away (its node drained or died): its tabs are on their
// way back, and calls wait TabGrace for them.
func newPairing(id string, cfg Config, rebuilt bool, adopted *wire.PairingState, released func(string, *actor.PID, bool)) actor.Producer {
	return func() actor.Actor {
		p := &pairing{id: id, cfg: cfg, calls: map[string]*call{}, orphans: map[string]*call{},
			queries: map[string]*pendingQuery{}, answers: map[string]answered{}, turns: map[string]*turn{},
			released: released, adopted: adopted}
		if rebuilt {
			p.tabsBackBy = cfg.Clock.Now().Add(cfg.RebuildGrace)
		}
		return p
	}
}

// logger is the pairing's: its lines name it. Made when a line is logged,
// not at each activation (a new browser's cost, issue 13; a pairing logs
// seldom).
func (p *pairing) logger() *slog.Logger { return p.cfg.Logger.With("pairing", p.id) }

// Receive handles one message at a time: the actor's state needs no lock.
func (p *pairing) Receive(ctx actor.Context) {
	if p.intercept(ctx) {
		return
	}
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.cfg.Metrics.PairingsActive.Inc()
		if p.adopted != nil {
			p.adopt(ctx, p.adopted)
			p.adopted = nil
		}
		p.armIdle(ctx)
	case *actor.Stopped:
		p.cfg.Metrics.PairingsActive.Dec()
		p.cfg.Metrics.TabsConnected.Sub(float64(len(p.tabs)))
		p.stopTimers()
		p.released(p.id, ctx.Self(), p.handingOff)
	case *callRequest:
		p.onCall(ctx, m.id, m.req, &m.hand)
	case *wire.CallRequest:
		p.onCall(ctx, m.GetId(), protocol.CallRequest{Tool: m.GetTool(), Arguments: m.GetArguments(),
			Connection: fromWireConnection(m.GetConnection())}, nil)
	case *wire.CancelCall:
		p.onCancel(ctx, m.GetId(), true)
	case *wire.CallProbe:
		c, ok := p.calls[m.GetId()]
		ctx.Respond(&wire.CallProbeReply{Id: m.GetId(), Held: ok && c.waiter.Equal(ctx.Sender())})
	case *scheduleTick:
		p.onTick(ctx, m)
	case *drainRead:
		p.onDrainRead(ctx, m)
	case *wire.MoveDone, *settleOver:
		p.settle(ctx)
	case *wire.TabRegister:
		p.onRegister(ctx, m)
	case *wire.TabFocus:
		p.onFocus(ctx, m)
	case protocol.FromTab:
		p.onLocalTab(ctx, m)
	case *wire.TabResult:
		p.onResult(ctx, m.GetId(), tabResult{raw: m.GetResult()})
	case *wire.TabAsking:
		p.onAsking(ctx, m)
	case *wire.TabEvent:
		p.onEvent(ctx, fromWireEvent(m.GetEvent()))
	case *wire.TabStep:
		p.onStep(m.GetBy())
	case *wire.TabMessage:
		p.onTabMessage(m)
	case *actor.Terminated:
		p.onTerminated(ctx, m)
	case *tabGone:
		p.onTabGone(ctx, m)
	case *askLost:
		p.onAskLost(ctx, m.Tab)
	case *actor.Touched:
		p.onTouched(ctx, m.GetWho())
	case *idleCheck:
		p.onIdleCheck(ctx, m)
	case *wire.PermissionsRequest:
		p.onPermissionsRequest(ctx, m)
	case *wire.TabPermissions:
		p.onPermissions(ctx, m)
	case *wire.SnapshotRequest:
		ctx.Respond(p.snapshot())
	case *handOff:
		p.onHandOff(ctx, m)
	case *wire.Superseded:
		// Another actor holds this pairing's record (this one was taken
		// for gone): stop, and the tabs and callers follow the record.
		p.logger().Info("pairing superseded by another activation; stopping", "calls", len(p.calls), "tabs", len(p.tabs))
		ctx.Stop(ctx.Self())
	}
}

func (p *pairing) onHandOff(ctx actor.Context, m *handOff) {
	if p.settling != nil {
		p.deferred = m
		return
	}
	p.handingOff = true
	if len(p.calls) > 0 && len(m.adopters) > 0 {
		p.move(ctx, m)
		return
	}
	p.stopWhenIdle(ctx)
}

func (p *pairing) onCall(ctx actor.Context, id string, req protocol.CallRequest, hand *handover) {
	waiter := ctx.Sender()
	if waiter == nil {
		return
	}
	now := p.cfg.Clock.Now()
	if len(p.calls) >= p.cfg.MaxCalls {
		p.finish(ctx, waiter, nil, protocol.Outcome{Kind: protocol.TooManyCalls, CallID: id, Limit: p.cfg.MaxCalls}, tabResult{})
		return
	}
	if _, dup := p.calls[id]; dup {
		// Call ids are random per call: a second request of one is a bug
		// upstream. Its waiter gets an answer, the first keeps the call.
		p.finish(ctx, waiter, nil, protocol.Outcome{Kind: protocol.Restarting, CallID: id}, tabResult{})
		return
	}
	c := &call{msg: protocol.Call{Envelope: protocol.Typed(protocol.TypeCall), ID: id, Tool: req.Tool,
		Arguments: req.Arguments, Connection: req.Connection}, waiter: waiter, started: now}
	c.msg.Turn = p.turnFor(c.msg.Connection.ID, now)
	deadline := now.Add(p.cfg.CallWait)
	c.msg.DeadlineMs = deadline.UnixMilli()
	p.calls[c.msg.ID] = c
	p.holdWaiter(ctx, waiter)
	p.armDeadline(ctx, c, deadline)
	ctx.Send(waiter, &wire.CallAccepted{Id: c.msg.ID, Turn: c.msg.Turn})
	p.deliverHeld(ctx, c, hand)
	switch {
	case c.tab != nil:
	case now.Before(p.tabsBackBy):
		// No tab, but one went away lately: wait for it, not past the
		// grace.
		p.armGrace(ctx, c, p.tabsBackBy)
	default:
		// No tab lately: answered that none is open, unless a node
		// drained the browser's tabs and expects them back.
		p.checkDrained(ctx, c)
	}
	p.disarmIdle()
}

// armDeadline ends c at its deadline.
func (p *pairing) armDeadline(ctx actor.Context, c *call, deadline time.Time) {
	c.due = deadline
	p.schedule(ctx, deadline)
}

// armGrace ends c at until if it has no tab then.
func (p *pairing) armGrace(ctx actor.Context, c *call, until time.Time) {
	c.until = until
	if !c.due.IsZero() {
		p.schedule(ctx, until)
	}
}

// onTabGraceOver ends the wait of a call still waiting for a tab when the
// grace for the tabs that went away ran out: it is answered, unless a
// node drained the browser's tabs and expects them back.
func (p *pairing) onTabGraceOver(ctx actor.Context, id string) {
	if c, ok := p.calls[id]; ok && c.tab == nil {
		p.checkDrained(ctx, c)
	}
}

// noTabCame answers a call whose wait for a tab is over. A call no tab
// ever had did not run; one whose tab closed mid-call may have: its
// waiter is told so, and the call is kept as an orphan for a tab that
// comes back before its deadline.
func (p *pairing) noTabCame(ctx actor.Context, c *call) {
	if !c.sent && c.msg.Redelivery == 0 {
		p.end(ctx, c, protocol.Outcome{Kind: protocol.NoTab}, tabResult{})
		return
	}
	p.orphans[c.msg.ID] = c // on the schedule until its deadline
	p.end(ctx, c, protocol.Outcome{Kind: protocol.TabClosed}, tabResult{})
	c.waiter = nil
}

// stopGrace ends c's wait for a tab that went away lately.
func (p *pairing) stopGrace(c *call) { c.until = time.Time{} }

// turnFor returns the turn id of a call of connection conn at now: conn's
// turn while it lasts (a call of it still in flight, or its last call
// ended less than TurnIdle ago), else a new one. Calls of other
// connections do not end it; their steps do (onStep).
func (p *pairing) turnFor(conn string, now time.Time) string {
	for k, t := range p.turns {
		if k != conn && now.Sub(t.last) >= p.cfg.TurnIdle && !p.inTurn(k, t.id) {
			delete(p.turns, k) // ended by idleness: nothing to keep
		}
	}
	t := p.turns[conn]
	if t == nil || (now.Sub(t.last) >= p.cfg.TurnIdle && !p.inTurn(conn, t.id)) {
		t = &turn{id: NewID("turn-")}
		p.turns[conn] = t
	}
	t.last = now
	return t.id
}

// inTurn reports whether a call of conn in turn id is in flight.
func (p *pairing) inTurn(conn, id string) bool {
	for _, c := range p.calls {
		if c.msg.Connection.ID == conn && c.msg.Turn == id {
			return true
		}
	}
	return false
}

// onStep ends the turn of every connection but the one that made the
// step (by: a connection id, or the person).
func (p *pairing) onStep(by string) {
	for conn := range p.turns {
		if conn != by {
			delete(p.turns, conn)
		}
	}
}

// endedTurnCall notes that a call of c's turn ended now: the turn's
// idleness counts from here.
func (p *pairing) endedTurnCall(c *call) {
	if t := p.turns[c.msg.Connection.ID]; t != nil && t.id == c.msg.Turn {
		t.last = p.cfg.Clock.Now()
	}
}

// lastTurn is the turn a call started or ended in last, and its connection.
func (p *pairing) lastTurn() (string, *turn) {
	var conn string
	var last *turn
	for k, t := range p.turns {
		if last == nil || t.last.After(last.last) {
			conn, last = k, t
		}
	}
	return conn, last
}

// deliver sends c to the tab focused last (SPEC §3).
func (p *pairing) deliver(ctx actor.Context, c *call) { p.deliverHeld(ctx, c, nil) }

// deliverHeld delivers c; a tab in this process leaves the writing of its
// frame to c's caller when hand is set (handover).
func (p *pairing) deliverHeld(ctx actor.Context, c *call, hand *handover) {
	if len(p.tabs) == 0 {
		c.tab = nil // waits for a tab to register, until its deadline
		return
	}
	c.tab, c.sent = p.tabs[0].pid, true
	p.stopGrace(c) // a tab has it: should that tab go, it waits until its deadline
	if hand != nil && c.tab.Address == ctx.Self().Address {
		hand.call = c.msg
		ctx.Send(c.tab, hand)
		return
	}
	sendTab(ctx, c.tab, c.msg)
}

// onCancel ends a call whose host went away, and tells its tab. notify is
// false when the waiter itself is gone.
func (p *pairing) onCancel(ctx actor.Context, id string, notify bool) {
	c, ok := p.calls[id]
	if !ok {
		return
	}
	if c.tab != nil {
		cancelOnTab(ctx, c.tab, id, "cancelled")
	}
	if !notify {
		c.waiter = nil
	}
	p.end(ctx, c, protocol.Outcome{Kind: protocol.Cancelled}, tabResult{})
}

func (p *pairing) onDeadline(ctx actor.Context, id string) {
	if o, ok := p.orphans[id]; ok {
		// Its waiter was answered when its tab closed: no tab ran it
		// meanwhile, or none answered; the tab that has it need not.
		delete(p.orphans, id)
		if o.tab != nil {
			cancelOnTab(ctx, o.tab, id, "timeout")
		}
		return
	}
	c, ok := p.calls[id]
	if !ok {
		return
	}
	if c.asking {
		// The tab keeps its question open; the relay stops waiting, and a
		// late answer is dropped and counted (SPEC §3).
		p.cfg.Metrics.Detaches.Inc()
		p.rememberDetached(c)
		p.end(ctx, c, protocol.Outcome{Kind: protocol.Detached}, tabResult{})
		return
	}
	if c.tab != nil {
		cancelOnTab(ctx, c.tab, id, "timeout")
	}
	p.end(ctx, c, protocol.Outcome{Kind: protocol.TimedOut, Wait: p.cfg.CallWait}, tabResult{})
}

// cancelOnTab tells tab that the relay no longer waits for call id, and
// why ("cancelled": the host went away; "timeout"; "answered": on another
// socket).
func cancelOnTab(ctx actor.Context, tab *actor.PID, id, reason string) {
	sendTab(ctx, tab, protocol.Cancel{Envelope: protocol.Typed(protocol.TypeCancel), ID: id, Reason: reason})
}

// tabResult is a tab's result: its JSON, and when the tab's socket is in
// this process, the same as that socket decoded it (nil otherwise).
type tabResult struct {
	raw     []byte
	decoded *protocol.TabResult
}

func (p *pairing) onResult(ctx actor.Context, id string, r tabResult) {
	if o, ok := p.orphans[id]; ok {
		delete(p.orphans, id)
		if o.tab != nil && !o.tab.Equal(ctx.Sender()) {
			cancelOnTab(ctx, o.tab, o.msg.ID, "answered")
		}
		p.cfg.Metrics.LateAnswers.Inc()
		p.logLate(detachedCall{id: o.msg.ID, connection: o.msg.Connection.ID, tool: o.msg.Tool, started: o.started}, "tab_closed")
		return
	}
	c, ok := p.calls[id]
	if ok && c.tab != nil && !c.tab.Equal(ctx.Sender()) {
		// Answered on another socket (the tab reconnected, or another tab of
		// the browser had it): the tab it is on now need not run it.
		cancelOnTab(ctx, c.tab, c.msg.ID, "answered")
	}
	if !ok {
		// Detached, timed out, cancelled, or from before a restart: the
		// answer has nobody to go to.
		p.cfg.Metrics.LateAnswers.Inc()
		if d, ok := p.wasDetached(id); ok {
			p.logLate(d, "detached")
		} else {
			p.logger().Debug("late answer of a call not waited for dropped", "call", id)
		}
		return
	}
	p.end(ctx, c, protocol.Outcome{Kind: protocol.Answered}, r)
}

// end answers c's waiter and forgets c; result is the tab's when o is
// Answered.
func (p *pairing) end(ctx actor.Context, c *call, o protocol.Outcome, result tabResult) {
	delete(p.calls, c.msg.ID)
	p.endedTurnCall(c)
	p.stopGrace(c)
	o.CallID, o.Turn = c.msg.ID, c.msg.Turn
	p.finish(ctx, c.waiter, c, o, result)
	p.armIdle(ctx)
	if p.handingOff {
		p.stopWhenIdle(ctx)
	}
}

func (p *pairing) finish(ctx actor.Context, waiter *actor.PID, c *call, o protocol.Outcome, result tabResult) {
	if c != nil {
		p.cfg.Metrics.CallSeconds.Observe(p.cfg.Clock.Now().Sub(c.started).Seconds())
	}
	p.cfg.Metrics.Ended(o.Kind)
	if waiter == nil {
		return
	}
	if c != nil {
		p.releaseWaiter(ctx, waiter)
	}
	if result.decoded != nil && waiter.Address == ctx.Self().Address {
		// Its waiter is in this process too: the result as the socket
		// decoded it, not its JSON to decode again.
		o.Result = *result.decoded
		ctx.Send(waiter, &callEnded{o})
		return
	}
	ctx.Send(waiter, done(o, result.raw))
}

func (p *pairing) rememberDetached(c *call) {
	p.detached = append(p.detached, detachedCall{id: c.msg.ID, connection: c.msg.Connection.ID, tool: c.msg.Tool, started: c.started})
	if len(p.detached) > p.cfg.DetachedKept {
		p.detached = p.detached[len(p.detached)-p.cfg.DetachedKept:]
	}
}

func (p *pairing) wasDetached(id string) (detachedCall, bool) {
	for _, d := range p.detached {
		if d.id == id {
			return d, true
		}
	}
	return detachedCall{}, false
}

// logLate tells the operator of a late answer, dropped: the tab answered
// a call after the relay had answered its host (after: "detached" or
// "tab_closed"). A call that moved here with its pairing has no start
// time: no duration.
func (p *pairing) logLate(d detachedCall, after string) {
	var lasted time.Duration
	if !d.started.IsZero() {
		lasted = p.cfg.Clock.Now().Sub(d.started)
	}
	protocol.LogOutcome(p.logger(), protocol.LateAnswer, d.id, d.connection, d.tool, lasted, "after", after)
}

func (p *pairing) snapshot() *wire.Snapshot {
	turnConn, _ := p.lastTurn()
	s := &wire.Snapshot{Calls: int32(len(p.calls)), Detached: int32(len(p.detached)), TurnConn: turnConn}
	for _, t := range p.tabs {
		s.Tabs = append(s.Tabs, t.tabID)
	}
	for _, c := range p.calls {
		if c.tab == nil {
			s.Pending++
		}
		if c.asking {
			s.Asking++
		}
	}
	return s
}

// sortTabs keeps the tab focused last first; among tabs never focused or
// focused at the same instant, the one that joined last.
func (p *pairing) sortTabs() {
	sort.SliceStable(p.tabs, func(i, j int) bool {
		a, b := p.tabs[i], p.tabs[j]
		if !a.focusedAt.Equal(b.focusedAt) {
			return a.focusedAt.After(b.focusedAt)
		}
		return a.joined.After(b.joined)
	})
}

func (p *pairing) armIdle(ctx actor.Context) {
	if len(p.tabs) > 0 || len(p.calls) > 0 || p.idle != nil {
		return
	}
	p.idleGen++
	self, root, since, gen := ctx.Self(), ctx.ActorSystem().Root, p.cfg.Clock.Now(), p.idleGen
	p.idle = p.cfg.Clock.AfterFunc(p.cfg.PairingIdle, func() { root.Send(self, &idleCheck{Since: since, Gen: gen}) })
}

func (p *pairing) disarmIdle() {
	if p.idle != nil {
		p.idle.Stop()
		p.idle = nil
	}
}

func (p *pairing) onIdleCheck(ctx actor.Context, m *idleCheck) {
	if m.Gen != p.idleGen || p.idle == nil {
		return // a timer disarmed after it fired
	}
	p.idle = nil
	if len(p.tabs) > 0 || len(p.calls) > 0 {
		return
	}
	p.logger().Debug("pairing passivates", "idle", p.cfg.Clock.Now().Sub(m.Since))
	ctx.Stop(ctx.Self())
}

func (p *pairing) stopTimers() {
	p.disarmIdle()
	p.forgetLost()
	if p.settling != nil {
		p.settling.Stop()
	}
	p.stopSchedule()
}

// stopWhenIdle stops a pairing that hands off once it holds no call: its
// tabs, watching it, register again and activate it on their own node.
func (p *pairing) stopWhenIdle(ctx actor.Context) {
	if len(p.calls) == 0 {
		p.logger().Debug("pairing handed off")
		ctx.Stop(ctx.Self())
	}
}
