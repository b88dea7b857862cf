package actors

import (
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A pairing keeps one schedule for its calls (issue 13): a single timer,
// armed for the soonest of their deadlines and of their waits for a tab,
// instead of one or two timers per call. When it fires, the pairing ends
// whatever fell due, in order, and arms it for the next.

// scheduleTick (timer → pairing): something may have fallen due.
type scheduleTick struct{ gen int }

// schedule makes sure the schedule fires by at.
func (p *pairing) schedule(ctx actor.Context, at time.Time) {
	if p.sched != nil && !p.schedAt.After(at) {
		return // fires sooner, and arms the next then
	}
	if p.sched != nil {
		p.sched.Stop()
	}
	p.schedGen++
	self, root, gen := ctx.Self(), ctx.ActorSystem().Root, p.schedGen
	p.schedAt = at
	p.sched = p.cfg.Clock.AfterFunc(max(at.Sub(p.cfg.Clock.Now()), 0), func() { root.Send(self, &scheduleTick{gen: gen}) })
}

// due is one thing that fell due: a call's wait for a tab (grace), or its
// deadline.
type due struct {
	at    time.Time
	id    string
	grace bool
}

// onTick ends what fell due (a grace before a deadline of the same
// instant) and arms the schedule for the next.
func (p *pairing) onTick(ctx actor.Context, m *scheduleTick) {
	if m.gen != p.schedGen {
		return // a timer stopped after it fired
	}
	p.sched, p.schedAt = nil, time.Time{}
	now := p.cfg.Clock.Now()
	var fell []due
	for id, c := range p.calls {
		if c.due.IsZero() {
			continue // adopted, not settled yet: its times run from then
		}
		if !c.until.IsZero() && !now.Before(c.until) {
			fell = append(fell, due{at: c.until, id: id, grace: true})
			c.until = time.Time{} // its wait for a tab is over, whatever comes of it
		}
		if !now.Before(c.due) {
			fell = append(fell, due{at: c.due, id: id})
		}
	}
	for id, o := range p.orphans {
		if !now.Before(o.due) {
			fell = append(fell, due{at: o.due, id: id})
		}
	}
	sort.Slice(fell, func(i, j int) bool {
		if !fell[i].at.Equal(fell[j].at) {
			return fell[i].at.Before(fell[j].at)
		}
		return fell[i].grace && !fell[j].grace
	})
	// Armed before what fell is answered: once a caller has its answer, the
	// deadline of a call kept for its tab (an orphan) runs already.
	p.reschedule(ctx, now)
	for _, d := range fell {
		if d.grace {
			p.onTabGraceOver(ctx, d.id)
		} else {
			p.onDeadline(ctx, d.id)
		}
	}
}

// reschedule arms the schedule for the soonest time after now that a call
// has left.
func (p *pairing) reschedule(ctx actor.Context, now time.Time) {
	var next time.Time
	soonest := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, c := range p.calls {
		if !c.due.IsZero() {
			soonest(c.due)
			soonest(c.until)
		}
	}
	for _, o := range p.orphans {
		soonest(o.due)
	}
	if !next.IsZero() {
		p.schedule(ctx, next)
	}
}

// stopSchedule disarms the schedule (the pairing stops or moved away).
func (p *pairing) stopSchedule() {
	if p.sched != nil {
		p.sched.Stop()
		p.sched, p.schedAt = nil, time.Time{}
	}
}

// A call's waiter is where its end goes: a node's switchboard, or (a
// front end of an older build) an actor of that call alone. The pairing
// watches a waiter on another node, so that the calls of a front end that
// went away are cancelled (their tabs told); one in this process lives as
// long as the pairing. A switchboard stays watched while the pairing lives,
// whatever its calls; a waiter of one call, until that call ends.

// heldWaiter is a waiter on another node the pairing watches, and how
// many of its calls are in flight.
type heldWaiter struct {
	pid   *actor.PID
	calls int
}

// holdWaiter notes a call of waiter.
func (p *pairing) holdWaiter(ctx actor.Context, waiter *actor.PID) {
	if waiter == nil || waiter.Address == ctx.Self().Address {
		return
	}
	if p.waiters == nil {
		p.waiters = map[pidKey]*heldWaiter{}
	}
	key := keyOf(waiter)
	h := p.waiters[key]
	if h == nil {
		h = &heldWaiter{pid: waiter}
		p.waiters[key] = h
		ctx.Watch(waiter)
	}
	h.calls++
}

// releaseWaiter notes that a call of waiter ended.
func (p *pairing) releaseWaiter(ctx actor.Context, waiter *actor.PID) {
	if waiter == nil || waiter.Address == ctx.Self().Address {
		return
	}
	key := keyOf(waiter)
	h := p.waiters[key]
	if h == nil {
		return
	}
	if h.calls > 0 {
		h.calls--
	}
	if h.calls > 0 || waiter.Id == switchboardName {
		return
	}
	delete(p.waiters, key)
	ctx.Unwatch(waiter)
}

// waiterGone cancels the calls of a waiter that stopped, or whose node's
// link was lost, and tells their tabs. It reports whether who was a
// waiter of this pairing.
func (p *pairing) waiterGone(ctx actor.Context, who *actor.PID) bool {
	_, found := p.waiters[keyOf(who)]
	delete(p.waiters, keyOf(who))
	for id, c := range p.calls {
		if c.waiter.Equal(who) {
			found = true
			p.onCancel(ctx, id, false)
		}
	}
	return found
}

// unwatchWaiters drops every watch of a waiter (the pairing moved away).
func (p *pairing) unwatchWaiters(ctx actor.Context) {
	for _, h := range p.waiters {
		ctx.Unwatch(h.pid)
	}
	p.waiters = nil
}
