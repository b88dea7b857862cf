package placement

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
)

// shapeBodies are the placement tests that run on every shape of Redis
// (issue 16); TestRedisAwayLongerThanALeaseLosesNobody needs one server
// it can stop, and stays there.
var shapeBodies = []struct {
	name string
	run  func(*testing.T, goredis.UniversalClient)
}{
	{"EveryScriptRunsInOneSlot", testEveryScriptRunsInOneSlot},
	{"AMemberThatStopsRenewingIsRemovedAndExitsIfItComesBack", testAMemberThatStopsRenewingIsRemovedAndExitsIfItComesBack},
	{"AGracefulLeaveIsSeenAtOnce", testAGracefulLeaveIsSeenAtOnce},
	{"ASupersededActorHearsItOverRedis", testASupersededActorHearsItOverRedis},
	{"TwoNodesRacingForTheSamePairingsActivateEachOnce", testTwoNodesRacingForTheSamePairingsActivateEachOnce},
	{"ARecordOfAGoneActorOrALeftMemberIsReplaced", testARecordOfAGoneActorOrALeftMemberIsReplaced},
	{"RecordsNobodyPurgedAreSwept", testRecordsNobodyPurgedAreSwept},
	{"AStoppedPairingLeavesItsRecordRight", testAStoppedPairingLeavesItsRecordRight},
	{"ADrainingNodeActivatesNothingItself", testADrainingNodeActivatesNothingItself},
	{"AdoptTakesTheRecordOnceAndOnlyFromTheMover", testAdoptTakesTheRecordOnceAndOnlyFromTheMover},
	{"TheBusReachesTheOtherNode", testTheBusReachesTheOtherNode},
}

// TestPlacementOnSentinel runs the placement tests through a failover
// client of a master, a replica and three sentinels, then kills the
// master: membership removes nobody because of the failover.
func TestPlacementOnSentinel(t *testing.T) {
	s := redistest.StartSentinel(t)
	client := s.Client()
	runShapeBodies(t, client)
	t.Run("AFailoverRemovesNobody", func(t *testing.T) {
		failoverRemovesNobody(t, client, func() {
			s.Replicated(5 * time.Second)
			old, at := s.KillMaster()
			t.Logf("replica promoted %v after the master was killed", s.WaitPromoted(old, 30*time.Second).Sub(at).Round(time.Millisecond))
		})
	})
}

// TestPlacementOnRedisCluster runs the placement tests through a cluster
// client of three masters with a replica each, which refuses (CROSSSLOT)
// any script or transaction whose keys are in more than one slot, and
// hears a PUBLISH on any node; then kills the master of the members'
// slot: its replica takes over, and membership removes nobody.
func TestPlacementOnRedisCluster(t *testing.T) {
	members := keys("t:").members()
	c := redistest.StartCluster(t, 3, 1, members)
	client := c.Client()
	runShapeBodies(t, client)
	t.Run("AFailoverRemovesNobody", func(t *testing.T) {
		failoverRemovesNobody(t, client, func() {
			c.Replicated(5 * time.Second)
			old, at := c.KillMasterOf(members)
			t.Logf("replica promoted %v after the master was killed", c.WaitPromoted(old, members, 30*time.Second).Sub(at).Round(time.Millisecond))
		})
	})
}

func runShapeBodies(t *testing.T, client goredis.UniversalClient) {
	for _, b := range shapeBodies {
		flushAll(t, client)
		t.Run(b.name, func(t *testing.T) { b.run(t, client) })
	}
}

