package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// Outbox is the tab socket as its tab actor sees it.
type Outbox interface {
	// Send queues a message for the tab and never blocks. It reports false
	// when the tab is gone or too slow to read (the socket then closes
	// itself with CloseSlow).
	Send(msg protocol.ToTab) bool
	// Close ends the socket with code.
	Close(code protocol.CloseCode)
}

// TabInfo is what a tab proved and said in its hello.
type TabInfo struct {
	Pairing   string
	TabID     string
	FocusedAt time.Time
}

// Hub accepts proven tab sockets as tab actors.
type Hub struct {
	system *actor.ActorSystem
	router Router
	cfg    Config
}

// NewHub returns a Hub that registers tabs with pairings found by router.
func NewHub(system *actor.ActorSystem, router Router, cfg Config) *Hub {
	return &Hub{system: system, router: router, cfg: cfg.withDefaults()}
}

// Tab is a tab socket's handle on its tab actor.
type Tab struct {
	pid  *actor.PID
	root *actor.RootContext
}

// Accept starts the tab actor of one socket; it registers with its pairing.
func (h *Hub) Accept(info TabInfo, out Outbox) *Tab {
	a := &tabActor{hub: h, info: info, out: out}
	pid := h.system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
	return &Tab{pid: pid, root: h.system.Root}
}

// Focus reports that the person focused the tab at at.
func (t *Tab) Focus(at time.Time) { t.root.Send(t.pid, &wire.TabFocus{AtUnixNano: unixNano(at)}) }

// Forward hands the pairing what the tab said (a result, asking, progress,
// a step…, as the socket read and checked it); focus goes by Focus. It may
// cross nodes: a result's JSON stays as the tab sent it, and only the front
// end that waits for it decodes it.
func (t *Tab) Forward(msg protocol.FromTab) { t.root.Send(t.pid, fromTab(msg)) }

// Close ends the tab actor: its socket is closed. Its calls in flight go to
// the browser's other tabs, or wait for it to come back. It is a user
// message (Poison, not Stop): what the tab said before it closed, a result
// among them, still reaches the pairing first.
func (t *Tab) Close() { t.root.Poison(t.pid) }

// registerAttempts bounds how often a tab looks its pairing up again in a
// row before it gives up and closes its socket (the tab will reconnect).
const registerAttempts = 5

// tabActor is one tab socket on the node that holds it. It keeps the tab's
// last focus time so that it can register again, as the rebuild of SPEC §3
// asks, whenever its pairing actor goes away.
type tabActor struct {
	hub      *Hub
	info     TabInfo
	out      Outbox
	pairing  *actor.PID
	failures int
	confirm  clock.Timer // the next confirmation of the registration
}

func (a *tabActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.register(ctx, nil)
	case *actor.Stopping:
		if a.pairing != nil {
			ctx.Unwatch(a.pairing)
		}
		if a.confirm != nil {
			a.confirm.Stop()
		}
	case *confirmTick:
		if m.pairing.Equal(a.pairing) {
			a.requestRegistration(ctx, a.pairing, false)
		}
	case *actor.DeadLetterResponse:
		// A forwarded message reached a stopped pairing: it is lost with
		// the pairing, whose Terminated makes the tab register anew.
	case *actor.Terminated:
		if a.pairing != nil && m.Who.Equal(a.pairing) {
			a.register(ctx, m.Who) // the pairing went away: rebuild it
		}
	case *wire.PairingMoved:
		// The pairing moved to another node (its node drains), this tab
		// among its tabs: talk to the actor that holds it now.
		if sender := ctx.Sender(); sender != nil && sender.Equal(a.pairing) {
			ctx.Unwatch(a.pairing)
			a.pairing = actor.NewPID(m.GetAddress(), m.GetId())
			ctx.Watch(a.pairing)
			a.confirmLater(ctx, a.pairing)
		}
	case *wire.TabFocus:
		a.info.FocusedAt = fromUnixNano(m.GetAtUnixNano())
		a.forward(ctx, m)
	case wire.FromTab:
		a.forward(ctx, m)
	case *wire.ToTab:
		a.send(m)
	case *wire.CloseTab:
		a.out.Close(protocol.CloseCode(m.GetCode()))
	}
}

