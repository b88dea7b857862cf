package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/protocol"
)

// The switchboard is where the answers of a node's calls arrive: one
// process per actor system (not an actor: it has no mailbox and no
// goroutine), under a fixed name, that hands each message to the caller
// waiting for its call, on a channel (issue 13: no actor spawned per call).
// Pairings on other nodes watch it once, whatever the calls; it watches
// each pairing its calls wait on, and probes them from one schedule for
// the node instead of a timer per call.

// switchboardName is the switchboard's actor id on every node. A pairing
// keeps its watch of another node's switchboard while it lives (one per
// node), and drops the watch of any other waiter (one actor per call, of
// an older build) with its call.
const switchboardName = "tabrelay-calls"

// watchLinger is how long the switchboard keeps watching a pairing after
// its last call ended: a pairing called again soon costs no new watch. A
// watch left is dropped by a later tick, or when its pairing stops; past
// maxIdleWatches pairings watched, one is dropped with its last call.
const (
	watchLinger    = time.Minute
	maxIdleWatches = 4096
)

type switchboard struct {
	system *actor.ActorSystem
	every  time.Duration // how often a call's pairing is probed
	give   time.Duration // how long a call waits before its safety ends it
	clock  clock.Clock

	mu      sync.Mutex // guards the fields below
	self    *actor.PID
	calls   map[string]*waiting
	watched map[pidKey]*watchedPairing
	timer   clock.Timer // the schedule's next tick; nil when none is armed
}

// waiting is one call the switchboard holds for its caller.
type waiting struct {
	id       string
	pairing  *actor.PID // the actor that holds the call (it may move)
	req      *wire.CallRequest
	accepted bool      // the pairing took the call
	missed   bool      // a probe found the call not (yet) there
	probeAt  time.Time // its next probe
	giveUpAt time.Time // its safety: the pairing ends every call before
	events   []protocol.CallEvent
	keep     bool          // the caller wants events
	signal   chan struct{} // an event is queued
	end      chan any      // the call's last message (capacity 1)
	ended    bool
}

// watchedPairing is a pairing actor the switchboard watches: calls counts
// the calls waiting on it; idle is when the last one ended.
type watchedPairing struct {
	pid   *actor.PID
	calls int
	idle  time.Time
}

// switchboardOf returns system's switchboard, registering it on first use
// (several Callers of one system, in tests, share it).
func switchboardOf(system *actor.ActorSystem, cfg Config) *switchboard {
	return namedProcess(system, switchboardName, func() *switchboard {
		return &switchboard{system: system, every: cfg.ProbeEvery, give: cfg.CallWait + safetyMargin, clock: cfg.Clock,
			calls: map[string]*waiting{}, watched: map[pidKey]*watchedPairing{}}
	})
}

// pid is the switchboard's pid, under the system's address as it is now
// (remote sets it after the system started).
func (sb *switchboard) pid() *actor.PID {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.pidLocked()
}

func (sb *switchboard) pidLocked() *actor.PID {
	if addr := sb.system.Address(); sb.self == nil || sb.self.Address != addr {
		sb.self = actor.NewPID(addr, switchboardName)
	}
	return sb.self
}

// start holds call req for its caller and sends it to pairing.
func (sb *switchboard) start(pairing *actor.PID, id string, req any, events bool) *waiting {
	now := sb.clock.Now()
	w := &waiting{id: id, pairing: pairing, keep: events, probeAt: now.Add(sb.every),
		giveUpAt: now.Add(sb.give), end: make(chan any, 1)}
	if events {
		w.signal = make(chan struct{}, 1)
	}
	sb.mu.Lock()
	sb.calls[w.id] = w
	watch := sb.watchLocked(pairing)
	if sb.timer == nil {
		sb.armLocked(now, w.probeAt)
	}
	self := sb.pidLocked()
	sb.mu.Unlock()
	// The call first: to an idle pairing in this process it is handled in
	// this goroutine (pairingMailbox), and a watch sent before would have
	// started a run of the mailbox's own. A pairing gone before the watch
	// arrives is reported by it all the same (Terminated).
	sb.system.Root.RequestWithCustomSender(pairing, req, self)
	if watch {
		sb.systemMessage(pairing, &actor.Watch{Watcher: self})
	}
	return w
}

