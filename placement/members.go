package placement

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	goredis "github.com/redis/go-redis/v9"
)

// Members is the cluster's membership in Redis: a protoactor
// ClusterProvider. Each node holds a lease, an entry of a sorted set scored
// with its expiry on Redis's clock (so node clocks do not matter), renewed
// at a third of its life. Every node reads the set on the same beat, and at
// once when another node publishes a hint (joined, left), and reports the
// full list to protoactor.
//
// A member is removed by the first node that finds its lease expired, and
// only by a node that has itself reached Redis without a failure for at
// least a lease's life: after Redis was away, every lease looks expired
// (Redis's clock went on), and the live nodes need a beat to renew theirs.
// The remover leaves a tombstone; a node that finds its own tombstone
// exits (Config.Lost), because protoactor never admits a member id again once it
// left, and comes back under a new id.
type Members struct {
	client  goredis.UniversalClient
	keys    keys
	ttl     time.Duration
	log     *slog.Logger
	on      memberEvents
	metrics *Metrics

	// update hands protoactor the member list (the cluster's MemberList).
	update func(cluster.Members)
	self   *cluster.Member
	stop   context.CancelFunc
	done   chan struct{}
	poke   chan struct{}
	joined chan struct{}
	left   atomic.Bool // Shutdown ran

	mu           sync.Mutex // guards the fields below
	alive        map[string]*cluster.Member
	healthySince time.Time // zero: the last contact with Redis failed
	lost         bool
}

// memberEvents is what a Members tells, from its own goroutines.
type memberEvents struct {
	// lost is called (once) when this node's lease was taken away: the
	// node must exit.
	lost func()
	// changed hears every new member list (ids, self included).
	changed func(ids []string)
	// superseded hears the notices that another member replaced an
	// actor's record (Lookup.superseded), sent on the members' channel.
	superseded func(notice string)
}

// newMembers returns the membership of the nodes that share client and
// prefix, with leases of ttl; on hears what happens to it (a nil function
// hears nothing).
func newMembers(client goredis.UniversalClient, prefix string, ttl time.Duration, metrics *Metrics, log *slog.Logger, on memberEvents) *Members {
	if log == nil {
		log = slog.Default()
	}
	return &Members{client: client, keys: keys(prefix), ttl: ttl, log: log, metrics: metrics, on: on,
		poke: make(chan struct{}, 1), joined: make(chan struct{}), done: make(chan struct{}), alive: map[string]*cluster.Member{}}
}

// StartMember registers this node and keeps its lease (ClusterProvider).
func (m *Members) StartMember(cl *cluster.Cluster) error {
	host, port, err := cl.ActorSystem.GetHostPort()
	if err != nil {
		return err
	}
	m.update = cl.MemberList.UpdateClusterTopology
	m.self = &cluster.Member{Id: cl.ActorSystem.ID, Host: host, Port: int32(port), Kinds: cl.GetClusterKinds()}
	m.start()
	return nil
}

func (m *Members) start() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go m.subscribe(ctx)
	go m.run(ctx)
}

// StartClient is not used: every node is a member.
func (m *Members) StartClient(*cluster.Cluster) error {
	return errors.New("placement: every tabrelay node is a member")
}

// Shutdown ends the lease. Graceful: the entry is removed at once and the
// others are told, so that they see this node leave in milliseconds
// instead of a lease's life.
func (m *Members) Shutdown(graceful bool) error {
	if m.stop == nil || !m.left.CompareAndSwap(false, true) {
		return nil
	}
	m.stop()
	<-m.done
	if !graceful {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := leaveScript.Run(ctx, m.client, []string{m.keys.members(), m.keys.info(), m.keys.gone(m.self.Id)}, m.self.Id).Err()
	if err == nil {
		err = m.client.Publish(ctx, m.keys.hint(), "left "+m.self.Id).Err()
	}
	return err
}

// Self is this node's member id.
func (m *Members) Self() string { return m.self.Id }

// Joined is closed once this node's lease is held and the member list read.
func (m *Members) Joined() <-chan struct{} { return m.joined }

// Alive reports whether member id holds a lease, as last read.
func (m *Members) Alive(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.alive[id]
	return ok
}

// Others returns the other live members' actor addresses, shuffled.
func (m *Members) Others() []string {
	m.mu.Lock()
	out := make([]string, 0, len(m.alive))
	for id, mem := range m.alive {
		if id != m.self.Id {
			out = append(out, net.JoinHostPort(mem.Host, strconv.Itoa(int(mem.Port))))
		}
	}
	m.mu.Unlock()
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// Healthy reports whether the last contact with Redis succeeded.
func (m *Members) Healthy() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.healthySince.IsZero()
}

// Poke makes the next poll happen now (a peer's endpoint went away, say).
func (m *Members) Poke() {
	select {
	case m.poke <- struct{}{}:
	default:
	}
}

func (m *Members) run(ctx context.Context) {
	defer close(m.done)
	beat := m.ttl / 3
	failures := 0
	for {
		err := m.beat(ctx)
		wait := beat
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			m.metrics.RedisErrors.Inc()
			if failures == 1 || failures%30 == 0 {
				m.log.Warn("cluster membership: Redis unreachable; keeping the last member list", "err", err, "failures", failures)
			}
			// Back off up to a beat, with jitter: no pile-up of retries.
			wait = min(beat, time.Duration(failures)*50*time.Millisecond)
			wait = wait/2 + rand.N(wait/2+1)
		} else if failures > 0 {
			m.log.Info("cluster membership: Redis reachable again", "after_failures", failures)
			failures = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.poke:
			t.Stop()
		case <-t.C:
		}
	}
}

