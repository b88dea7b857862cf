package placement

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/actors/wire"
	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/redistest"
)

var quiet = slog.New(slog.DiscardHandler)

// testMember is one node's membership without protoactor: the member
// lists it would report are recorded.
type testMember struct {
	*Members
	lost    atomic.Bool
	reports chan []string
}

func newTestMember(t *testing.T, client goredis.UniversalClient, id string, ttl time.Duration) *testMember {
	t.Helper()
	m := &testMember{reports: make(chan []string, 64)}
	m.Members = newMembers(client, "t:", ttl, NewMetrics(nil), quiet, memberEvents{
		changed: func(ids []string) {
			select {
			case m.reports <- ids:
			default:
			}
		},
		lost: func() { m.lost.Store(true) },
	})
	m.self = &cluster.Member{Id: id, Host: "127.0.0.1", Port: 1, Kinds: []string{Kind}}
	m.update = func(cluster.Members) {}
	m.start()
	t.Cleanup(func() { m.Shutdown(false) })
	return m
}

// sees waits until m reports exactly ids.
func (m *testMember) sees(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ok := len(want) > 0
		for _, id := range want {
			ok = ok && m.Alive(id)
		}
		m.mu.Lock()
		ok = ok && len(m.alive) == len(want)
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-m.reports:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			m.mu.Lock()
			defer m.mu.Unlock()
			t.Fatalf("%s sees %v, want %v", m.self.Id, m.alive, want)
		}
	}
}

func TestAMemberThatStopsRenewingIsRemovedAndExitsIfItComesBack(t *testing.T) {
	testAMemberThatStopsRenewingIsRemovedAndExitsIfItComesBack(t, redistest.Start(t).Client())
}

func testAMemberThatStopsRenewingIsRemovedAndExitsIfItComesBack(t *testing.T, client goredis.UniversalClient) {
	// Leases of 2 s: a member is removed only after missing renewals for
	// 1.3 s, which a loaded test machine does not do by itself.
	a := newTestMember(t, client, "a", 2*time.Second)
	b := newTestMember(t, client, "b", 2*time.Second)
	a.sees(t, "a", "b")
	b.sees(t, "a", "b")

	b.stop() // b stops renewing (a paused or partitioned process)
	<-b.done
	a.sees(t, "a")
	if gone, _ := client.Exists(context.Background(), keys("t:").gone("b")).Result(); gone != 1 {
		t.Fatal("no tombstone for b")
	}
	// b comes back: its tombstone makes it exit rather than rejoin under
	// an id protoactor has blocked.
	if err := b.beat(context.Background()); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, b.lost.Load, "b rejoined instead of exiting")
	if a.lost.Load() {
		t.Fatal("a lost its lease")
	}
}

func TestAGracefulLeaveIsSeenAtOnce(t *testing.T) {
	testAGracefulLeaveIsSeenAtOnce(t, redistest.Start(t).Client())
}

func testAGracefulLeaveIsSeenAtOnce(t *testing.T, client goredis.UniversalClient) {
	a := newTestMember(t, client, "a", 30*time.Second) // beats every 10 s: only the hint can tell a in time
	b := newTestMember(t, client, "b", 30*time.Second)
	<-b.Joined() // or a's poked read may come first, and b's hint before a listens
	a.Poke()
	a.sees(t, "a", "b")
	if err := b.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	a.sees(t, "a")
}

