package placement

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/actors/wire"
)

// Moves: a draining node has the others activate its pairings
// (activateElsewhere) and adopt the ones it moves with their calls (the
// activator, adopt); a member that took another's actor for gone tells it
// so over Redis (Superseded).

// activatorName is the actor on every node that activates a pairing there
// for a node that must not (it drains).
const activatorName = "placement-activator"

// activateElsewhere asks the other members, in random order, to activate
// the pairing (this node drains).
func (l *Lookup) activateElsewhere(ctx context.Context, id string, stale *actor.PID) (*actor.PID, error) {
	ask := &wire.Activate{Pairing: id}
	if stale != nil {
		ask.StaleAddress, ask.StaleId = stale.Address, stale.Id
	}
	for _, addr := range l.members.Others() {
		wait := 2 * time.Second
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			wait = time.Until(d)
		}
		if wait <= 0 {
			break
		}
		res, err := l.system.Root.RequestFuture(actor.NewPID(addr, activatorName), ask, wait).Result()
		if a, ok := res.(*wire.Activated); err == nil && ok && a.GetError() == "" {
			l.metrics.Lookups.WithLabelValues("remote").Inc() // the other member counts the activation
			return actor.NewPID(a.GetAddress(), a.GetId()), nil
		}
	}
	l.metrics.Lookups.WithLabelValues("failed").Inc()
	return nil, fmt.Errorf("%w: this node drains and no other member took the pairing", actors.ErrUnavailable)
}

// activator activates pairings for draining members, and adopts the
// pairings they move here with their calls. It answers from a goroutine:
// an activation waits on Redis, and the mailbox must not.
func (l *Lookup) activator(ctx actor.Context) {
	if ctx.Sender() == nil {
		return
	}
	var do func(context.Context) (*actor.PID, error)
	switch m := ctx.Message().(type) {
	case *wire.Activate:
		do = func(actx context.Context) (*actor.PID, error) { return l.Pairing(actx, m.GetPairing(), staleOf(m)) }
	case *wire.Adopt:
		do = func(actx context.Context) (*actor.PID, error) { return l.adopt(actx, m) }
	default:
		return
	}
	sender, root := ctx.Sender(), ctx.ActorSystem().Root
	_, adopt := ctx.Message().(*wire.Adopt)
	go func() {
		actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var res *wire.Activated
		if l.draining.Load() {
			res = &wire.Activated{Error: "draining"}
		} else if pid, err := do(actx); err != nil {
			res = &wire.Activated{Error: err.Error()}
		} else {
			res = &wire.Activated{Address: pid.Address, Id: pid.Id, Settles: adopt}
		}
		root.Send(sender, res)
	}()
}

// adopt starts here a pairing that a draining member moves, with its
// state, and swaps its record from the moving actor to the new one. If the
// record names anything else, the new actor stops and the move fails.
//
// An ask asked again (its answer was lost) gets the same actor: while
// that actor holds the pairing, the record names it.
func (l *Lookup) adopt(ctx context.Context, m *wire.Adopt) (*actor.PID, error) {
	id := m.GetState().GetPairing()
	mu := &l.stripes[maphash.String(l.seed, id)%uint64(len(l.stripes))]
	mu.Lock()
	defer mu.Unlock()
	l.mu.Lock()
	prev := l.adopted[m.GetFromId()]
	l.mu.Unlock()
	if pid, ok := l.acts.Active(id); ok {
		if pid.Equal(prev) {
			// Adopted already, the first answer lost. Its claim won: a
			// record that cannot be read now is taken to name it still.
			if names, err := l.recordNames(id, pid); names || (err != nil && !errors.Is(err, goredis.Nil)) {
				return pid, nil
			}
		}
		// An actor of the pairing lives here already (the record named it
		// once): starting the moved one would stop it, calls and all,
		// before the claim even knows which of the two the record names.
		return nil, errors.New("this node holds another actor of the pairing")
	}
	pid, err := l.acts.Adopt(m.GetState())
	if err != nil {
		return nil, err
	}
	expected := record(m.GetFromMember(), actor.NewPID(m.GetFromAddress(), m.GetFromId()))
	value := record(l.members.Self(), pid)
	res, err := claimScript.Run(ctx, l.client, []string{l.keys.record(id), l.keys.of(l.members.Self()), l.keys.of(m.GetFromMember())},
		expected, value, id).Slice()
	won := err == nil && len(res) == 2 && res[0] == int64(1)
	if err != nil {
		won, _ = l.recordNames(id, pid) // the script may have run, its answer lost
	}
	if !won {
		// Gone before the stripe is free: the mover's next ask finds no
		// actor of the pairing here.
		_ = l.system.Root.StopFuture(pid).Wait()
		if err != nil {
			return nil, l.failed(err)
		}
		return nil, errors.New("the pairing's record names another actor")
	}
	l.mu.Lock()
	if len(l.adopted) >= seenMax {
		clear(l.adopted)
	}
	l.adopted[m.GetFromId()] = pid
	l.mu.Unlock()
	l.metrics.Activations.Inc()
	l.log.Info("placement: adopted a pairing with its calls", "pairing", id, "from", m.GetFromMember(), "calls", len(m.GetState().GetCalls()))
	return pid, nil
}

// Adopters returns the activators of the other members, in random order,
// to take a pairing over: a member that refuses (it drains too) is
// followed by the next.
func (l *Lookup) Adopters() []*actor.PID {
	var out []*actor.PID
	for _, addr := range l.members.Others() {
		out = append(out, actor.NewPID(addr, activatorName))
	}
	return out
}

func staleOf(m *wire.Activate) *actor.PID {
	if m.GetStaleId() == "" {
		return nil
	}
	return actor.NewPID(m.GetStaleAddress(), m.GetStaleId())
}

// supersededPrefix starts a notice on the members' channel that a member's
// actor of a pairing was replaced: "superseded <member> <pairing> <actor id>".
const supersededPrefix = "superseded "

func (l *Lookup) publishSuperseded(member, pairing string, old *actor.PID) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	notice := supersededPrefix + member + " " + pairing + " " + old.Id
	if err := l.client.Publish(ctx, l.keys.hint(), notice).Err(); err != nil {
		l.log.Warn("placement: superseded notice not published", "pairing", pairing, "err", err)
	}
}

// superseded stops this node's actor that a notice names (Members
// hears the notices): another member took its pairing's record.
func (l *Lookup) superseded(notice string) {
	parts := strings.Fields(notice)
	if len(parts) != 3 || parts[0] != l.members.Self() {
		return
	}
	if pid, ok := l.acts.Active(parts[1]); ok && pid.Id == parts[2] {
		l.system.Root.Send(pid, &wire.Superseded{})
	}
}