// register looks the pairing up and registers with it; stale is the
// pairing actor this tab found gone, if any.
func (a *tabActor) register(ctx actor.Context, stale *actor.PID) {
	a.failures++
	if a.failures > registerAttempts {
		a.hub.cfg.Logger.Warn("tab could not register with its pairing", "pairing", a.info.Pairing)
		a.out.Close(protocol.CloseUnavailable)
		return
	}
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a.pairing != nil {
		ctx.Unwatch(a.pairing)
	}
	pid, err := a.hub.router.Pairing(rctx, a.info.Pairing, stale)
	if err != nil {
		a.out.Close(protocol.CloseUnavailable)
		return
	}
	a.pairing = pid
	ctx.Watch(pid)
	a.requestRegistration(ctx, pid, true)
}

// requestRegistration asks pid to hold this tab. Accepted, the tab asks
// again every Config.ConfirmEvery: a pairing on another node may have dropped it
// (a broken connection between the nodes looks to protoactor like every
// actor there stopping) while the tab itself heard nothing.
func (a *tabActor) requestRegistration(ctx actor.Context, pid *actor.PID, lookedUp bool) {
	self := ctx.Self()
	f := ctx.RequestFuture(pid, &wire.TabRegister{TabId: a.info.TabID, FocusedAtUnixNano: unixNano(a.info.FocusedAt),
		TabAddress: self.Address, TabActor: self.Id, LookedUp: lookedUp}, registerWait)
	ctx.ReenterAfter(f, func(res any, err error) {
		if !pid.Equal(a.pairing) {
			return // an answer to an earlier registration
		}
		switch r := res.(type) {
		case *wire.TabRegistered:
			if !r.GetAccepted() {
				a.out.Close(protocol.CloseTooManyTabs)
				return
			}
			a.failures = 0
			a.confirmLater(ctx, pid)
		default:
			// A dead letter (the pairing had stopped), or no answer in
			// time (lost on the way): look it up again, past that actor.
			a.register(ctx, pid)
		}
	})
}

// confirmLater arms the next confirmation of the registration with pid,
// when pid is on another node. A pairing in this process cannot drop the
// tab unseen: it keeps its tabs until it stops (a panic stops it too, see
// Activations.stop), and its stop reaches the tab as Terminated, so an
// idle tab of a local pairing costs no timer (issue 13). A pairing that
// moves away (PairingMoved) is confirmed from then on.
func (a *tabActor) confirmLater(ctx actor.Context, pid *actor.PID) {
	if a.confirm != nil {
		a.confirm.Stop()
		a.confirm = nil
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	if pid.Address == self.Address && !a.hub.cfg.confirmLocal {
		return
	}
	a.confirm = a.hub.cfg.Clock.AfterFunc(a.hub.cfg.ConfirmEvery, func() { root.Send(self, &confirmTick{pairing: pid}) })
}

// confirmTick is the tab actor's note to itself to confirm its
// registration with pairing.
type confirmTick struct{ pairing *actor.PID }

// registerWait bounds the wait for a registration's answer.
const registerWait = 10 * time.Second

func (a *tabActor) forward(ctx actor.Context, m wire.FromTab) {
	if a.pairing != nil {
		ctx.Request(a.pairing, m)
	}
}

// send hands the socket a message of the pairing's: a call, or any other
// message as the JSON the pairing made of it (on its own node).
func (a *tabActor) send(m *wire.ToTab) {
	if c := m.GetCall(); c != nil {
		a.out.Send(fromWireCall(c))
		return
	}
	env, err := protocol.DecodeType(m.GetJson())
	var msg protocol.ToTab
	if err == nil {
		msg, err = protocol.DecodeToTab(env, m.GetJson())
	}
	if err != nil {
		// A message a newer build sends, or none the relay makes.
		a.hub.cfg.Logger.Warn("message for a tab dropped: not one this relay sends", "pairing", a.info.Pairing, "err", err)
		return
	}
	a.out.Send(msg)
}