// TestRedisAwayLongerThanALeaseLosesNobody stops Redis (append-only) for
// three leases' life and starts it again: every lease in it is expired by
// Redis's clock, yet no member is removed and none exits, because only a
// member that reached Redis for a whole lease may remove another.
func TestRedisAwayLongerThanALeaseLosesNobody(t *testing.T) {
	srv := redistest.StartPersistent(t)
	const lease = 2 * time.Second // see TestAMemberThatStopsRenewingIsRemovedAndExitsIfItComesBack
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer client.Close()
	a := newTestMember(t, client, "a", lease)
	b := newTestMember(t, client, "b", lease)
	a.sees(t, "a", "b")
	srv.Stop()
	time.Sleep(3 * lease)
	if a.Healthy() || b.Healthy() {
		t.Fatal("Redis is away, yet a member says it is healthy")
	}
	a.sees(t, "a", "b") // the last list is kept meanwhile
	srv.Restart()
	within(t, 5*time.Second, func() bool { return a.Healthy() && b.Healthy() }, "members did not reach Redis again within 5 s")
	time.Sleep(2 * lease) // two leases' life: removal would have happened
	a.sees(t, "a", "b")
	b.sees(t, "a", "b")
	if a.lost.Load() || b.lost.Load() {
		t.Fatal("a member exited after Redis came back")
	}
}

// testNode is one node's placement without remote: its own actor system,
// activations and lookup, sharing Redis with the others.
type testNode struct {
	system *actor.ActorSystem
	acts   *actors.Activations
	lookup *Lookup
}

func newTestNodes(t *testing.T, client goredis.UniversalClient, tweak func(*actors.Config), ids ...string) []*testNode {
	t.Helper()
	var out []*testNode
	for _, id := range ids {
		system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
		t.Cleanup(system.Shutdown)
		// An address of its own (not "nonhost" for all): a pid of one
		// node must not resolve as local on another.
		system.ProcessRegistry.Address = "node-" + id
		cfg := actors.Config{Logger: quiet}
		if tweak != nil {
			tweak(&cfg)
		}
		l := newLookup(system, client, "t:", time.Minute, cfg, nil, NewMetrics(nil), quiet)
		m := l.members
		m.self = &cluster.Member{Id: id}
		for _, other := range ids {
			m.alive[other] = &cluster.Member{Id: other}
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go m.subscribe(ctx)
		out = append(out, &testNode{system: system, acts: l.Activations(), lookup: l})
	}
	// Wait for every node's subscription: a notice sent before it is lost.
	within(t, 10*time.Second, func() bool { return numSub(client, keys("t:").hint()) >= int64(len(ids)) },
		"the nodes did not subscribe to the members' channel")
	return out
}

// numSub counts the subscriptions to channel. A Redis Cluster node counts
// its own only: a cluster client subscribes at the master of the
// channel's slot, so that one is asked.
func numSub(client goredis.UniversalClient, channel string) int64 {
	ctx := context.Background()
	var c goredis.UniversalClient = client
	if cc, ok := client.(*goredis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, channel)
		if err != nil {
			return -1
		}
		c = m
	}
	subs, err := c.PubSubNumSub(ctx, channel).Result()
	if err != nil {
		return -1
	}
	return subs[channel]
}

// TestASupersededActorHearsItOverRedis: a member took another's actor for
// gone (a broken link between them) and replaced its record; the direct
// message telling that actor to stop is lost on that link (these test
// nodes have no remote at all), so the notice over Redis stops it.
func TestASupersededActorHearsItOverRedis(t *testing.T) {
	testASupersededActorHearsItOverRedis(t, redistest.Start(t).Client())
}

