package redistest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// The Redis shapes besides one server (issue 16): a master with a replica
// that three sentinels fail over, and a Redis Cluster of masters with
// replicas. Every process is a real redis-server (a sentinel is
// `redis-server --sentinel`, no other package) on a free loopback port,
// persistent as a deployment runs it, and stopped when the test ends.

// Sentinel is a master with a replica, watched by three sentinels
// (quorum 2) that find it down after a second.
type Sentinel struct {
	t         testing.TB
	Name      string
	Data      []*Server // the master as started, then its replica
	Sentinels []*Server
}

// StartSentinel starts the set and returns once every sentinel knows the
// replica and the other two sentinels (a failover needs them), and the
// replica is in sync.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	s := &Sentinel{t: t, Name: "relay"}
	master := StartPersistent(t)
	replica := StartPersistent(t, "--replicaof", "127.0.0.1", master.Port)
	s.Data = []*Server{master, replica}
	for range 3 {
		s.Sentinels = append(s.Sentinels, startWith(t, nil, func(*Server) string {
			return fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 2\n"+
				"sentinel down-after-milliseconds %[1]s 1000\n"+
				"sentinel failover-timeout %[1]s 10000\n"+
				"sentinel parallel-syncs %[1]s 1\n", s.Name, master.Port)
		}))
	}
	ctx := context.Background()
	waitFor(t, 30*time.Second, "the sentinels to know the replica and each other", func() bool {
		for _, sn := range s.Sentinels {
			c := goredis.NewSentinelClient(&goredis.Options{Addr: sn.Addr()})
			replicas, err1 := c.Replicas(ctx, s.Name).Result()
			others, err2 := c.Sentinels(ctx, s.Name).Result()
			c.Close()
			if err1 != nil || err2 != nil || len(replicas) != 1 || len(others) != 2 ||
				strings.Contains(fmt.Sprint(replicas[0]["flags"]), "down") {
				return false
			}
		}
		return linkUp(replica)
	})
	return s
}

// URL is the set's redis+sentinel:// URL.
func (s *Sentinel) URL() string {
	var addrs []string
	for _, sn := range s.Sentinels {
		addrs = append(addrs, sn.Addr())
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + s.Name + "/0"
}

// Client returns a failover client of the set, closed when the test ends.
func (s *Sentinel) Client() goredis.UniversalClient {
	var addrs []string
	for _, sn := range s.Sentinels {
		addrs = append(addrs, sn.Addr())
	}
	c := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: s.Name, SentinelAddrs: addrs})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// MasterAddr is the master's host:port as the first sentinel that
// answers says ("" when none does).
func (s *Sentinel) MasterAddr() string {
	for _, sn := range s.Sentinels {
		c := goredis.NewSentinelClient(&goredis.Options{Addr: sn.Addr(), DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
		addr, err := c.GetMasterAddrByName(context.Background(), s.Name).Result()
		c.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1]
		}
	}
	return ""
}

// Master is the data server that is the master now.
func (s *Sentinel) Master() *Server {
	s.t.Helper()
	addr := s.MasterAddr()
	for _, d := range s.Data {
		if d.Addr() == addr {
			return d
		}
	}
	s.t.Fatalf("no server of the set is the master the sentinels name (%q)", addr)
	return nil
}

// Replicated waits until the replicas hold everything the master was
// written so far (its replication offset).
func (s *Sentinel) Replicated(within time.Duration) {
	s.t.Helper()
	m := s.Master()
	waitReplicated(s.t, m, slices.DeleteFunc(slices.Clone(s.Data), func(d *Server) bool { return d == m }), within)
}

// KillMaster kills the master (SIGKILL) and returns it and when.
func (s *Sentinel) KillMaster() (*Server, time.Time) {
	s.t.Helper()
	m := s.Master()
	m.Kill()
	return m, time.Now()
}

// WaitPromoted waits until the sentinels name a master other than old
// and it says it is one: when that was first seen.
func (s *Sentinel) WaitPromoted(old *Server, within time.Duration) time.Time {
	s.t.Helper()
	var at time.Time
	waitFor(s.t, within, "a replica to be promoted", func() bool {
		addr := s.MasterAddr()
		if addr == "" || addr == old.Addr() {
			return false
		}
		for _, d := range s.Data {
			if d.Addr() == addr && role(d) == "master" {
				at = time.Now()
				return true
			}
		}
		return false
	})
	return at
}

// Cluster is a Redis Cluster: masters, then replicas; replica i follows
// master i mod the number of masters.
type Cluster struct {
	t       testing.TB
	Nodes   []*Server
	masters int
}

