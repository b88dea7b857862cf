package placement

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/actors/wire"
)

// activatorName is the actor on every node that activates a pairing there
// for a node that must not (it drains).
const activatorName = "placement-activator"

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

// NewLookup returns placement over client under prefix.
func NewLookup(client goredis.UniversalClient, prefix string, members *Members, metrics *Metrics, log *slog.Logger) *Lookup {
	checkPrefix(prefix)
	if log == nil {
		log = slog.Default()
	}
	return &Lookup{client: client, keys: keys(prefix), members: members, metrics: metrics, log: log, seed: maphash.MakeSeed(),
		seen: map[string]seenAt{}, adopted: map[string]*actor.PID{}}
}

// Use sets the activations this node starts pairings with; their stops
// must be reported to Released.
func (l *Lookup) Use(acts *actors.Activations) { l.acts = acts }

// Setup starts the activator (IdentityLookup).
func (l *Lookup) Setup(cl *cluster.Cluster, _ []string, _ bool) {
	l.system = cl.ActorSystem
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
	l.Released(ci.Identity, pid, false)
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

// Superseded stops this node's actor that a notice names (Members
// hears the notices): another member took its pairing's record.
func (l *Lookup) Superseded(notice string) {
	parts := strings.Fields(notice)
	if len(parts) != 3 || parts[0] != l.members.Self() {
		return
	}
	if pid, ok := l.acts.Active(parts[1]); ok && pid.Id == parts[2] {
		l.system.Root.Send(pid, &wire.Superseded{})
	}
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

// recordNames reports whether the pairing's record names this member's
// actor pid. It reads on time of its own: the ask's may be up.
func (l *Lookup) recordNames(id string, pid *actor.PID) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rec, err := l.client.Get(ctx, l.keys.record(id)).Result()
	return err == nil && rec == record(l.members.Self(), pid), err
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

// Released deletes the record of a pairing actor of this node that
// stopped, if the record still names it. An actor that handed off (its
// node drains) leaves a "moved" mark instead, for movedLife: the next
// activation knows the pairing's tabs are on their way back.
func (l *Lookup) Released(id string, pid *actor.PID, handedOff bool) {
	value := record(l.members.Self(), pid)
	mark := ""
	if handedOff {
		mark = movedMark + l.members.Self()
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := releaseScript.Run(ctx, l.client, []string{l.keys.record(id), l.keys.of(l.members.Self())}, value, id, mark, movedLife.Milliseconds()).Err()
		if err != nil {
			// The record stays; whoever finds it next finds its actor
			// gone and replaces it.
			l.metrics.RedisErrors.Inc()
		}
	}()
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

// MembersChanged purges the records of members that left (Members.Changed).
func (l *Lookup) MembersChanged(ids []string) {
	l.mu.Lock()
	prev := l.last
	l.last = ids
	for id, at := range l.seen {
		if !slices.Contains(ids, at.member) {
			delete(l.seen, id)
		}
	}
	l.mu.Unlock()
	for _, id := range prev {
		if !slices.Contains(ids, id) {
			go l.purge(id)
		}
	}
	l.mu.Lock()
	due := time.Since(l.lastSweep) >= sweepEvery
	if due {
		l.lastSweep = time.Now()
	}
	l.mu.Unlock()
	if due {
		go l.sweep()
	}
}

// sweepEvery is how often a node looks for record sets nobody purged.
const sweepEvery = 10 * time.Minute

// sweep purges the record sets of members that hold no lease at all and
// that nobody purged: members that died while no node up now listed them
// (every node restarted at once), and purges that failed. A member with a
// lease entry, even an expired one, is left to the removal that follows.
func (l *Lookup) sweep() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := l.keys.of("")
	var scanner goredis.Cmdable = l.client
	if cc, ok := l.client.(*goredis.ClusterClient); ok {
		// A cluster client's SCAN asks whichever node it picks; every
		// {placement} key lives in one slot: ask its master.
		m, err := cc.MasterForKey(ctx, prefix)
		if err != nil {
			l.metrics.RedisErrors.Inc()
			l.log.Warn("placement: looking for records nobody purged failed; trying again later", "err", err)
			return
		}
		scanner = m
	}
	iter := scanner.Scan(ctx, 0, globEscape(prefix)+"*", 500).Iterator()
	for iter.Next(ctx) {
		member := strings.TrimPrefix(iter.Val(), prefix)
		if member == l.members.Self() || l.members.Alive(member) {
			continue
		}
		if err := l.client.ZScore(ctx, l.keys.members(), member).Err(); errors.Is(err, goredis.Nil) {
			l.purge(member)
		}
	}
	if err := iter.Err(); err != nil {
		l.metrics.RedisErrors.Inc()
		l.log.Warn("placement: looking for records nobody purged failed; trying again later", "err", err)
	}
}

// globEscape quotes the characters SCAN's MATCH pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// purge deletes the records that still name member, in batches.
func (l *Lookup) purge(member string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	total := 0
	for {
		n, err := purgeScript.Run(ctx, l.client, []string{l.keys.of(member)}, member, l.keys.record(""), 500,
			movedMark+member, movedLife.Milliseconds()).Int()
		if err != nil {
			l.metrics.RedisErrors.Inc()
			l.log.Warn("placement: purging a left member's records failed; they are replaced when found", "member", member, "err", err)
			return
		}
		total += n
		if n == 0 {
			break
		}
	}
	if total > 0 {
		l.log.Info("placement: records of a member that left purged", "member", member, "records", total)
	}
}

// record is the activation record naming member's actor pid; parseRecord
// reads it back.
func record(member string, pid *actor.PID) string {
	return member + " " + pid.Address + " " + pid.Id
}

func parseRecord(rec string) (member string, pid *actor.PID, ok bool) {
	parts := strings.SplitN(rec, " ", 3)
	if len(parts) != 3 {
		return "", nil, false
	}
	return parts[0], actor.NewPID(parts[1], parts[2]), true
}

// claimScript swaps a pairing's record in when it still is what the
// caller read ("" for none): {1, new} when swapped, {0, current} when not.
// The pairing moves from the previous owner's set to this member's.
// KEYS: record, this member's set, the previous owner's set. ARGV:
// expected, new, pairing id.
var claimScript = goredis.NewScript(`
local cur = redis.call('GET', KEYS[1]) or ''
if cur ~= ARGV[1] then return {0, cur} end
redis.call('SET', KEYS[1], ARGV[2])
if KEYS[3] ~= KEYS[2] then redis.call('SREM', KEYS[3], ARGV[3]) end
redis.call('SADD', KEYS[2], ARGV[3])
return {1, ARGV[2]}
`)

// releaseScript deletes a record that still names the stopped actor, or
// replaces it with a mark that expires. KEYS: record, the member's set.
// ARGV: value, pairing id, mark ("" to delete), mark's life in ms.
var releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if ARGV[3] == '' then
    redis.call('DEL', KEYS[1])
  else
    redis.call('SET', KEYS[1], ARGV[3], 'PX', tonumber(ARGV[4]))
  end
  redis.call('SREM', KEYS[2], ARGV[2])
  return 1
end
return 0
`)

// movedMark starts the mark a record leaves when its actor handed off or
// its member left: "moved <member>".
const movedMark = "moved "

// movedLife is how long a mark lasts: far longer than tabs take to come
// back, short enough not to pile up.
const movedLife = 10 * time.Minute

// replaceReason says why a record is replaced, for the log.
func replaceReason(rec, member string, parsed bool, self string, stale bool) string {
	switch {
	case strings.HasPrefix(rec, movedMark):
		return "moved (its node drained or left)"
	case !parsed:
		return "unreadable"
	case member == self:
		return "its actor here stopped"
	case stale:
		return "the caller found its actor gone"
	}
	return "its member left"
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

func staleOf(m *wire.Activate) *actor.PID {
	if m.GetStaleId() == "" {
		return nil
	}
	return actor.NewPID(m.GetStaleAddress(), m.GetStaleId())
}

// purgeScript takes up to ARGV[3] pairing ids off a left member's set and
// marks their records moved when they still name it (the next activation
// then knows the tabs are coming back). Every key is under the {placement}
// tag (one slot). KEYS: the member's set. ARGV: member, record key prefix,
// batch, mark, mark's life in ms.
var purgeScript = goredis.NewScript(`
local ids = redis.call('SPOP', KEYS[1], tonumber(ARGV[3]))
local owner = ARGV[1] .. ' '
for _, id in ipairs(ids) do
  local key = ARGV[2] .. id
  local cur = redis.call('GET', key)
  if cur and string.sub(cur, 1, #owner) == owner then
    redis.call('SET', key, ARGV[4], 'PX', tonumber(ARGV[5]))
  end
end
return #ids
`)

// Check is placement's side of /debug/check: every pairing active here
// should be named by its record, and every record naming this member
// should name an active actor.
type Check struct {
	Active            int   `json:"active"`            // pairing actors active here
	Recorded          int   `json:"recorded"`          // of them, named by their record
	RecordedElsewhere int   `json:"recordedElsewhere"` // active here, but the record names another actor
	Unrecorded        int   `json:"unrecorded"`        // active here, no record at all
	RecordsHere       int64 `json:"recordsHere"`       // records this member's set holds
}

// Check compares the pairings active here with their records.
func (l *Lookup) Check(ctx context.Context) (Check, error) {
	var c Check
	ids, pids := []string{}, []*actor.PID{}
	l.acts.Each(func(id string, pid *actor.PID) { ids, pids = append(ids, id), append(pids, pid) })
	c.Active = len(ids)
	pipe := l.client.Pipeline()
	gets := make([]*goredis.StringCmd, len(ids))
	for i, id := range ids {
		gets[i] = pipe.Get(ctx, l.keys.record(id))
	}
	card := pipe.SCard(ctx, l.keys.of(l.members.Self()))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return c, err
	}
	for i, g := range gets {
		rec, err := g.Result()
		if err != nil {
			c.Unrecorded++
			continue
		}
		member, pid, ok := parseRecord(rec)
		if ok && member == l.members.Self() && pid.Id == pids[i].Id {
			c.Recorded++
		} else {
			c.RecordedElsewhere++
		}
	}
	c.RecordsHere = card.Val()
	return c, nil
}
