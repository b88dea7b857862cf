package actors

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/protocol"
)

// Outbox is the tab socket as its tab sees it.
type Outbox interface {
	// Send queues a message for the tab and never blocks. It reports false
	// when the tab is gone or too slow to read (the socket then closes
	// itself with CloseSlow).
	Send(msg protocol.ToTab) bool
	// SendHeld queues msg as Send does, but starts no writer: when the
	// socket had none running, start is the writer's, which the caller
	// must run (inline: in its own goroutine, which then writes what is
	// queued; else in a new one). A nil start: a writer runs already.
	SendHeld(msg protocol.ToTab) (start func(inline bool), ok bool)
	// Close ends the socket with code.
	Close(code protocol.CloseCode)
}

// TabInfo is what a tab proved and said in its hello.
type TabInfo struct {
	Pairing   string
	TabID     string
	FocusedAt time.Time
}

// Hub accepts proven tab sockets as tabs.
type Hub struct {
	system   *actor.ActorSystem
	router   Router
	cfg      Config
	confirms *confirms // the node's, where tabs of pairings on other nodes are confirmed
}

// NewHub returns a Hub that registers tabs with pairings found by router.
func NewHub(system *actor.ActorSystem, router Router, cfg Config) *Hub {
	cfg = cfg.withDefaults()
	return &Hub{system: system, router: router, cfg: cfg, confirms: confirmsOf(system, cfg)}
}

// registerAttempts bounds how often a tab looks its pairing up again in a
// row before it gives up and closes its socket (the tab will reconnect).
const registerAttempts = 5

// registerWait bounds the wait for a registration's answer.
const registerWait = 10 * time.Second

// Tab is one tab socket on the node that holds it, as the actors see it: a
// protoactor process under a pid of its own, which its pairing (on any
// node) watches and sends the socket's messages to. It is not an actor
// (issue 13): what reaches it goes to the socket in the sender's goroutine,
// and what the socket reads goes straight to the pairing with the tab's pid
// as the sender, so a call passes no tab actor's mailbox either way, and an
// idle tab holds no mailbox. It keeps the tab's last focus time so that it
// can register again, as the rebuild of SPEC §3 asks, whenever its pairing
// actor goes away.
type Tab struct {
	hub  *Hub
	pid  *actor.PID
	out  Outbox
	info TabInfo // FocusedAt is read under mu

	// sends orders what the tab sends its pairing: a registration goes
	// before what the socket reads after it, and that before the tab's
	// end (Close). A user message to an idle pairing runs its handling in
	// the sender's goroutine (pairingMailbox), so none is sent under mu,
	// which that handling takes (a watch, a close); it never takes sends.
	sends sync.Mutex

	mu       sync.Mutex // guards the fields below
	pairing  *actor.PID // the pairing actor it registered with; nil while it looks one up
	failures int        // lookups in a row that did not end registered
	// confirmed: the registration is on the node's confirms (confirms.go);
	// nodeConfirms: the pairing's node takes them in one message per node
	// (else the tab is confirmed by a TabRegister of its own).
	confirmed    bool
	nodeConfirms bool
	watchers     []*actor.PID
	// closed: the tab ended. Set under mu, read without it where a
	// message may come back at once from a send made under mu (a dead
	// letter's answer).
	closed atomic.Bool
}

// Accept makes the tab of one socket and registers it with its pairing
// (the lookup runs in the caller's goroutine; the answer is waited for in
// another).
func (h *Hub) Accept(info TabInfo, out Outbox) *Tab {
	t := &Tab{hub: h, out: out, info: info}
	t.pid, _ = h.system.ProcessRegistry.Add(t, "tab"+h.system.ProcessRegistry.NextId())
	t.lookUp(nil)
	return t
}

// Focus reports that the person focused the tab at at.
func (t *Tab) Focus(at time.Time) {
	t.mu.Lock()
	t.info.FocusedAt = at
	t.mu.Unlock()
	t.forward(&wire.TabFocus{AtUnixNano: unixNano(at)})
}

// Forward hands the pairing what the tab said (a result, asking, progress,
// a step…, as the socket read and checked it); focus goes by Focus. To a
// pairing in this process it goes as it is (a result as the socket decoded
// it); to one on another node as its wire form (a result's JSON as the tab
// sent it, which the front end there decodes).
func (t *Tab) Forward(msg protocol.FromTab) { t.forward(msg) }

