package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// onRegister adds a tab (a new one, or one that reconnected: same tab id,
// new actor) and hands it the calls that wait for a tab.
func (p *pairing) onRegister(ctx actor.Context, m *wire.TabRegister) {
	if m.GetTabActor() == "" {
		return
	}
	tab := actor.NewPID(m.GetTabAddress(), m.GetTabActor())
	if i := p.tabIndex(tab); i >= 0 {
		ctx.Respond(&wire.TabRegistered{Accepted: true}) // registered already (a retried request, a confirmation)
		if m.GetLookedUp() {
			// The tab found its pairing actor gone, and this one held it
			// already (it moved here): what the tab answered meanwhile
			// may have gone to the old actor. Its calls go to it again;
			// the tab answers them from memory. The same tab: a question
			// it asks the person is still open.
			for _, c := range p.calls {
				if c.tab != nil && c.tab.Equal(tab) {
					c.msg.Redelivery++
					p.cfg.Metrics.Redeliveries.Inc()
					ctx.Send(tab, toTab(c.msg))
				}
			}
		}
		return
	}
	var old *tabEntry
	for _, t := range p.tabs {
		if t.tabID == m.GetTabId() {
			old = t
		}
	}
	if old == nil && len(p.tabs) >= p.cfg.MaxTabs {
		ctx.Respond(&wire.TabRegistered{Accepted: false})
		return
	}
	p.tabs = append(p.tabs, &tabEntry{pid: tab, tabID: m.GetTabId(), focusedAt: fromUnixNano(m.GetFocusedAtUnixNano()), joined: p.cfg.Clock.Now()})
	p.sortTabs()
	ctx.Watch(tab)
	p.cfg.Metrics.TabsConnected.Inc()
	p.disarmIdle()
	ctx.Respond(&wire.TabRegistered{Accepted: true})
	if old != nil {
		// The same tab on a new socket: the old socket is done, and the
		// calls it had go back to this tab, which may hold their results.
		ctx.Send(old.pid, &wire.CloseTab{Code: int32(protocol.CloseReplaced)})
		p.moveCalls(ctx, old.pid, tab)
		p.removeTab(ctx, old.pid, true)
	}
	for _, c := range p.calls {
		if c.tab == nil {
			p.redeliver(ctx, c)
		}
	}
}

// moveCalls sends the calls that were on from to the tab to.
func (p *pairing) moveCalls(ctx actor.Context, from, to *actor.PID) {
	for _, c := range p.calls {
		if c.tab != nil && c.tab.Equal(from) {
			c.msg.Redelivery++
			c.asking = false
			p.cfg.Metrics.Redeliveries.Inc()
			c.tab = to
			ctx.Send(to, toTab(c.msg))
		}
	}
}

func (p *pairing) onFocus(ctx actor.Context, m *wire.TabFocus) {
	if i := p.tabIndex(ctx.Sender()); i >= 0 {
		p.tabs[i].focusedAt = fromUnixNano(m.GetAtUnixNano())
		p.sortTabs()
	}
}

// onTerminated handles a watched actor that stopped: a tab (its socket
// closed, or its node died) or a waiter (its front end went away).
func (p *pairing) onTerminated(ctx actor.Context, who *actor.PID) {
	if p.tabIndex(who) >= 0 {
		ctx.Send(ctx.Self(), &tabGone{Tab: who})
		return
	}
	for _, c := range p.calls {
		if c.waiter.Equal(who) {
			p.onCancel(ctx, c.msg.ID, false)
			return
		}
	}
}

// onTabGone removes a tab that stopped, once its last messages were read.
func (p *pairing) onTabGone(ctx actor.Context, tab *actor.PID) {
	p.removeTab(ctx, tab, false)
	p.armIdle(ctx)
}

// removeTab forgets a tab; its calls in flight go to the tab focused
// before it, or wait for the next tab to register. They keep their ids,
// so the tab side runs each at most once (SPEC §3).
// alive is false when the tab actor has stopped already.
func (p *pairing) removeTab(ctx actor.Context, pid *actor.PID, alive bool) {
	i := p.tabIndex(pid)
	if i < 0 {
		return
	}
	p.tabs = append(p.tabs[:i], p.tabs[i+1:]...)
	if alive {
		ctx.Unwatch(pid)
	}
	if len(p.tabs) == 0 {
		p.tabsBackBy = p.cfg.Clock.Now().Add(p.cfg.TabGrace)
	}
	p.cfg.Metrics.TabsConnected.Dec()
	for _, c := range p.calls {
		if c.tab != nil && c.tab.Equal(pid) {
			c.tab = nil
			p.redeliver(ctx, c)
		}
	}
}

func (p *pairing) redeliver(ctx actor.Context, c *call) {
	if len(p.tabs) == 0 {
		return
	}
	c.msg.Redelivery++
	c.asking = false // the question was in the tab that went away; the next tab asks anew
	p.cfg.Metrics.Redeliveries.Inc()
	p.deliver(ctx, c)
}

func (p *pairing) tabIndex(pid *actor.PID) int {
	if pid == nil {
		return -1
	}
	for i, t := range p.tabs {
		if t.pid.Equal(pid) {
			return i
		}
	}
	return -1
}