// beat renews the lease, reads the members, removes expired ones (when
// allowed) and reports the list.
func (m *Members) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.ttl/2)
	defer cancel()
	addr := net.JoinHostPort(m.self.Host, strconv.Itoa(int(m.self.Port)))
	res, err := renewScript.Run(ctx, m.client, []string{m.keys.members(), m.keys.info(), m.keys.gone(m.self.Id)},
		m.self.Id, addr, m.ttl.Milliseconds()).Int64Slice()
	if err != nil {
		m.unhealthy()
		return err
	}
	if res[0] < 0 {
		m.loseLease()
		return nil
	}
	now := res[1]
	if res[0] == 1 {
		m.client.Publish(ctx, m.keys.hint(), "joined "+m.self.Id)
	}
	entries, err := m.client.ZRangeWithScores(ctx, m.keys.members(), 0, -1).Result()
	if err != nil {
		m.unhealthy()
		return err
	}
	info, err := m.client.HGetAll(ctx, m.keys.info()).Result()
	if err != nil {
		m.unhealthy()
		return err
	}
	m.mu.Lock()
	if m.healthySince.IsZero() {
		m.healthySince = time.Now()
	}
	mayRemove := time.Since(m.healthySince) >= m.ttl
	m.mu.Unlock()
	var members cluster.Members
	for _, e := range entries {
		id := e.Member.(string)
		if int64(e.Score) <= now && id != m.self.Id {
			if !mayRemove {
				if mem := m.known(id); mem != nil {
					members = append(members, mem) // not removed yet: still listed
				}
				continue
			}
			removed, err := removeScript.Run(ctx, m.client, []string{m.keys.members(), m.keys.info(), m.keys.gone(id)}, id, now).Int()
			if err == nil && removed == 1 {
				m.log.Info("cluster member's lease expired; removed", "member", id)
				m.client.Publish(ctx, m.keys.hint(), "left "+id)
				continue
			}
			// Not removed (it renewed meanwhile, or Redis failed): it
			// stays listed. protoactor never admits a member id again,
			// so only a member that is gone for sure may leave the list.
			if mem := parseMember(id, info[id]); mem != nil {
				members = append(members, mem)
			}
			continue
		}
		mem := parseMember(id, info[id])
		if mem == nil {
			continue
		}
		members = append(members, mem)
	}
	m.report(members)
	return nil
}

func (m *Members) known(id string) *cluster.Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.alive[id]
}

func (m *Members) unhealthy() {
	m.mu.Lock()
	m.healthySince = time.Time{}
	m.mu.Unlock()
}

func (m *Members) loseLease() {
	m.mu.Lock()
	first := !m.lost
	m.lost = true
	m.mu.Unlock()
	if first {
		m.log.Error("this node's cluster lease lapsed and other nodes removed it; exiting to rejoin under a new id")
		if m.on.lost != nil {
			go m.on.lost()
		}
	}
}

// report hands protoactor the full member list when it changed.
func (m *Members) report(members cluster.Members) {
	alive := make(map[string]*cluster.Member, len(members))
	ids := make([]string, 0, len(members))
	for _, mem := range members {
		alive[mem.Id] = mem
		ids = append(ids, mem.Id)
	}
	slices.Sort(ids)
	m.mu.Lock()
	same := len(alive) == len(m.alive)
	for id := range alive {
		if _, ok := m.alive[id]; !ok {
			same = false
		}
	}
	m.alive = alive
	m.mu.Unlock()
	m.metrics.Members.Set(float64(len(members)))
	select {
	case <-m.joined:
	default:
		close(m.joined)
		same = false
	}
	if same {
		return
	}
	m.update(members)
	if m.on.changed != nil {
		m.on.changed(ids)
	}
}

func (m *Members) subscribe(ctx context.Context) {
	listen(ctx, m.client, m.keys.hint(), func(payload string) {
		if notice, ok := strings.CutPrefix(payload, supersededPrefix); ok {
			if m.on.superseded != nil {
				m.on.superseded(notice)
			}
			return
		}
		m.Poke() // joined or left: read the list now
	})
}

func parseMember(id, addr string) *cluster.Member {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil
	}
	return &cluster.Member{Id: id, Host: host, Port: int32(port), Kinds: []string{Kind}}
}

// renewScript renews a lease: -1 when the member was removed (its
// tombstone is there), 1 when it was not listed (joined), 0 otherwise;
// then Redis's time in ms. KEYS: members, info, gone. ARGV: id, addr, ttl ms.
var renewScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('EXISTS', KEYS[3]) == 1 then return {-1, now} end
local added = redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {added, now}
`)

// removeScript removes a member whose lease is still expired at now, and
// leaves its tombstone for a week: longer than a node cut off from Redis
// stays up unnoticed (it answers 503 meanwhile), so that it cannot come
// back under the id protoactor blocked. KEYS: members, info, gone. ARGV:
// id, now.
var removeScript = goredis.NewScript(`
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], '1', 'PX', 604800000)
return 1
`)

// leaveScript removes a member that leaves, with its tombstone.
// KEYS: members, info, gone. ARGV: id.
var leaveScript = goredis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SET', KEYS[3], '1', 'PX', 604800000)
return 1
`)