// cancel forgets w, whose caller gave up, and tells its pairing (which
// tells the tab), unless the call had ended meanwhile.
func (sb *switchboard) cancel(w *waiting) {
	sb.mu.Lock()
	if w.ended {
		sb.mu.Unlock()
		return
	}
	sb.forgetLocked(w)
	pairing, self := w.pairing, sb.pidLocked()
	sb.mu.Unlock()
	sb.system.Root.RequestWithCustomSender(pairing, &wire.CancelCall{Id: w.id}, self)
}

// takeEvents returns the events queued for w since the last take.
func (sb *switchboard) takeEvents(w *waiting) []protocol.CallEvent {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	ev := w.events
	w.events = nil
	return ev
}

// SendUserMessage hands a message of a call to its caller (actor.Process).
// It runs in the sender's goroutine (a local pairing's, or remote's
// reader): it never blocks.
func (sb *switchboard) SendUserMessage(_ *actor.PID, message any) {
	_, msg, sender := actor.UnwrapEnvelope(message)
	sb.mu.Lock()
	var watch []*actor.PID
	switch m := msg.(type) {
	case *wire.CallAccepted:
		if w := sb.calls[m.GetId()]; w != nil {
			w.accepted = true
		}
	case *wire.CallEvent:
		sb.eventLocked(fromWireEvent(m.GetEvent()))
	case *callEvent:
		sb.eventLocked(m.e)
	case *wire.CallDone:
		if w := sb.calls[m.GetCallId()]; w != nil {
			sb.finishLocked(w, m)
		}
	case *callEnded:
		if w := sb.calls[m.o.CallID]; w != nil {
			sb.finishLocked(w, m)
		}
	case *wire.CallProbeReply:
		sb.probedLocked(m)
	case *wire.PairingMoved:
		// A pairing moved to another node with its calls (its node
		// drains): they wait on the actor that holds it now.
		if sender != nil {
			watch = sb.movedLocked(sender, actor.NewPID(m.GetAddress(), m.GetId()))
		}
	case *actor.DeadLetterResponse:
		// A call's request, or a probe, reached no pairing (an actor of
		// the relay says which; protoactor's own dead letters name none,
		// and the watch of the pairing reports those).
		if m.Target != nil {
			sb.goneLocked(m.Target)
		}
	}
	self := sb.pidLocked()
	sb.mu.Unlock()
	for _, pid := range watch { // unlocked: a pid that is gone answers at once
		sb.systemMessage(pid, &actor.Watch{Watcher: self})
	}
}

