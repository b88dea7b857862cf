package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// onRegister adds a tab (a new one, or one that reconnected: same tab id,
// new actor) and hands it the calls that wait for a tab. A registration
// without a sender is a confirm that the tab's node sent with its others
// (confirms.go): it is answered only when refused, by closing the tab.
func (p *pairing) onRegister(ctx actor.Context, m *wire.TabRegister) {
	if m.GetTabActor() == "" {
		return
	}
	tab := actor.NewPID(m.GetTabAddress(), m.GetTabActor())
	if i := p.tabIndex(tab); i >= 0 {
		registered(ctx, tab, true) // registered already (a retried request, a confirmation)
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
					sendTab(ctx, tab, c.msg)
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
	if old != nil && !m.GetLookedUp() {
		// A confirm from a socket this pairing no longer holds, while it
		// holds another socket of the same tab: the pairing dropped the
		// confirming one unseen (a lost link) and the tab came back on a
		// new socket since, which the browser uses. The confirm is stale:
		// its socket is the one replaced, not the new one.
		registered(ctx, tab, true)
		ctx.Send(tab, &wire.CloseTab{Code: int32(protocol.CloseReplaced)})
		return
	}
	if old == nil && len(p.tabs) >= p.cfg.MaxTabs {
		registered(ctx, tab, false)
		return
	}
	p.addTab(ctx, &tabEntry{pid: tab, tabID: m.GetTabId(), focusedAt: fromUnixNano(m.GetFocusedAtUnixNano()), joined: p.cfg.Clock.Now()})
	registered(ctx, tab, true)
	if old != nil {
		// The same tab on a new socket: the old socket is done, and the
		// calls it had go back to this tab, which may hold their results.
		ctx.Send(old.pid, &wire.CloseTab{Code: int32(protocol.CloseReplaced)})
		p.moveCalls(ctx, old.pid, tab)
		p.removeTab(ctx, old.pid, true)
	}
	p.deliverWaiting(ctx)
}

// registered answers a tab's registration: its request, or, for a
// confirm its node sent (no sender), a refusal by closing the tab, as the
// tab closes itself when its request is refused.
func registered(ctx actor.Context, tab *actor.PID, accepted bool) {
	switch {
	case ctx.Sender() != nil:
		ctx.Respond(&wire.TabRegistered{Accepted: accepted, NodeConfirms: true})
	case !accepted:
		ctx.Send(tab, &wire.CloseTab{Code: int32(protocol.CloseTooManyTabs)})
	}
}

// addTab holds t from now on.
func (p *pairing) addTab(ctx actor.Context, t *tabEntry) {
	p.tabs = append(p.tabs, t)
	p.noteJoined(t.joined)
	p.sortTabs()
	ctx.Watch(t.pid)
	p.cfg.Metrics.TabsConnected.Inc()
	p.disarmIdle()
}

// deliverWaiting hands a tab the calls that wait for one, orphans too
// (their tab closed; the tab side runs each id at most once).
func (p *pairing) deliverWaiting(ctx actor.Context) {
	for _, m := range []map[string]*call{p.calls, p.orphans} {
		for _, c := range m {
			if c.tab == nil {
				p.redeliver(ctx, c)
			}
		}
	}
}

// moveCalls sends the calls that were on from to the tab to.
func (p *pairing) moveCalls(ctx actor.Context, from, to *actor.PID) {
	for _, m := range []map[string]*call{p.calls, p.orphans} {
		for _, c := range m {
			if c.tab != nil && c.tab.Equal(from) {
				c.msg.Redelivery++
				c.asking = false
				p.cfg.Metrics.Redeliveries.Inc()
				c.tab = to
				sendTab(ctx, to, c.msg)
			}
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
// closed, or its node died), a tab a lost link took away (pairing_lost.go)
// or a waiter (its front end went away).
func (p *pairing) onTerminated(ctx actor.Context, m *actor.Terminated) {
	who := m.Who
	if p.tabIndex(who) >= 0 {
		ctx.Send(ctx.Self(), &tabGone{Tab: who, LinkLost: m.Why == actor.TerminatedReason_AddressTerminated})
		return
	}
	if p.lostEnded(who, m.Why) {
		return
	}
	p.waiterGone(ctx, who)
}

// onTabGone removes a tab that stopped, once its last messages were read.
func (p *pairing) onTabGone(ctx actor.Context, m *tabGone) {
	if i := p.tabIndex(m.Tab); i >= 0 && m.LinkLost {
		p.askLater(ctx, *p.tabs[i])
	}
	p.removeTab(ctx, m.Tab, false)
	p.armIdle(ctx)
}

// removeTab forgets a tab; its calls in flight go to the tab focused
// before it, or wait for the next tab to register. They keep their ids,
// so the tab side runs each at most once (SPEC §3).
// alive is false when the tab has stopped already.
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
	for _, m := range []map[string]*call{p.calls, p.orphans} {
		for _, c := range m {
			if c.tab != nil && c.tab.Equal(pid) {
				c.tab = nil
				p.redeliver(ctx, c)
			}
		}
	}
	if len(p.tabs) > 0 {
		return
	}
	// The browser's last tab went: a call it had waits the tab grace for a
	// tab, then is answered (SPEC §3: a call whose only tab closes
	// mid-call is answered after that grace).
	for _, c := range p.calls {
		if c.tab == nil && c.until.IsZero() {
			p.armGrace(ctx, c, p.tabsBackBy)
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

// onLocalTab reads what a tab in this process said, as its socket read
// it (Tab.Forward converts nothing for a pairing in its process): a result
// as the socket decoded it, a call's event as the event it is; anything
// else as its wire form, the same as from a tab on another node.
func (p *pairing) onLocalTab(ctx actor.Context, msg protocol.FromTab) {
	if r, ok := msg.(protocol.Result); ok {
		p.onResult(ctx, r.ID, tabResult{raw: r.Result, decoded: r.Decoded})
		return
	}
	if e, ok := callEventOf(msg); ok {
		p.onEvent(ctx, e)
		return
	}
	switch m := fromTab(msg).(type) {
	case *wire.TabAsking:
		p.onAsking(ctx, m)
	case *wire.TabStep:
		p.onStep(m.GetBy())
	case *wire.TabMessage:
		p.onTabMessage(m)
	case *wire.TabPermissions:
		p.onPermissions(ctx, m)
	}
}

// onEvent passes a call's event on to its waiter: as it is to a waiter in
// this process, its wire form to one elsewhere.
func (p *pairing) onEvent(ctx actor.Context, e protocol.CallEvent) {
	c, ok := p.calls[e.CallID]
	if !ok {
		return
	}
	if c.waiter.Address == ctx.Self().Address {
		ctx.Send(c.waiter, &callEvent{e})
		return
	}
	ctx.Send(c.waiter, &wire.CallEvent{Event: toWireEvent(e)})
}

// onTabMessage reads what a tab said that the wire has no message of its
// own for: a tab message the pairing reads is a case of a type switch on
// what protocol.DecodeFromTab returns, here. Anything else that reaches
// it (a newer build's socket node sent it) is dropped.
func (p *pairing) onTabMessage(m *wire.TabMessage) {
	env, err := protocol.DecodeType(m.GetJson())
	var msg protocol.FromTab
	if err == nil {
		msg, err = protocol.DecodeFromTab(env, m.GetJson())
	}
	if _, ok := msg.(protocol.PermissionsChanged); ok {
		p.settingsChanged()
		return
	}
	p.logger().Debug("tab message dropped: the pairing does not read it", "type", protocol.Clip(env.Type, 40), "err", err)
}

func (p *pairing) onAsking(ctx actor.Context, m *wire.TabAsking) {
	c, ok := p.calls[m.GetId()]
	if !ok {
		return
	}
	c.asking = m.GetAsking()
	kind := protocol.CallAnswered
	if c.asking {
		kind = protocol.CallAsking
	}
	p.onEvent(ctx, protocol.CallEvent{CallID: m.GetId(), Kind: kind})
}

// pidKey is a pid as a map key (pids are pointers).
type pidKey struct{ address, id string }

func keyOf(pid *actor.PID) pidKey { return pidKey{pid.GetAddress(), pid.GetId()} }
