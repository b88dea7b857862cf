package placement

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/actors/wire"
)

// Lookup places pairing actors through Redis: a protoactor IdentityLookup,
// and the actors' Router. One record per pairing says which member's
// actor holds it ("<member> <address> <actor id>"). A pairing without a
// record, or whose record names a member that left or an actor that is
// gone, is activated here ("local first": the node that needs it first is
// normally the one holding its tab's socket) and the record is swapped in
// atomically, compared with what was read: of two nodes racing, one wins,
// the other stops what it started and uses the winner's.
//
// An actor is started before its record names it, so a record always
// names an actor that started (until it stops, when its node deletes the
// record if it still names it).
type Lookup struct {
	client  goredis.UniversalClient
	keys    keys
	members *Members
	metrics *Metrics
	log     *slog.Logger
	acts    *actors.Activations
	system  *actor.ActorSystem

	draining atomic.Bool
	seed     maphash.Seed
	stripes  [64]sync.Mutex // one activation of a pairing at a time here

	mu        sync.Mutex // guards the fields below
	last      []string   // members at the last change, for purging the ones that left
	lastSweep time.Time  // when sweep last ran
	// adopted: the actor each moving actor (by id) was adopted as, so
	// that an ask asked again gets the same answer.
	adopted map[string]*actor.PID
	// seen caches where pairings of other members live, so that a call
	// does not read Redis each time. An entry goes when a caller finds its
	// actor gone (stale) or its member leaves.
	seen map[string]seenAt
}

type seenAt struct {
	member string
	pid    *actor.PID
}

// seenMax bounds the cache; when full it starts again empty.
const seenMax = 100_000

// newLookup returns placement over client under prefix, with its own
// parts: the activations of this node's pairing actors (acfg), whose
// stops it hears, and the membership (leases of ttl; lost is called when
// this node's lease was taken away), whose changes it hears.
func newLookup(system *actor.ActorSystem, client goredis.UniversalClient, prefix string, ttl time.Duration, acfg actors.Config,
	lost func(), metrics *Metrics, log *slog.Logger) *Lookup {
	checkPrefix(prefix)
	if log == nil {
		log = slog.Default()
	}
	l := &Lookup{client: client, keys: keys(prefix), system: system, metrics: metrics, log: log, seed: maphash.MakeSeed(),
		seen: map[string]seenAt{}, adopted: map[string]*actor.PID{}}
	l.acts = actors.NewActivations(system, acfg, l.released)
	l.members = newMembers(client, prefix, ttl, metrics, log, memberEvents{lost: lost, changed: l.membersChanged, superseded: l.superseded})
	return l
}

// Activations are the pairing actors active on this node.
func (l *Lookup) Activations() *actors.Activations { return l.acts }

// Setup starts the activator (IdentityLookup).
func (l *Lookup) Setup(*cluster.Cluster, []string, bool) {
	props := actor.PropsFromFunc(l.activator)
	if _, err := l.system.Root.SpawnNamed(props, activatorName); err != nil {
		l.log.Error("placement activator did not start", "err", err)
	}
}

// Shutdown does nothing: records go with their actors (IdentityLookup).
func (l *Lookup) Shutdown() {}

// Get returns the pairing's actor, or nil (IdentityLookup).
func (l *Lookup) Get(ci *cluster.ClusterIdentity) *actor.PID {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pid, _ := l.Pairing(ctx, ci.Identity, nil)
	return pid
}

// RemovePid forgets pid as the pairing's actor (IdentityLookup).
func (l *Lookup) RemovePid(ci *cluster.ClusterIdentity, pid *actor.PID) {
	l.released(ci.Identity, pid, false)
}

// Drain stops activating pairings here: from now on they are activated on
// another member.
func (l *Lookup) Drain() { l.draining.Store(true) }

// Pairing returns the pairing's actor (actors.Router), activating it when
// it has none. stale, when not nil, is an actor of the pairing the caller
// found gone: a record that still names it is replaced.
func (l *Lookup) Pairing(ctx context.Context, id string, stale *actor.PID) (*actor.PID, error) {
	if pid, ok := l.acts.Active(id); ok {
		l.metrics.Lookups.WithLabelValues("local").Inc()
		return pid, nil
	}
	if pid, ok := l.cached(id, stale); ok {
		l.metrics.Lookups.WithLabelValues("remote").Inc()
		return pid, nil
	}
	if l.draining.Load() {
		return l.pairingElsewhere(ctx, id, stale)
	}
	mu := &l.stripes[maphash.String(l.seed, id)%uint64(len(l.stripes))]
	mu.Lock()
	defer mu.Unlock()
	if pid, ok := l.acts.Active(id); ok {
		l.metrics.Lookups.WithLabelValues("local").Inc()
		return pid, nil
	}
	rec, err := l.client.Get(ctx, l.keys.record(id)).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, l.failed(err)
	}
	for attempt := 0; attempt < 3; attempt++ {
		var old *actor.PID // the live actor a replaced record named, if any
		var oldMember string
		if rec != "" {
			if pid, ok := l.elsewhere(ctx, id, rec, stale); ok {
				return pid, nil
			}
			// Ours but gone, its member left, moved (its node drained), or
			// the caller found it gone.
			member, pid, ok := parseRecord(rec)
			if ok && member != l.members.Self() && l.members.Alive(member) {
				old, oldMember = pid, member
			}
			l.log.Info("placement: replacing a pairing's record", "pairing", id, "reason", replaceReason(rec, member, ok, l.members.Self(), ok && pid.Equal(stale)))
		}
		pid, won, cur, err := l.activateHere(ctx, id, rec)
		if err != nil {
			return nil, l.failed(err)
		}
		if won {
			l.metrics.Lookups.WithLabelValues("activated").Inc()
			l.metrics.Activations.Inc()
			if old != nil {
				// Taken for gone, yet its member lives: if the actor
				// still runs, it must not go on holding tabs. The link
				// that made it look gone may drop this message, so its
				// member hears it over Redis too.
				l.system.Root.Send(old, &wire.Superseded{})
				l.publishSuperseded(oldMember, id, old)
			}
			return pid, nil
		}
		l.metrics.Lookups.WithLabelValues("raced").Inc()
		rec, stale = cur, nil // another node won: use its record
	}
	return nil, l.failed(errors.New("the pairing's record kept changing"))
}