// eventLocked queues e for its caller, if it wants events.
func (sb *switchboard) eventLocked(e protocol.CallEvent) {
	if w := sb.calls[e.CallID]; w != nil && w.keep {
		w.events = append(w.events, e)
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}

func (sb *switchboard) probedLocked(m *wire.CallProbeReply) {
	w := sb.calls[m.GetId()]
	if w == nil || m.GetHeld() {
		return
	}
	if !w.accepted && !w.missed {
		// A call its moved pairing forwards may not be there yet: a call
		// not accepted is given one more probe.
		w.missed = true
		return
	}
	// The pairing does not hold this call: its end, or the request
	// itself, was lost on the way.
	sb.finishLocked(w, pairingGone{accepted: w.accepted})
}

// SendSystemMessage hears of watched pairings that stopped (actor.Process);
// Watch and Unwatch of the switchboard itself need nothing: it lives as
// long as its actor system.
func (sb *switchboard) SendSystemMessage(_ *actor.PID, message any) {
	if m, ok := message.(*actor.Terminated); ok {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		delete(sb.watched, keyOf(m.Who))
		sb.goneLocked(m.Who)
	}
}

// Stop does nothing: the switchboard lives as long as its actor system
// (actor.Process).
func (sb *switchboard) Stop(*actor.PID) {}

// goneLocked ends every call waiting on pairing, which is gone: one it had
// not accepted may go to a new activation.
func (sb *switchboard) goneLocked(pairing *actor.PID) {
	for _, w := range sb.calls {
		if w.pairing.Equal(pairing) {
			sb.finishLocked(w, pairingGone{accepted: w.accepted})
		}
	}
}

// movedLocked moves the calls waiting on from to to; it returns the
// pairing to watch now, if any.
func (sb *switchboard) movedLocked(from, to *actor.PID) []*actor.PID {
	now := sb.clock.Now()
	var watch []*actor.PID
	for _, w := range sb.calls {
		if !w.pairing.Equal(from) {
			continue
		}
		if old := sb.releaseLocked(w.pairing, now); old != nil {
			sb.systemMessage(old, &actor.Unwatch{Watcher: sb.pidLocked()})
		}
		w.pairing = to
		if sb.watchLocked(to) {
			watch = append(watch, to)
		}
	}
	return watch
}

// finishLocked hands the caller its call's last message m.
func (sb *switchboard) finishLocked(w *waiting, m any) {
	if w.ended {
		return
	}
	sb.forgetLocked(w)
	w.end <- m
}

func (sb *switchboard) forgetLocked(w *waiting) {
	w.ended = true
	if sb.calls[w.id] == w {
		delete(sb.calls, w.id)
	}
	if len(sb.calls) == 0 && sb.timer != nil {
		sb.timer.Stop() // nothing to probe: no timer runs for an idle node
		sb.timer = nil
	}
	if unwatch := sb.releaseLocked(w.pairing, sb.clock.Now()); unwatch != nil {
		sb.systemMessage(unwatch, &actor.Unwatch{Watcher: sb.pidLocked()}) // an unwatch never answers
	}
}

// watchLocked counts a call waiting on pairing; true: the pairing must be
// watched now.
func (sb *switchboard) watchLocked(pairing *actor.PID) bool {
	key := keyOf(pairing)
	if p := sb.watched[key]; p != nil {
		p.calls++
		return false
	}
	sb.watched[key] = &watchedPairing{pid: pairing, calls: 1}
	return true
}

// releaseLocked counts a call of pairing that ended; it returns the
// pairing to unwatch now, if any.
func (sb *switchboard) releaseLocked(pairing *actor.PID, now time.Time) *actor.PID {
	key := keyOf(pairing)
	p := sb.watched[key]
	if p == nil || p.calls == 0 {
		return nil
	}
	if p.calls--; p.calls > 0 {
		return nil
	}
	p.idle = now
	if len(sb.watched) > maxIdleWatches {
		delete(sb.watched, key)
		return p.pid
	}
	return nil
}

// armLocked arms the schedule's next tick at at.
func (sb *switchboard) armLocked(now, at time.Time) {
	sb.timer = sb.clock.AfterFunc(max(at.Sub(now), 0), sb.tick)
}

// tick probes the calls whose probe is due, ends those past their safety
// (the pairing did not end them: SPEC §3, never left hanging), drops the
// watches of pairings idle for watchLinger, and arms the next tick while
// anything is left to do.
func (sb *switchboard) tick() {
	now := sb.clock.Now()
	type probe struct {
		pairing *actor.PID
		id      string
	}
	var probes []probe
	var unwatch []*actor.PID
	sb.mu.Lock()
	sb.timer = nil
	next := time.Time{}
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, w := range sb.calls {
		switch {
		case !now.Before(w.giveUpAt):
			sb.finishLocked(w, safetyOver{})
			continue
		case !now.Before(w.probeAt):
			probes = append(probes, probe{w.pairing, w.id})
			w.probeAt = now.Add(sb.every)
		}
		soonest(w.probeAt)
	}
	for key, p := range sb.watched {
		if p.calls == 0 && now.Sub(p.idle) >= watchLinger {
			delete(sb.watched, key)
			unwatch = append(unwatch, p.pid)
		}
	}
	if !next.IsZero() {
		sb.armLocked(now, next)
	}
	self := sb.pidLocked()
	sb.mu.Unlock()
	for _, p := range probes {
		sb.system.Root.RequestWithCustomSender(p.pairing, &wire.CallProbe{Id: p.id}, self)
	}
	for _, pid := range unwatch {
		sb.systemMessage(pid, &actor.Unwatch{Watcher: self})
	}
}

// systemMessage sends a system message (a watch) to pid, local or not; a
// pid that is gone answers a watch with Terminated (protoactor's dead
// letters do so).
func (sb *switchboard) systemMessage(pid *actor.PID, msg any) {
	p, _ := sb.system.ProcessRegistry.Get(pid)
	p.SendSystemMessage(pid, msg)
}

// safetyOver ends a call that its pairing did not end in time.
type safetyOver struct{}

// waitingCalls reports how many calls the switchboard holds, and how many
// of them their pairing accepted (tests).
func (sb *switchboard) waitingCalls() (n, accepted int) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for _, w := range sb.calls {
		if w.accepted {
			accepted++
		}
	}
	return len(sb.calls), accepted
}
