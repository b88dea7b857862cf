package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Router finds, or activates, the actor of a pairing. On one node it is
// LocalRouter; across nodes, placement in Redis answers the same question.
type Router interface {
	Pairing(ctx context.Context, id string) (*actor.PID, error)
}

// ErrUnavailable says a pairing cannot be reached now (its node is
// draining, holds as many pairings as it may, or placement is down).
var ErrUnavailable = errors.New("pairing unavailable")

// LocalRouter activates pairing actors in this process: at most one active
// actor per pairing.
//
// Each activation gets a name of its own ("pairing/<id>/<n>"), never reused:
// protoactor puts a named actor into its registry before its mailbox is
// ready, so a message sent under a reused name (an old pid held by a tab or
// a waiter) can reach a half-spawned actor (a data race and a nil
// dispatcher). With fresh names, an old pid only ever reaches dead letters,
// which answer requests with DeadLetterResponse: the sender looks up again.
type LocalRouter struct {
	system *actor.ActorSystem
	cfg    Config
	// stop is the pairings' supervision: a pairing that panics stops (its
	// watchers, tabs and waiters, learn so and rebuild) instead of being
	// restarted empty under the same pid, which would strand its waiters.
	stop actor.SupervisorStrategy

	mu     sync.Mutex // guards the fields below
	active map[string]*actor.PID
	seq    uint64
}

// NewLocalRouter returns a router over system.
func NewLocalRouter(system *actor.ActorSystem, cfg Config) *LocalRouter {
	stop := actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })
	return &LocalRouter{system: system, cfg: cfg.withDefaults(), stop: stop, active: map[string]*actor.PID{}}
}

// Pairing returns the pairing's actor, activating it when it is not active.
// The pid may belong to an actor that is passivating right now: a request
// to it then comes back as a DeadLetterResponse, and the caller asks again.
func (r *LocalRouter) Pairing(_ context.Context, id string) (*actor.PID, error) {
	if r.system.IsStopped() {
		return nil, ErrUnavailable
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if pid, ok := r.active[id]; ok {
		if _, alive := r.system.ProcessRegistry.GetLocal(pid.Id); alive {
			return pid, nil
		}
	}
	if len(r.active) >= r.cfg.MaxPairings {
		return nil, fmt.Errorf("%w: this node holds %d pairings, its limit", ErrUnavailable, r.cfg.MaxPairings)
	}
	r.seq++
	props := actor.PropsFromProducer(newPairing(id, r.cfg, r.release), actor.WithGuardian(r.stop))
	pid, err := r.system.Root.SpawnNamed(props, fmt.Sprintf("pairing/%s/%d", id, r.seq))
	if err != nil {
		return nil, fmt.Errorf("activate pairing: %w", err)
	}
	r.active[id] = pid
	return pid, nil
}

// release forgets a pairing actor that stopped.
func (r *LocalRouter) release(id string, pid *actor.PID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.active[id]; ok && cur.Equal(pid) {
		delete(r.active, id)
	}
}

// Active reports how many pairing actors are active here.
func (r *LocalRouter) Active() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}
