package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/tabrelay/tabrelay/protocol"
)

// onRegister adds a tab (a new one, or one that reconnected: same tab id,
// new actor) and hands it the calls that wait for a tab.
func (p *pairing) onRegister(ctx actor.Context, m *tabRegister) {
	tab := ctx.Sender()
	if tab == nil {
		return
	}
	if i := p.tabIndex(tab); i >= 0 {
		ctx.Respond(&tabRegistered{Accepted: true}) // registered already (a retried request)
		return
	}
	for _, old := range p.tabs {
		if old.tabID == m.TabID {
			// The same tab on a new socket: the old socket is done.
			ctx.Send(old.pid, &closeTab{Code: protocol.CloseReplaced})
			p.removeTab(ctx, old.pid, true)
			break
		}
	}
	if len(p.tabs) >= p.cfg.MaxTabs {
		ctx.Respond(&tabRegistered{Accepted: false})
		return
	}
	p.tabs = append(p.tabs, &tabEntry{pid: tab, tabID: m.TabID, focusedAt: m.FocusedAt, joined: p.cfg.Clock.Now()})
	p.sortTabs()
	ctx.Watch(tab)
	p.cfg.Metrics.TabsConnected.Inc()
	p.disarmIdle()
	ctx.Respond(&tabRegistered{Accepted: true})
	for _, c := range p.calls {
		if c.tab == nil {
			p.redeliver(ctx, c)
		}
	}
}

func (p *pairing) onFocus(ctx actor.Context, m *tabFocus) {
	if i := p.tabIndex(ctx.Sender()); i >= 0 {
		p.tabs[i].focusedAt = m.At
		p.sortTabs()
	}
}

// onTerminated handles a watched actor that stopped: a tab (its socket
// closed, or its node died) or a waiter (its front end went away).
func (p *pairing) onTerminated(ctx actor.Context, who *actor.PID) {
	if p.tabIndex(who) >= 0 {
		p.removeTab(ctx, who, false)
		p.armIdle(ctx)
		return
	}
	for _, c := range p.calls {
		if c.waiter.Equal(who) {
			p.onCancel(ctx, c.msg.ID, false)
			return
		}
	}
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
