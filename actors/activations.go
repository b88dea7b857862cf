package actors

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tabrelay/tabrelay/actors/wire"
)

// Activations are the pairing actors active in this process: at most one
// per pairing, at most MaxPairings in all. A router decides where a pairing
// lives; Activations start and count the ones that live here.
//
// Each activation gets a name of its own ("pairing/<id>/<n>"), never reused:
// protoactor puts a named actor into its registry before its mailbox is
// ready, so a message sent under a reused name (an old pid held by a tab or
// a waiter) can reach a half-spawned actor (a data race and a nil
// dispatcher). With fresh names, an old pid only ever reaches dead letters,
// which answer requests with DeadLetterResponse: the sender looks up again.
type Activations struct {
	system *actor.ActorSystem
	cfg    Config
	// stop is the pairings' supervision: a pairing that panics stops (its
	// watchers, tabs and waiters, learn so and rebuild) instead of being
	// restarted empty under the same pid, which would strand its waiters.
	stop actor.SupervisorStrategy
	// released, when set, hears of every activation that stopped (after
	// it left the map), and whether it stopped to hand off (its node
	// drains) rather than because it was idle.
	released func(id string, pid *actor.PID, handedOff bool)

	mu     sync.Mutex // guards the fields below
	active map[string]*actor.PID
	// closed: the node handed its pairings off; an activation that comes
	// after would never be told to.
	closed atomic.Bool
}

// activationSeq numbers activations across the process, so that two
// Activations of one actor system (tests of a move) never share a name.
var activationSeq atomic.Uint64

// NewActivations returns the activations of system; released, when not
// nil, is told of each pairing actor that stopped.
func NewActivations(system *actor.ActorSystem, cfg Config, released func(id string, pid *actor.PID, handedOff bool)) *Activations {
	stop := actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })
	cfg = cfg.withDefaults()
	confirmsOf(system, cfg) // other nodes confirm their tabs with the pairings here there
	return &Activations{system: system, cfg: cfg, stop: stop, released: released, active: map[string]*actor.PID{}}
}

// Active returns the pairing's actor when it is active here and alive.
func (a *Activations) Active(id string) (*actor.PID, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.activeLocked(id)
}

func (a *Activations) activeLocked(id string) (*actor.PID, bool) {
	pid, ok := a.active[id]
	if !ok {
		return nil, false
	}
	_, alive := a.system.ProcessRegistry.GetLocal(pid.Id)
	return pid, alive
}

// Activate starts an actor of the pairing here, under a name of its own,
// unless the node holds as many pairings as it may or its actor system
// stopped. An actor of the pairing still active here is stopped first: the
// new one holds the pairing from now on. rebuilt says the pairing's last
// actor went away (its tabs are coming back).
func (a *Activations) Activate(id string, rebuilt bool) (*actor.PID, error) {
	if a.system.IsStopped() {
		return nil, ErrUnavailable
	}
	return a.spawn(id, newPairing(id, a.cfg, rebuilt, nil, a.release))
}

// Adopt starts an actor of a pairing that moves here from a draining node,
// with the state it had there (Activate's rules apply).
func (a *Activations) Adopt(state *wire.PairingState) (*actor.PID, error) {
	if a.system.IsStopped() {
		return nil, ErrUnavailable
	}
	id := state.GetPairing()
	return a.spawn(id, newPairing(id, a.cfg, false, state, a.release))
}

func (a *Activations) spawn(id string, producer actor.Producer) (*actor.PID, error) {
	props := actor.PropsFromProducer(producer, actor.WithGuardian(a.stop), actor.WithMailbox(newPairingMailbox))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed.Load() {
		return nil, fmt.Errorf("%w: this node drains", ErrUnavailable)
	}
	old, alive := a.activeLocked(id)
	if !alive && len(a.active) >= a.cfg.MaxPairings {
		return nil, fmt.Errorf("%w: this node holds %d pairings, its limit", ErrUnavailable, a.cfg.MaxPairings)
	}
	if alive {
		a.system.Root.Stop(old)
	}
	started, err := a.system.Root.SpawnNamed(props, fmt.Sprintf("pairing/%s/%d", id, activationSeq.Add(1)))
	if err != nil {
		return nil, fmt.Errorf("activate pairing: %w", err)
	}
	a.active[id] = started
	return started, nil
}

// release forgets a pairing actor that stopped.
func (a *Activations) release(id string, pid *actor.PID, handedOff bool) {
	a.mu.Lock()
	if cur, ok := a.active[id]; ok && cur.Equal(pid) {
		delete(a.active, id)
	}
	a.mu.Unlock()
	if a.released != nil {
		a.released(id, pid, handedOff)
	}
}

// Count reports how many pairing actors are active here.
func (a *Activations) Count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.active)
}

// Each calls fn with every pairing active here (a copy: fn may block).
func (a *Activations) Each(fn func(id string, pid *actor.PID)) {
	a.mu.Lock()
	all := make(map[string]*actor.PID, len(a.active))
	for id, pid := range a.active {
		all[id] = pid
	}
	a.mu.Unlock()
	for id, pid := range all {
		fn(id, pid)
	}
}

// HandOff tells every pairing active here that the node drains: one
// without calls stops (its tabs activate it again where they are now); one
// with calls moves to one of the nodes whose activators adopters returns
// (none: it stops once its calls are done). member is this node's member
// id. From now on nothing is activated here.
func (a *Activations) HandOff(adopters func() []*actor.PID, member string) {
	a.closed.Store(true)
	a.mu.Lock()
	pids := make([]*actor.PID, 0, len(a.active))
	for _, pid := range a.active {
		pids = append(pids, pid)
	}
	a.mu.Unlock()
	for _, pid := range pids {
		h := &handOff{member: member}
		if adopters != nil {
			h.adopters = adopters()
		}
		a.system.Root.Send(pid, h)
	}
}