func (l *Lookup) failed(err error) error {
	l.metrics.Lookups.WithLabelValues("failed").Inc()
	if isRedisError(err) {
		l.metrics.RedisErrors.Inc()
	}
	return fmt.Errorf("%w: placement: %v", actors.ErrUnavailable, err)
}

// isRedisError tells Redis's failures from the node's own refusals (a
// limit, a draining node), a caller that gave up, and a lost race.
func isRedisError(err error) bool {
	var redisErr goredis.Error
	var netErr net.Error
	return errors.As(err, &redisErr) || errors.As(err, &netErr) || errors.Is(err, goredis.ErrClosed) || errors.Is(err, goredis.ErrPoolTimeout)
}

// activateHere starts the pairing here and swaps its record in if the
// record is still expected. won is false when another node's record was
// there (cur); what was started here is stopped then.
func (l *Lookup) activateHere(ctx context.Context, id, expected string) (pid *actor.PID, won bool, cur string, err error) {
	pid, err = l.acts.Activate(id, expected != "")
	if err != nil {
		return nil, false, "", err
	}
	value := record(l.members.Self(), pid)
	prevSet := l.keys.of(l.members.Self()) // the set the pairing leaves, if any
	if member, _, ok := parseRecord(expected); ok {
		prevSet = l.keys.of(member)
	}
	res, err := claimScript.Run(ctx, l.client, []string{l.keys.record(id), l.keys.of(l.members.Self()), prevSet}, expected, value, id).Slice()
	if err != nil || len(res) != 2 {
		l.system.Root.Stop(pid)
		if err == nil {
			err = fmt.Errorf("claim answered %v", res)
		}
		return nil, false, "", err
	}
	if n, _ := res[0].(int64); n == 1 {
		return pid, true, "", nil
	}
	l.system.Root.Stop(pid)
	cur, _ = res[1].(string)
	return nil, false, cur, nil
}

// pairingElsewhere is Pairing on a draining node: the pairing's actor on
// another member, or one that member activates. No stripe lock: nothing
// starts here, and asking another member may take seconds.
func (l *Lookup) pairingElsewhere(ctx context.Context, id string, stale *actor.PID) (*actor.PID, error) {
	rec, err := l.client.Get(ctx, l.keys.record(id)).Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, l.failed(err)
	}
	if pid, ok := l.elsewhere(ctx, id, rec, stale); ok {
		return pid, nil
	}
	return l.activateElsewhere(ctx, id, stale)
}

// elsewhere returns the actor rec names when it lives on another member
// that holds its lease, and the caller did not find it gone.
func (l *Lookup) elsewhere(ctx context.Context, id, rec string, stale *actor.PID) (*actor.PID, bool) {
	member, pid, ok := parseRecord(rec)
	if !ok || member == l.members.Self() || pid.Equal(stale) || !l.memberAlive(ctx, member) {
		return nil, false
	}
	l.metrics.Lookups.WithLabelValues("remote").Inc()
	l.remember(id, member, pid)
	return pid, true
}

// cached returns where the pairing was last found on another member, if
// that member is still alive and the caller did not find it gone.
func (l *Lookup) cached(id string, stale *actor.PID) (*actor.PID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.seen[id]
	if !ok {
		return nil, false
	}
	if at.pid.Equal(stale) || !l.members.Alive(at.member) {
		delete(l.seen, id)
		return nil, false
	}
	return at.pid, true
}

func (l *Lookup) remember(id, member string, pid *actor.PID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) >= seenMax {
		clear(l.seen)
	}
	l.seen[id] = seenAt{member: member, pid: pid}
}

// memberAlive says whether member holds a lease: as this node last read
// the list, or, for a member it does not know (it may have joined since),
// as Redis says now.
func (l *Lookup) memberAlive(ctx context.Context, member string) bool {
	if l.members.Alive(member) {
		return true
	}
	held, err := leaseHeldScript.Run(ctx, l.client, []string{l.keys.members()}, member).Int()
	if err == nil && held == 1 {
		l.members.Poke() // a member joined that this node has not read yet
		return true
	}
	return false
}

// leaseHeldScript: 1 when member's lease is listed and not expired on
// Redis's clock. KEYS: members. ARGV: member.
var leaseHeldScript = goredis.NewScript(`
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(score) > now then return 1 end
return 0
`)