// forward sends what the tab said (a protocol.FromTab or a wire.FromTab)
// to its pairing, from the tab's pid. While the tab looks its pairing up
// (the last one went away) it is dropped: the actor it was for is gone,
// and with it the calls it was about.
func (t *Tab) forward(m any) {
	t.sends.Lock()
	defer t.sends.Unlock() // a registration (also sent under it) keeps its place
	t.mu.Lock()
	pairing := t.pairing
	t.mu.Unlock()
	if pairing == nil || t.closed.Load() {
		return
	}
	if testHookForwarding != nil {
		testHookForwarding(t)
	}
	if msg, ok := m.(protocol.FromTab); ok && pairing.Address != t.hub.system.Address() {
		m = fromTab(msg)
	}
	t.hub.system.Root.RequestWithCustomSender(pairing, m, t.pid)
}

// testHookForwarding, when set (by a test), runs in forward between its
// check that the tab is open and its send, as net/http's testHook vars do.
var testHookForwarding func(*Tab)

// Close ends the tab: its socket is closed, and its pairing hears that it
// stopped. Its calls in flight go to the browser's other tabs, or wait for
// it to come back. What the tab said before reached the pairing first.
func (t *Tab) Close() {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return
	}
	t.closed.Store(true)
	pairing, watchers := t.pairing, t.watchers
	t.pairing, t.watchers = nil, nil
	t.unconfirmLocked()
	t.mu.Unlock()
	t.hub.system.ProcessRegistry.Remove(t.pid)
	tell := func() {
		if pairing != nil {
			t.systemMessage(pairing, &actor.Unwatch{Watcher: t.pid})
		}
		for _, w := range watchers {
			t.systemMessage(w, &actor.Terminated{Who: t.pid, Why: actor.TerminatedReason_Stopped})
		}
	}
	// After what the socket forwards now (a result read as the tab
	// closed) is sent: its end is not sent ahead of what the tab said (a
	// busy pairing may still handle the end first, system messages going
	// first in its mailbox, as with protoactor's own). A close can come
	// from a pairing's handling run within this tab's own forward (sends
	// held): then its end is told once that forward is done.
	if t.sends.TryLock() {
		tell()
		t.sends.Unlock()
		return
	}
	go func() {
		t.sends.Lock()
		defer t.sends.Unlock()
		tell()
	}()
}

// SendUserMessage takes a message for the tab (actor.Process), in the
// sender's goroutine: it never blocks.
func (t *Tab) SendUserMessage(pid *actor.PID, message any) {
	if t.closed.Load() {
		// As to a stopped actor (a pid keeps its process once it found
		// it): a dead letter, and a request's sender hears so.
		t.hub.system.DeadLetter.SendUserMessage(pid, message)
		return
	}
	_, msg, sender := actor.UnwrapEnvelope(message)
	switch m := msg.(type) {
	case *wire.ToTab:
		t.send(m)
	case protocol.ToTab:
		t.out.Send(m) // from a pairing in this process: nothing to decode
	case *handover:
		if start, _ := t.out.SendHeld(m.call); start != nil {
			m.give(start)
		}
	case *wire.CloseTab:
		t.out.Close(protocol.CloseCode(m.GetCode()))
	case *wire.PairingMoved:
		t.moved(sender, actor.NewPID(m.GetAddress(), m.GetId()))
	case *actor.Touch:
		// A pairing asks whether the tab lives (a lost link took it away).
		if sender != nil {
			t.hub.system.Root.Send(sender, &actor.Touched{Who: t.pid})
		}
	case *actor.PoisonPill:
		t.Close()
	case *actor.DeadLetterResponse:
		// Something the tab forwarded reached a stopped pairing: it is
		// lost with the pairing, whose Terminated makes the tab register
		// anew.
	}
}

// send hands the socket a message of a pairing on another node: a call,
// or any other message as the JSON the pairing made of it.
func (t *Tab) send(m *wire.ToTab) {
	if c := m.GetCall(); c != nil {
		t.out.Send(fromWireCall(c))
		return
	}
	env, err := protocol.DecodeType(m.GetJson())
	var msg protocol.ToTab
	if err == nil {
		msg, err = protocol.DecodeToTab(env, m.GetJson())
	}
	if err != nil {
		// A message a newer build sends, or none the relay makes.
		t.hub.cfg.Logger.Warn("message for a tab dropped: not one this relay sends", "pairing", t.info.Pairing, "err", err)
		return
	}
	t.out.Send(msg)
}

