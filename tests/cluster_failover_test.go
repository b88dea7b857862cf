package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Issue 16: the relay on Redis that fails over. Each test runs two
// `tabrelay serve` processes on one shape of Redis (real redis-server
// processes on loopback: Sentinel, or a Redis Cluster with replicas):
// first a tab on each node, called through both nodes, and a revocation
// at one node refused at the other within 1 s; then issue 17's steady
// call load (real `tabrelay tab` processes, hosts through the balancer)
// while the master is killed and a replica promoted. It asserts that
// every call gets its result or the documented 503, that no call runs
// twice, that the tokens issued before keep working, that membership
// removes nobody, and that every node is ready and every connection
// answers within 5 s of the promotion. The figures are logged (FIGURE).

func TestClusterFailoverOnSentinel(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 2, shape: "sentinel"})
	failoverScenario(t, c, func() (killed, promoted time.Time) {
		c.sentinel.Replicated(5 * time.Second)
		old, at := c.sentinel.KillMaster()
		return at, c.sentinel.WaitPromoted(old, 30*time.Second)
	})
}

func TestClusterFailoverOnRedisCluster(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 2, shape: "cluster"})
	failoverScenario(t, c, func() (killed, promoted time.Time) {
		// Master 0 holds the members, placement and token families.
		c.rcluster.Replicated(5 * time.Second)
		old, at := c.rcluster.KillMasterOf(clusterFamilies[0])
		return at, c.rcluster.WaitPromoted(old, clusterFamilies[0], 30*time.Second)
	})
}

func failoverScenario(t *testing.T, c *cluster, failover func() (killed, promoted time.Time)) {
	start := time.Now()
	crossNodesAndRevocation(t, c)
	t.Logf("FIGURE %s: calls across the two nodes and the revocation took %v", c.opts.shape, time.Since(start).Round(time.Millisecond))
	c.lb.checkHealth(500*time.Millisecond, func(i int) bool { return c.nodes[i].ready() == http.StatusOK })
	s := newDeployScenario(t, c, 4)
	members := []string{c.nodes[0].member(), c.nodes[1].member()}
	s.startCalls(4)
	time.Sleep(2 * time.Second)
	s.redisFailover(failover)
	// Two leases (RELAY_LEASE_TTL=2s) under load: a removal the failover
	// caused would have happened by now.
	time.Sleep(4 * time.Second)
	s.stop.Store(true)
	s.wg.Wait()
	c.waitMembers(2, 5*time.Second)
	c.subscribedAgain(5 * time.Second)
	for _, n := range c.nodes {
		if got := n.metric("tabrelay_redis_master_changes_total"); got != 1 {
			t.Errorf("node %d counts %v master changes, want 1 (the failover)", n.i, got)
		}
	}
	for i, n := range c.nodes {
		if got := n.member(); got != members[i] {
			t.Errorf("node %d is member %q, was %q: it lost its lease", i, got, members[i])
		}
		if p := n.current(); p != nil && strings.Contains(p.stderr.String(), "lease expired; removed") {
			t.Errorf("node %d removed a member after the failover:\n%s", i, tail(p.stderr.String(), 20))
		}
	}
	s.report()
	for p := range phases {
		for kind := range s.kinds[p].m {
			if kind != "result" && kind != "503" {
				t.Errorf("calls in the %s answered %s: want each its result or the 503 sentence", phaseNames[p], kind)
			}
		}
	}
	s.checkRuns()
	s.checkProcesses()
	t.Logf("FIGURE %s: the whole test took %v", c.opts.shape, time.Since(start).Round(time.Millisecond))
}

// subscribedAgain waits until every node is subscribed again to the
// members' and the browsers' channels, at the master that has taken over:
// the hints reach every node after the failover.
func (c *cluster) subscribedAgain(within time.Duration) {
	c.t.Helper()
	ctx := context.Background()
	for _, ch := range clusterChannels {
		var subs int64
		for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
			var at goredis.UniversalClient = c.rdb
			if cc, ok := c.rdb.(*goredis.ClusterClient); ok {
				m, err := cc.MasterForKey(ctx, ch)
				if err != nil {
					continue
				}
				at = m
			}
			subs = at.PubSubNumSub(ctx, ch).Val()[ch]
			if subs >= int64(len(c.nodes)) {
				break
			}
			if time.Now().After(deadline) {
				c.t.Errorf("%d nodes subscribed to %s %v after the failover, want %d", subs, ch, within, len(c.nodes))
				break
			}
		}
	}
}

// redisFailover runs failover (kill the master, wait for the promotion)
// and measures how long after the promotion every node is ready and
// every connection answers; then the refresh tokens issued before.
func (s *deployScenario) redisFailover(failover func() (killed, promoted time.Time)) {
	t, c := s.t, s.c
	s.setPhase(phaseFailover)
	killed, promoted := failover()
	t.Logf("FIGURE %s: replica promoted %v after the master was killed", c.opts.shape, promoted.Sub(killed).Round(time.Millisecond))
	s.recovered(promoted, c.opts.shape+": the promotion")
	if s.kinds[phaseFailover].get("503") == 0 {
		t.Error("no call was answered 503 during the failover: the nodes never noticed the master gone")
	}
	s.setPhase(phaseAfter)
	s.refreshesWork("the failover")
}

// crossNodesAndRevocation connects a browser with a tab on each node,
// calls each tab entering at each node, then revokes the first browser's
// refresh token at node 0: its access token is refused at node 1 within
// 1 s.
func crossNodesAndRevocation(t *testing.T, c *cluster) {
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	var tabs []tabOn
	var refresh []string
	for i, n := range c.nodes {
		b := newBrowser(t)
		name := fmt.Sprintf("tab-on-node%d", i)
		b.startTab(n.url, name, "--focus")
		b.waitSecret()
		tok, err := h.connect(approveByProcess(b, n.url))
		if err != nil {
			t.Fatalf("connecting the browser on node %d: %v", i, err)
		}
		tabs, refresh = append(tabs, tabOn{b: b, name: name, token: tok.Access}), append(refresh, tok.Refresh)
	}
	for _, tab := range tabs {
		for _, n := range c.nodes {
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			a, err := n.callTool(ctx, tab.token, "whoami", nil)
			cancel()
			if err != nil || a.data()["tab"] != tab.name {
				t.Fatalf("whoami of %s entering at node %d: %v %v", tab.name, n.i, err, a)
			}
		}
	}
	resp, _, err := c.nodes[0].post("/revoke", "application/x-www-form-urlencoded",
		url.Values{"token": {refresh[0]}, "client_id": {h.clientID}}.Encode(), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke at node 0: %v %v", err, resp)
	}
	revoked := time.Now()
	for {
		a, err := c.nodes[1].callTool(t.Context(), tabs[0].token, "whoami", nil)
		if err == nil && a.status == http.StatusUnauthorized {
			break
		}
		if time.Since(revoked) > time.Second {
			t.Fatalf("the access token of a revoked family still answers at the other node after 1 s: %v %v", err, a)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("FIGURE %s: revoked at node 0, refused at node 1 %v later", c.opts.shape, time.Since(revoked).Round(time.Millisecond))
	for _, tab := range tabs {
		for id, k := range tab.b.execCounts() {
			if k != 1 {
				t.Errorf("call %s ran %d times in %s", id, k, tab.name)
			}
		}
		// The load that follows counts its own tabs' sockets.
		for _, p := range tab.b.tabs() {
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	c.waitSum("tabrelay_tab_sockets", 0, 10*time.Second)
}
