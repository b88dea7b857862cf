package actors

import (
	"context"
	"errors"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Router finds, or activates, the actor of a pairing. On one node it is
// LocalRouter; across nodes, placement in Redis (package placement)
// answers the same question.
//
// stale, when not nil, is an actor of the pairing that the caller found
// gone (its request came back as a dead letter, or it terminated): a
// router that remembers where pairings live must not answer it again.
type Router interface {
	Pairing(ctx context.Context, id string, stale *actor.PID) (*actor.PID, error)
}

// ErrUnavailable says a pairing cannot be reached now (its node is
// draining, holds as many pairings as it may, or placement is down).
var ErrUnavailable = errors.New("pairing unavailable")

// LocalRouter activates every pairing in this process: the router of a
// single node.
type LocalRouter struct {
	*Activations
	mu sync.Mutex // one activation at a time
}

// NewLocalRouter returns a router over system.
func NewLocalRouter(system *actor.ActorSystem, cfg Config) *LocalRouter {
	return &LocalRouter{Activations: NewActivations(system, cfg, nil)}
}

// Pairing returns the pairing's actor, activating it when it is not active.
// The pid may belong to an actor that is passivating right now: a request
// to it then comes back as a DeadLetterResponse, and the caller asks again.
// stale needs no care here: an actor that is gone is not active.
func (r *LocalRouter) Pairing(_ context.Context, id string, _ *actor.PID) (*actor.PID, error) {
	if pid, ok := r.Active(id); ok {
		return pid, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if pid, ok := r.Active(id); ok {
		return pid, nil
	}
	return r.Activate(id, false)
}