// SendSystemMessage takes protoactor's watches (actor.Process): its pairing
// watches the tab, and the tab hears when its pairing stopped.
func (t *Tab) SendSystemMessage(pid *actor.PID, message any) {
	switch m := message.(type) {
	case *actor.Watch:
		t.mu.Lock()
		if !t.closed.Load() {
			if !slices.ContainsFunc(t.watchers, m.Watcher.Equal) { // a pairing asking whether the tab lives watches again
				t.watchers = append(t.watchers, m.Watcher)
			}
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		t.hub.system.DeadLetter.SendSystemMessage(pid, m) // answers with Terminated
	case *actor.Unwatch:
		t.mu.Lock()
		for i, w := range t.watchers {
			if w.Equal(m.Watcher) {
				t.watchers = append(t.watchers[:i], t.watchers[i+1:]...)
				break
			}
		}
		t.mu.Unlock()
	case *actor.Terminated:
		t.pairingGone(m.Who)
	case *actor.Stop:
		t.Close()
	}
}

// Stop ends the tab (actor.Process).
func (t *Tab) Stop(*actor.PID) { t.Close() }

func (t *Tab) systemMessage(pid *actor.PID, msg any) {
	p, _ := t.hub.system.ProcessRegistry.Get(pid)
	p.SendSystemMessage(pid, msg)
}

// pairingGone looks the pairing up again when the actor the tab registered
// with went away: it rebuilds it.
func (t *Tab) pairingGone(who *actor.PID) { t.leave(who, true) }

// confirmUnanswered looks the pairing up again, as a new tab does, when
// the confirm of its registration with pid was not answered: the router
// tells whether pid still holds the pairing, and the registration's own
// answer (or its absence) what to do next. pid is not taken for gone: a
// confirm lists many tabs, and one lost answer must not replace the actors
// of all their pairings.
func (t *Tab) confirmUnanswered(pid *actor.PID) { t.leave(pid, false) }

// leave stops talking to the pairing actor pid, if the tab still does,
// and looks the pairing up again: past pid when it is gone (stale).
func (t *Tab) leave(pid *actor.PID, stale bool) {
	t.mu.Lock()
	mine := !t.closed.Load() && t.pairing != nil && t.pairing.Equal(pid)
	if mine {
		t.pairing = nil // what the socket reads meanwhile has no actor to go to
		t.unconfirmLocked()
	}
	t.mu.Unlock()
	switch {
	case !mine:
	case stale:
		go t.lookUp(pid)
	default:
		t.systemMessage(pid, &actor.Unwatch{Watcher: t.pid})
		go t.lookUp(nil)
	}
}

// lookUp finds the pairing's actor and registers with it; stale is the
// actor this tab found gone, if any.
func (t *Tab) lookUp(stale *actor.PID) {
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return
	}
	t.failures++
	failed := t.failures > registerAttempts
	t.mu.Unlock()
	if stale != nil {
		t.systemMessage(stale, &actor.Unwatch{Watcher: t.pid})
	}
	if failed {
		t.hub.cfg.Logger.Warn("tab could not register with its pairing", "pairing", t.info.Pairing)
		t.out.Close(protocol.CloseUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	pid, err := t.hub.router.Pairing(ctx, t.info.Pairing, stale)
	cancel()
	if err != nil {
		t.out.Close(protocol.CloseUnavailable)
		return
	}
	f := t.request(pid, true, func() bool {
		if t.closed.Load() {
			return false
		}
		t.pairing = pid
		return true
	})
	if f == nil {
		return
	}
	t.systemMessage(pid, &actor.Watch{Watcher: t.pid}) // unlocked: a pid that is gone answers at once
	go t.answered(pid, f)
}

// request asks pid to hold this tab, in the order of the tab's sends,
// when still (run under mu) holds; nil when it does not. lookedUp: the tab
// looked the pairing up, rather than confirming its registration.
func (t *Tab) request(pid *actor.PID, lookedUp bool, still func() bool) *actor.Future {
	t.sends.Lock()
	defer t.sends.Unlock()
	t.mu.Lock()
	if !still() {
		t.mu.Unlock()
		return nil
	}
	reg := t.registrationLocked(lookedUp)
	t.mu.Unlock()
	return t.hub.system.Root.RequestFuture(pid, reg, registerWait) // unlocked: a pairing here handles it in this goroutine
}

// registrationLocked is the TabRegister that asks a pairing to hold this
// tab.
func (t *Tab) registrationLocked(lookedUp bool) *wire.TabRegister {
	return &wire.TabRegister{TabId: t.info.TabID, FocusedAtUnixNano: unixNano(t.info.FocusedAt),
		TabAddress: t.pid.Address, TabActor: t.pid.Id, LookedUp: lookedUp}
}

// answered waits for pid's answer to a registration. Accepted, the
// registration is confirmed from then on (confirmLocked); refused, the
// socket closes; no answer in time or a dead letter (the pairing had
// stopped, or the request was lost on the way): the tab looks the pairing
// up again, past that actor.
func (t *Tab) answered(pid *actor.PID, f *actor.Future) {
	res, _ := f.Result()
	t.mu.Lock()
	if t.closed.Load() || !pid.Equal(t.pairing) {
		t.mu.Unlock()
		return // an answer to an earlier registration
	}
	switch r := res.(type) {
	case *wire.TabRegistered:
		if !r.GetAccepted() {
			t.mu.Unlock()
			t.out.Close(protocol.CloseTooManyTabs)
			return
		}
		t.failures = 0
		t.nodeConfirms = r.GetNodeConfirms()
		t.confirmLocked(pid)
		t.mu.Unlock()
	default:
		t.pairing = nil
		t.unconfirmLocked()
		t.mu.Unlock()
		t.lookUp(pid)
	}
}

// moved follows a pairing that moved to another node (its node drains),
// this tab among its tabs: the tab talks to the actor that holds it now.
func (t *Tab) moved(from, to *actor.PID) {
	t.mu.Lock()
	if t.closed.Load() || from == nil || !from.Equal(t.pairing) {
		t.mu.Unlock()
		return
	}
	t.pairing = to
	t.nodeConfirms = false // to's build is not known yet: its first confirm's answer tells
	t.confirmLocked(to)
	t.mu.Unlock()
	t.systemMessage(from, &actor.Unwatch{Watcher: t.pid})
	t.systemMessage(to, &actor.Watch{Watcher: t.pid})
}

// confirmLocked puts the registration with pid on the node's confirms
// (confirms.go) when pid is on another node: a pairing there may have
// dropped the tab (a broken connection between the nodes looks to
// protoactor like every actor there stopping) while the tab itself heard
// nothing. A pairing in this process cannot drop the tab unseen: it keeps
// its tabs until it stops (a panic stops it too, see Activations.stop),
// and its stop reaches the tab as Terminated, so the registration of a
// local pairing is not confirmed (issue 13). A pairing that moves away
// (PairingMoved) is confirmed from then on.
func (t *Tab) confirmLocked(pid *actor.PID) {
	if pid.Address == t.pid.Address && !t.hub.cfg.confirmLocal {
		t.unconfirmLocked()
		return
	}
	if !t.confirmed {
		t.confirmed = true
		t.hub.confirms.add(t)
	}
}

func (t *Tab) unconfirmLocked() {
	if t.confirmed {
		t.confirmed = false
		t.hub.confirms.remove(t)
	}
}

// confirmation is what the node's confirms send for the tab: the pairing
// actor it is registered with (nil: none to confirm now), its
// registration, and whether the pairing's node takes TabConfirms.
func (t *Tab) confirmation() (*actor.PID, *wire.TabRegister, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() || t.pairing == nil || !t.confirmed {
		return nil, nil, false
	}
	return t.pairing, t.registrationLocked(false), t.nodeConfirms
}

// confirmNow asks pid again, with a TabRegister of the tab's own, to hold
// the tab, if the tab is still its: the confirm of a pairing whose node
// does not take TabConfirms.
func (t *Tab) confirmNow(pid *actor.PID) {
	f := t.request(pid, false, func() bool { return !t.closed.Load() && pid.Equal(t.pairing) })
	if f != nil {
		t.answered(pid, f)
	}
}