// flushAll empties every master, so that each test starts on nothing.
func flushAll(t *testing.T, client goredis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	var err error
	if cc, ok := client.(*goredis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return c.FlushAll(ctx).Err() })
	} else {
		err = client.FlushAll(ctx).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// failoverRemovesNobody: two members with leases of 2 s; the master fails
// over (a second to notice, then the promotion); both reach Redis again
// (the new master, whose TIME scores the leases from then on), and two
// leases later both are still listed and neither exits.
func failoverRemovesNobody(t *testing.T, client goredis.UniversalClient, failover func()) {
	flushAll(t, client)
	const lease = 2 * time.Second
	a := newTestMember(t, client, "a", lease)
	b := newTestMember(t, client, "b", lease)
	a.sees(t, "a", "b")
	b.sees(t, "a", "b")
	failover()
	within(t, 10*time.Second, func() bool { return a.Healthy() && b.Healthy() }, "members did not reach Redis again within 10 s of the promotion")
	time.Sleep(2 * lease)
	a.sees(t, "a", "b")
	b.sees(t, "a", "b")
	if a.lost.Load() || b.lost.Load() {
		t.Fatal("a member exited after the failover")
	}
	if n := client.Exists(context.Background(), keys("t:").gone("a"), keys("t:").gone("b")).Val(); n != 0 {
		t.Fatalf("%d tombstones after the failover", n)
	}
}

// testEveryScriptRunsInOneSlot runs each of the package's Lua scripts
// with the keys its caller passes: on a Redis Cluster, a script whose
// keys are in several slots is refused. The list must name every script
// of the package (counted in its source).
func testEveryScriptRunsInOneSlot(t *testing.T, client goredis.UniversalClient) {
	k := keys("t:")
	scripts := []struct {
		name   string
		script *goredis.Script
		keys   []string
		args   []any
	}{
		{"renew", renewScript, []string{k.members(), k.info(), k.gone("a")}, []any{"a", "127.0.0.1:1", 2000}},
		{"remove", removeScript, []string{k.members(), k.info(), k.gone("a")}, []any{"a", 0}},
		{"leave", leaveScript, []string{k.members(), k.info(), k.gone("b")}, []any{"b"}},
		{"claim", claimScript, []string{k.record("p1"), k.of("a"), k.of("b")}, []any{"", "a 127.0.0.1:1 pairing/p1/1", "p1"}},
		{"release", releaseScript, []string{k.record("p1"), k.of("a")}, []any{"a 127.0.0.1:1 pairing/p1/1", "p1", movedMark + "a", 1000}},
		{"leaseHeld", leaseHeldScript, []string{k.members()}, []any{"a"}},
		{"purge", purgeScript, []string{k.of("a")}, []any{"a", k.record(""), 500, movedMark + "a", 1000}},
	}
	ctx := context.Background()
	client.SAdd(ctx, k.of("a"), "p2")
	client.Set(ctx, k.record("p2"), "a 127.0.0.1:1 pairing/p2/1", 0)
	for _, s := range scripts {
		if err := s.script.Run(ctx, client, s.keys, s.args...).Err(); err != nil && err != goredis.Nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
	if client.Get(ctx, k.record("p2")).Val() != movedMark+"a" {
		t.Error("purge did not mark the record of its set")
	}
	total := 0
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += strings.Count(string(src), "goredis.NewScript(")
	}
	if total != len(scripts) {
		t.Fatalf("the package has %d scripts, this test runs %d: add the new one", total, len(scripts))
	}
}

// testTheBusReachesTheOtherNode: a hint published by one node is
// delivered to the other (on a Redis Cluster, PUBLISH reaches every node,
// whichever one each node's subscription is on).
func testTheBusReachesTheOtherNode(t *testing.T, client goredis.UniversalClient) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 1)
	go NewBus(client, "t:", "b", quiet).Run(ctx, func(kind uint8, pairing string) { got <- pairing })
	within(t, 10*time.Second, func() bool { return numSub(client, keys("t:").events()) >= 1 }, "the bus did not subscribe")
	NewBus(client, "t:", "a", quiet).Publish(1, "p1")
	select {
	case p := <-got:
		if p != "p1" {
			t.Fatalf("delivered %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the hint did not arrive")
	}
}