// StartCluster starts a cluster of masters with replicasEach replicas
// each. The slots are split evenly, but master 0 holds the slots of the
// keys in first (a test that kills it then knows what it takes away).
// It returns once every node says the cluster is ok and every replica is
// in sync.
func StartCluster(t testing.TB, masters, replicasEach int, first ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, masters: masters}
	for range masters * (1 + replicasEach) {
		c.Nodes = append(c.Nodes, StartPersistent(t, "--cluster-enabled", "yes", "--cluster-port", FreePort(t),
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0"))
	}
	ctx := context.Background()
	admin := make([]*goredis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		admin[i] = goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		defer admin[i].Close()
	}
	owner := make([]int, 16384)
	for slot := range owner {
		owner[slot] = slot * masters / 16384
	}
	for _, k := range first {
		slot, err := admin[0].ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		owner[slot] = 0
	}
	for m := range masters {
		args := []any{"cluster", "addslotsrange"}
		for lo := 0; lo < 16384; lo++ {
			if owner[lo] != m {
				continue
			}
			hi := lo
			for hi+1 < 16384 && owner[hi+1] == m {
				hi++
			}
			args = append(args, lo, hi)
			lo = hi
		}
		if err := admin[m].Do(ctx, args...).Err(); err != nil {
			t.Fatalf("cluster addslotsrange: %v", err)
		}
	}
	for i, n := range c.Nodes[1:] {
		bus := n.extra[slices.Index(n.extra, "--cluster-port")+1]
		if err := admin[0].Do(ctx, "cluster", "meet", "127.0.0.1", n.Port, bus).Err(); err != nil {
			t.Fatalf("cluster meet node %d: %v", i+1, err)
		}
	}
	waitFor(t, 20*time.Second, "every node to know every other", func() bool {
		for _, a := range admin {
			nodes, err := a.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(nodes), "\n")+1 != len(c.Nodes) || strings.Contains(nodes, "handshake") {
				return false
			}
		}
		return true
	})
	for i := masters; i < len(c.Nodes); i++ {
		id, err := admin[i%masters].Do(ctx, "cluster", "myid").Text()
		if err == nil {
			err = admin[i].Do(ctx, "cluster", "replicate", id).Err()
		}
		if err != nil {
			t.Fatalf("cluster replicate: %v", err)
		}
	}
	waitFor(t, 30*time.Second, "the cluster to be ok on every node, its replicas in sync", func() bool {
		for i, a := range admin {
			info, err := a.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || (i >= masters && !linkUp(c.Nodes[i])) {
				return false
			}
			nodes, err := a.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(nodes, "slave") != len(c.Nodes)-masters {
				return false
			}
		}
		return true
	})
	return c
}

// URL is the cluster's redis+cluster:// URL, naming its masters.
func (c *Cluster) URL() string {
	var addrs []string
	for _, n := range c.Nodes[:c.masters] {
		addrs = append(addrs, n.Addr())
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Client returns a cluster client, closed when the test ends.
func (c *Cluster) Client() *goredis.ClusterClient {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	// A dead master is not a reason for go-redis to read the slots
	// again (only MOVED is): a state older than half a second is.
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: 500 * time.Millisecond})
	c.t.Cleanup(func() { cc.Close() })
	return cc
}

// MasterOf is the node that is the master of key's slot now, as the
// first live node says.
func (c *Cluster) MasterOf(key string) *Server {
	c.t.Helper()
	addr := c.masterAddrOf(key)
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	c.t.Fatalf("no node is the master of %q (%q)", key, addr)
	return nil
}

func (c *Cluster) masterAddrOf(key string) string {
	ctx := context.Background()
	for _, n := range c.Nodes {
		a := goredis.NewClient(&goredis.Options{Addr: n.Addr(), DialTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
		slot, err := a.ClusterKeySlot(ctx, key).Result()
		var slots []goredis.ClusterSlot
		if err == nil {
			slots, err = a.ClusterSlots(ctx).Result()
		}
		a.Close()
		if err != nil {
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				return s.Nodes[0].Addr
			}
		}
	}
	return ""
}

// Replicated waits until every replica holds everything its master was
// written so far.
func (c *Cluster) Replicated(within time.Duration) {
	c.t.Helper()
	for m := range c.masters {
		var replicas []*Server
		for i := c.masters + m; i < len(c.Nodes); i += c.masters {
			replicas = append(replicas, c.Nodes[i])
		}
		waitReplicated(c.t, c.Nodes[m], replicas, within)
	}
}

// KillMasterOf kills the master of key's slot (SIGKILL) and returns it
// and when.
func (c *Cluster) KillMasterOf(key string) (*Server, time.Time) {
	c.t.Helper()
	m := c.MasterOf(key)
	m.Kill()
	return m, time.Now()
}

// WaitPromoted waits until the live nodes name another master than old
// for key's slot, that node says it is a master and every live node says
// the cluster is ok: when that was first seen.
func (c *Cluster) WaitPromoted(old *Server, key string, within time.Duration) time.Time {
	c.t.Helper()
	var at time.Time
	waitFor(c.t, within, "a replica to take over the master killed", func() bool {
		addr := c.masterAddrOf(key)
		if addr == "" || addr == old.Addr() {
			return false
		}
		for _, n := range c.Nodes {
			if n == old {
				continue
			}
			a := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
			info, err := a.ClusterInfo(context.Background()).Result()
			a.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || (n.Addr() == addr && role(n) != "master") {
				return false
			}
		}
		at = time.Now()
		return true
	})
	return at
}

// waitReplicated waits until each replica's offset reaches the master's.
func waitReplicated(t testing.TB, master *Server, replicas []*Server, within time.Duration) {
	t.Helper()
	want := infoInt(master, "master_repl_offset")
	waitFor(t, within, "the replicas to catch up with the master", func() bool {
		for _, r := range replicas {
			if infoInt(r, "slave_repl_offset") < want {
				return false
			}
		}
		return true
	})
}

// role is what INFO replication says the server is ("" when it does not
// answer).
func role(s *Server) string { return infoField(s, "role") }

// linkUp says whether a replica's link to its master is up.
func linkUp(s *Server) bool { return infoField(s, "master_link_status") == "up" }

func infoInt(s *Server, field string) int64 {
	n, err := strconv.ParseInt(infoField(s, field), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func infoField(s *Server, field string) string {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), DialTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond every 20 ms, failing the test after within.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: waited %v for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