func testASupersededActorHearsItOverRedis(t *testing.T, client goredis.UniversalClient) {
	nodes := newTestNodes(t, client, nil, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	old, err := b.lookup.Pairing(ctx, "p1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.lookup.Pairing(ctx, "p1", old); err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, func() bool { _, ok := b.acts.Active("p1"); return !ok },
		"b's superseded actor still runs: the pairing has two live actors")
	if _, ok := a.acts.Active("p1"); !ok {
		t.Fatal("a's actor stopped too")
	}
	if rec := client.Get(ctx, keys("t:").record("p1")).Val(); !strings.HasPrefix(rec, "a ") {
		t.Fatalf("p1's record is %q, want a's", rec)
	}
}

// TestTwoNodesRacingForTheSamePairingsActivateEachOnce has two nodes ask
// for the same 2,000 pairings at once: each pairing ends with one record,
// naming an actor that runs, and the loser of each race stopped its own.
func TestTwoNodesRacingForTheSamePairingsActivateEachOnce(t *testing.T) {
	testTwoNodesRacingForTheSamePairingsActivateEachOnce(t, redistest.Start(t).Client())
}

func testTwoNodesRacingForTheSamePairingsActivateEachOnce(t *testing.T, client goredis.UniversalClient) {
	nodes := newTestNodes(t, client, nil, "a", "b")
	const n = 2000
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, node := range nodes {
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func(node *testNode, w int) {
				defer wg.Done()
				for i := w; i < n; i += 16 {
					if _, err := node.lookup.Pairing(context.Background(), fmt.Sprintf("p%d", i), nil); err != nil {
						failed.Add(1)
					}
				}
			}(node, w)
		}
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d lookups failed", failed.Load())
	}
	within(t, 10*time.Second, func() bool { return nodes[0].acts.Count()+nodes[1].acts.Count() == n },
		"the pairing actors active never came to %d in all", n)
	won := map[string]int{}
	for i := 0; i < n; i++ {
		rec, err := client.Get(context.Background(), keys("t:").record(fmt.Sprintf("p%d", i))).Result()
		if err != nil {
			t.Fatalf("p%d has no record: %v", i, err)
		}
		member, pid, _ := parseRecord(rec)
		node := nodes[0]
		if member == "b" {
			node = nodes[1]
		}
		if got, ok := node.acts.Active(fmt.Sprintf("p%d", i)); !ok || got.Id != pid.Id {
			t.Fatalf("p%d's record names %s on %s, which is not its active actor", i, pid.Id, member)
		}
		won[member]++
	}
	t.Logf("activations: a %d, b %d", won["a"], won["b"])
	// Asking again finds every pairing where it is: nothing new starts.
	for i := 0; i < n; i += 97 {
		for _, node := range nodes {
			if _, err := node.lookup.Pairing(context.Background(), fmt.Sprintf("p%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if testutil.ToFloat64(nodes[0].lookup.metrics.Activations)+testutil.ToFloat64(nodes[1].lookup.metrics.Activations) != n {
		t.Fatal("a second lookup activated again")
	}
}

// TestARecordOfAGoneActorOrALeftMemberIsReplaced: a record that names an
// actor the caller found gone, or a member that left, gives way to a new
// activation; a purge removes a left member's records.
func TestARecordOfAGoneActorOrALeftMemberIsReplaced(t *testing.T) {
	testARecordOfAGoneActorOrALeftMemberIsReplaced(t, redistest.Start(t).Client())
}

func testARecordOfAGoneActorOrALeftMemberIsReplaced(t *testing.T, client goredis.UniversalClient) {
	nodes := newTestNodes(t, client, nil, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	pid, err := b.lookup.Pairing(ctx, "p1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.lookup.Pairing(ctx, "p1", nil); got.Id != pid.Id {
		t.Fatalf("a found %v, want b's %v", got, pid)
	}
	// a found b's actor gone (a dead letter): a activates it itself.
	mine, err := a.lookup.Pairing(ctx, "p1", pid)
	if err != nil {
		t.Fatal(err)
	}
	if active, ok := a.acts.Active("p1"); !ok || !active.Equal(mine) {
		t.Fatalf("a got %v; want its own active actor", mine)
	}
	if rec := client.Get(ctx, keys("t:").record("p1")).Val(); !strings.HasPrefix(rec, "a ") {
		t.Fatalf("p1's record is %q, want a's", rec)
	}

	// b leaves: its records are purged, and a takes its pairings.
	if _, err := b.lookup.Pairing(ctx, "p2", nil); err != nil {
		t.Fatal(err)
	}
	a.lookup.membersChanged([]string{"a", "b"})
	a.lookup.members.mu.Lock()
	delete(a.lookup.members.alive, "b")
	a.lookup.members.mu.Unlock()
	a.lookup.membersChanged([]string{"a"})
	within(t, 5*time.Second, func() bool { return client.Get(ctx, keys("t:").record("p2")).Val() == "moved b" },
		"the left member's record was not purged")
	if _, err := a.lookup.Pairing(ctx, "p2", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.acts.Active("p2"); !ok {
		t.Fatal("p2 was not activated on a")
	}
}

// TestRecordsNobodyPurgedAreSwept: a member that died while no node up now
// listed it (every node restarted at once) left its records; the sweep
// purges them, and leaves those of a member that still has a lease entry.
func TestRecordsNobodyPurgedAreSwept(t *testing.T) {
	testRecordsNobodyPurgedAreSwept(t, redistest.Start(t).Client())
}

func testRecordsNobodyPurgedAreSwept(t *testing.T, client goredis.UniversalClient) {
	nodes := newTestNodes(t, client, nil, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	for _, id := range []string{"p1", "p2"} {
		if _, err := b.lookup.Pairing(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	// c holds a lease entry (expired or not, its removal is not a's to
	// judge here) and a record.
	k := keys("t:")
	client.ZAdd(ctx, k.members(), goredis.Z{Score: 1, Member: "c"})
	client.SAdd(ctx, k.of("c"), "p3")
	client.Set(ctx, k.record("p3"), "c 127.0.0.1:1 pairing/p3/1", 0)
	// b died unseen: a never listed it, and it has no lease entry.
	a.lookup.members.mu.Lock()
	delete(a.lookup.members.alive, "b")
	a.lookup.members.mu.Unlock()

	a.lookup.sweep()
	for _, id := range []string{"p1", "p2"} {
		if rec := client.Get(ctx, k.record(id)).Val(); rec != "moved b" {
			t.Fatalf("%s's record is %q, want the moved mark", id, rec)
		}
		if ttl := client.PTTL(ctx, k.record(id)).Val(); ttl <= 0 {
			t.Fatalf("%s's mark has no end (%v)", id, ttl)
		}
	}
	if n := client.Exists(ctx, k.of("b")).Val(); n != 0 {
		t.Fatal("b's set is still there")
	}
	if rec := client.Get(ctx, k.record("p3")).Val(); rec != "c 127.0.0.1:1 pairing/p3/1" {
		t.Fatalf("c's record became %q; c has a lease entry", rec)
	}
}

// TestAStoppedPairingLeavesItsRecordRight: a pairing that passivated
// leaves no record; one that handed off (its node drains) leaves a mark
// that expires, so that the next activation waits for its tabs.
func TestAStoppedPairingLeavesItsRecordRight(t *testing.T) {
	testAStoppedPairingLeavesItsRecordRight(t, redistest.Start(t).Client())
}

func testAStoppedPairingLeavesItsRecordRight(t *testing.T, client goredis.UniversalClient) {
	fake := clock.NewFake(time.Now())
	a := newTestNodes(t, client, func(c *actors.Config) { c.Clock = fake }, "a")[0]
	ctx := context.Background()
	if _, err := a.lookup.Pairing(ctx, "idle", nil); err != nil {
		t.Fatal(err)
	}
	within(t, 5*time.Second, func() bool { return fake.Pending() >= 1 }, "idle timer armed")
	fake.Advance(actors.DefaultPairingIdle)
	within(t, 5*time.Second, func() bool { return client.Exists(ctx, keys("t:").record("idle")).Val() == 0 }, "the idle pairing's record outlived it")
	if a.acts.Count() != 0 {
		t.Fatalf("%d pairings still active", a.acts.Count())
	}

	if _, err := a.lookup.Pairing(ctx, "moving", nil); err != nil {
		t.Fatal(err)
	}
	a.acts.HandOff(a.lookup.Adopters, "a") // no call in flight: it stops at once
	within(t, 5*time.Second, func() bool { return client.Get(ctx, keys("t:").record("moving")).Val() == "moved a" }, "no moved mark")
	if ttl := client.PTTL(ctx, keys("t:").record("moving")).Val(); ttl <= 0 || ttl > movedLife {
		t.Fatalf("the mark lives %v", ttl)
	}
}

func TestADrainingNodeActivatesNothingItself(t *testing.T) {
	testADrainingNodeActivatesNothingItself(t, redistest.Start(t).Client())
}

func testADrainingNodeActivatesNothingItself(t *testing.T, client goredis.UniversalClient) {
	a := newTestNodes(t, client, nil, "a")[0]
	a.lookup.Drain()
	if _, err := a.lookup.Pairing(context.Background(), "p1", nil); err == nil {
		t.Fatal("a draining node alone activated a pairing")
	}
	if a.acts.Count() != 0 {
		t.Fatal("a draining node started an actor")
	}
}

// TestAdoptTakesTheRecordOnceAndOnlyFromTheMover: a member adopts a
// pairing a draining member moves by swapping the record from the mover's
// actor to its own; the same ask again gets the same actor; an ask whose
// mover the record does not name starts nothing.
func TestAdoptTakesTheRecordOnceAndOnlyFromTheMover(t *testing.T) {
	testAdoptTakesTheRecordOnceAndOnlyFromTheMover(t, redistest.Start(t).Client())
}

func testAdoptTakesTheRecordOnceAndOnlyFromTheMover(t *testing.T, client goredis.UniversalClient) {
	nodes := newTestNodes(t, client, nil, "a", "b")
	a, b := nodes[0], nodes[1]
	ctx := context.Background()
	mover, err := a.lookup.Pairing(ctx, "p1", nil)
	if err != nil {
		t.Fatal(err)
	}
	ask := &wire.Adopt{State: &wire.PairingState{Pairing: "p1"}, FromMember: "a", FromAddress: mover.Address, FromId: mover.Id}
	pid, err := b.lookup.adopt(ctx, ask)
	if err != nil {
		t.Fatal(err)
	}
	if rec := client.Get(ctx, keys("t:").record("p1")).Val(); rec != "b "+pid.Address+" "+pid.Id {
		t.Fatalf("record %q, want b's adopted actor", rec)
	}
	if !client.SIsMember(ctx, keys("t:").of("b"), "p1").Val() || client.SIsMember(ctx, keys("t:").of("a"), "p1").Val() {
		t.Fatal("p1 did not move from a's set to b's")
	}
	again, err := b.lookup.adopt(ctx, ask)
	if err != nil || !again.Equal(pid) {
		t.Fatalf("the same ask again: %v, %v; want %v", again, err, pid)
	}
	if _, err := a.lookup.Pairing(ctx, "p2", nil); err != nil {
		t.Fatal(err)
	}
	wrong := &wire.Adopt{State: &wire.PairingState{Pairing: "p2"}, FromMember: "a", FromAddress: mover.Address, FromId: "pairing/p2/0"}
	if pid, err := b.lookup.adopt(ctx, wrong); err == nil {
		t.Fatalf("adopted p2 as %v from an actor its record does not name", pid)
	}
	within(t, 5*time.Second, func() bool { _, ok := b.acts.Active("p2"); return !ok }, "the refused adoption left an actor running")
	// b holds an actor of p3 already: an ask to adopt p3 is refused, and
	// that actor lives on.
	own, err := b.lookup.Pairing(ctx, "p3", nil)
	if err != nil {
		t.Fatal(err)
	}
	clash := &wire.Adopt{State: &wire.PairingState{Pairing: "p3"}, FromMember: "a", FromAddress: mover.Address, FromId: "pairing/p3/0"}
	if pid, err := b.lookup.adopt(ctx, clash); err == nil {
		t.Fatalf("adopted p3 as %v over the actor b holds", pid)
	}
	if pid, ok := b.acts.Active("p3"); !ok || !pid.Equal(own) {
		t.Fatalf("b's own actor of p3 was replaced: %v", pid)
	}
}

// within waits until cond holds, failing with the message after d.
func within(t *testing.T, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf(format, args...)
		}
	}
}
