package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// A Terminated that protoactor sends because the link to the watched
// actor's node was lost (AddressTerminated) says nothing of the actor
// itself. protoactor sends it to every watcher here of every actor at that
// address when its connection there breaks, and when a member that left
// had that address, even though a node restarted on the same address holds
// it now, with tabs registered here (issue 17: a live tab dropped until
// its node's 20 s confirm, confirms.go). The pairing drops such a tab as
// any other, so that its calls do not wait on a node that may be dead, and
// asks it whether it lives: protoactor's Touch, which every actor answers
// by itself (so a node of any build does). A tab that answers is taken
// back at once.
//
// Asks go every askLostAfter, the first one askLostAfter after the loss.
// After a loss protoactor goes on cutting the link for a while (each
// connection it closes there is reported lost once more, which closes the
// next one if one was opened meanwhile: 1.4–2.5 s under load), and an ask
// sent on a connection it cuts is lost without a word. So the pairing
// watches the tab while it asks: a watch ended by a cut link
// (AddressTerminated again) says the asks since the last cut heard nothing
// because of the link, not the tab, and they do not count. Only lostAsks
// asks in a row that heard nothing while the link held (a node that died,
// or that no longer reaches here) make the pairing forget the tab; asks
// the link keeps cutting stop after ConfirmEvery, when the tab's node
// confirms it anyway (confirms.go). A watch that ends otherwise (the tab
// stopped, or its node does not know it) forgets it at once.

// askLostAfter is the time before each ask of a tab that a lost link took
// away.
const askLostAfter = 500 * time.Millisecond

// lostAsks is how many asks in a row a tab may leave unanswered while its
// link holds before the pairing gives up.
const lostAsks = 3

// lostTab is a tab a lost link took away.
type lostTab struct {
	entry tabEntry
	asks  int       // asks since the last cut of the link
	until time.Time // no ask after this
	timer clock.Timer
}

// askLater remembers t, which a lost link took away, and arms its first ask.
func (p *pairing) askLater(ctx actor.Context, t tabEntry) {
	if p.lost == nil {
		p.lost = map[pidKey]*lostTab{}
	}
	key := keyOf(t.pid)
	if l, ok := p.lost[key]; ok {
		l.timer.Stop()
	}
	l := &lostTab{entry: t, until: p.cfg.Clock.Now().Add(p.cfg.ConfirmEvery)}
	p.lost[key] = l
	p.armAsk(ctx, l)
}

func (p *pairing) armAsk(ctx actor.Context, l *lostTab) {
	self, root, tab := ctx.Self(), ctx.ActorSystem().Root, l.entry.pid
	l.timer = p.cfg.Clock.AfterFunc(askLostAfter, func() { root.Send(self, &askLost{Tab: tab}) })
}

// onAskLost asks a tab a lost link took away whether it lives (its actor's
// Touched comes back to this pairing), watching it to hear of a cut link,
// or forgets it when it answered none of the last lostAsks asks, or when
// its time is up.
func (p *pairing) onAskLost(ctx actor.Context, tab *actor.PID) {
	key := keyOf(tab)
	l, ok := p.lost[key]
	if !ok {
		return
	}
	if l.asks == lostAsks || !p.cfg.Clock.Now().Before(l.until) {
		p.forget(ctx, key)
		return
	}
	l.asks++
	// The next ask is armed before this one goes: whoever hears an ask
	// (a test on a fake clock) may move the clock on at once.
	p.armAsk(ctx, l)
	ctx.Watch(tab)
	ctx.Request(tab, &actor.Touch{})
}

// lostEnded reads the end of a watch of who, if it is a tab a lost link
// took away: a cut link does not count the asks since the last cut; a tab
// that stopped (or that its node does not know) is forgotten.
func (p *pairing) lostEnded(who *actor.PID, why actor.TerminatedReason) bool {
	key := keyOf(who)
	l, ok := p.lost[key]
	if !ok {
		return false
	}
	if why == actor.TerminatedReason_AddressTerminated {
		l.asks = 0
		p.cfg.Metrics.TabAsksCut.Inc()
		return true
	}
	l.timer.Stop()
	delete(p.lost, key)
	return true
}

// onTouched takes back a tab that a lost link took away and that answered
// that it lives, and hands it the calls that wait for a tab. One that came
// back by itself meanwhile is held already; one whose tab came back on
// another socket is done.
func (p *pairing) onTouched(ctx actor.Context, who *actor.PID) {
	key := keyOf(who)
	l, ok := p.lost[key]
	if !ok {
		return
	}
	if p.tabIndex(who) >= 0 {
		l.timer.Stop()
		delete(p.lost, key)
		return
	}
	for _, t := range p.tabs {
		if t.tabID == l.entry.tabID {
			ctx.Send(who, &wire.CloseTab{Code: int32(protocol.CloseReplaced)})
			p.forget(ctx, key)
			return
		}
	}
	if len(p.tabs) >= p.cfg.MaxTabs {
		p.forget(ctx, key)
		return
	}
	l.timer.Stop()
	delete(p.lost, key)
	p.cfg.Metrics.TabsTakenBack.Inc()
	p.logger().Debug("tab taken back after its node's link was lost", "tab", l.entry.tabID)
	t := l.entry
	p.addTab(ctx, &t) // watched already, by the asks
	p.deliverWaiting(ctx)
}

// forget stops asking a tab a lost link took away, and watching it.
func (p *pairing) forget(ctx actor.Context, key pidKey) {
	l := p.lost[key]
	l.timer.Stop()
	delete(p.lost, key)
	ctx.Unwatch(l.entry.pid)
}

// forgetLost stops asking the tabs a lost link took away (the pairing
// stops).
func (p *pairing) forgetLost() {
	for _, l := range p.lost {
		l.timer.Stop()
	}
	p.lost = nil
}
