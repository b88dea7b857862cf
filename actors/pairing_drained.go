package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A drain can keep a browser's tabs away for longer than a pairing's own
// grace: its node tells them to reconnect spread over a window, they come
// back to another node, or to the same node once it restarted (a single
// node started again: a new process that knows nothing of the tabs the
// old one had). So the draining node keeps a mark per browser in the
// store, until when its tabs are expected back (tabsocket.Server.Drain,
// issue 25), and a pairing reads it whenever it would otherwise answer a
// call that no tab is open: a call that finds no tab and no grace
// running, and a call whose wait for a tab ran out. Until the mark's end
// the call waits for a tab as in the grace, bounded by its own deadline.
// This is one rule for every case: a pairing on the drained node or on
// another one (its tab's socket was on the drained node), rebuilt or
// adopted, in the old process or the new.
//
// A mark older than the last tab that registered here is spent: the tabs
// it speaks of came back. Nothing is read while a tab is connected; the
// read does not hold the actor (a tab that registers meanwhile gets the
// calls), and one read serves the calls that come meanwhile.

// noteJoined notes that a tab registered at joined: a drain's mark from
// before is spent.
func (p *pairing) noteJoined(joined time.Time) {
	if joined.After(p.tabJoined) {
		p.tabJoined = joined
	}
}

// drainRead (a read of the store → pairing): the drain's mark of the
// pairing, if any.
type drainRead struct {
	found     bool
	at, until time.Time
}

// markReadWait bounds the read of a mark: Redis's own timeouts are 1 s.
const markReadWait = 2 * time.Second

// checkDrained ends c's wait for a tab (it found none, or its grace ran
// out), once the store said whether a drain's mark keeps it waiting.
func (p *pairing) checkDrained(ctx actor.Context, c *call) {
	c.checking = true
	if p.readingMark {
		return // the read in flight answers it too
	}
	if p.cfg.Drained == nil {
		p.onDrainRead(ctx, &drainRead{})
		return
	}
	p.readingMark = true
	self, root, marks, id, now := ctx.Self(), ctx.ActorSystem().Root, p.cfg.Drained, p.id, p.cfg.Clock.Now()
	log := p.cfg.Logger
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), markReadWait)
		defer cancel()
		d, found, err := marks.Drained(rctx, id, now)
		if err != nil {
			// Read as no mark: the call hears that no tab is open.
			log.Debug("a drained browser's mark was not read", "pairing", id, "err", err)
		}
		root.Send(self, &drainRead{found: found && err == nil, at: d.At, until: d.Until})
	}()
}

// onDrainRead ends the wait of the calls that asked: until the mark's end
// if a drain's mark keeps them waiting, else they are answered.
func (p *pairing) onDrainRead(ctx actor.Context, m *drainRead) {
	p.readingMark = false
	now := p.cfg.Clock.Now()
	if m.found && m.at.After(p.tabJoined) && m.until.After(p.tabsBackBy) {
		p.tabsBackBy = m.until
	}
	for _, c := range p.calls {
		if !c.checking {
			continue
		}
		c.checking = false
		switch {
		case c.tab != nil: // a tab came meanwhile
		case now.Before(p.tabsBackBy):
			p.armGrace(ctx, c, p.tabsBackBy)
		default:
			p.noTabCame(ctx, c)
		}
	}
}
