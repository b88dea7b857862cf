package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/protocol"
)

// The cluster harness: a persistent redis-server, N `tabrelay serve`
// processes on loopback ports with the cluster environment, and a small
// TCP load balancer in front of them whose address is every node's
// RELAY_PUBLIC_URL (tokens are audience-bound to it, and the MCP front end
// refuses a Host that is not the public one, as a load balancer that keeps
// the Host header would present it).
//
// Requests can enter at a chosen node: each node has an HTTP client that
// dials that node whatever the URL says, so that requests carry the public
// URL's Host as they would behind the balancer. Tabs reach the nodes
// through the balancer (and so reconnect elsewhere when their node goes),
// or directly, when a test needs a tab on a given node.

// clusterOptions tune startCluster.
type clusterOptions struct {
	nodes       int
	drainWindow time.Duration // RELAY_DRAIN_WINDOW
	grace       time.Duration // RELAY_GRACE
	callWait    time.Duration // TAB_CALL_WAIT
	env         []string      // more environment for every node
	// freshRemote gives a restarted node a new RELAY_CLUSTER_LISTEN port
	// (as a pod that comes back with a new address), instead of the same.
	freshRemote bool
	// shape is the Redis the nodes share: one server (""), "sentinel" (a
	// master, a replica, three sentinels) or "cluster" (a Redis Cluster
	// of three masters with a replica each; the first holds the slots of
	// the members, placement and token families).
	shape string
}

type cluster struct {
	t        testing.TB
	opts     clusterOptions
	redis    *redistest.Server       // one server, or nil
	sentinel *redistest.Sentinel     // or a Sentinel set
	rcluster *redistest.Cluster      // or a Redis Cluster
	redisURL string                  // the nodes' REDIS_URL
	rdb      goredis.UniversalClient // the test's own client of that Redis
	key      string                  // RELAY_SIGNING_KEY, base64
	previous string                  // RELAY_SIGNING_KEY_PREVIOUS ("": none), for a node's next start
	lb       *balancer
	public   string // RELAY_PUBLIC_URL of every node: the balancer
	nodes    []*clusterNode
}

// clusterNode is one node's ports and data directory, kept across its
// restarts, and its current process.
type clusterNode struct {
	c                              *cluster
	i                              int
	listen, admin, remote, dataDir string
	url, adminURL                  string
	http                           *http.Client // dials this node whatever the URL's host
	mu                             sync.Mutex
	proc                           *nodeProc // nil when not running
	runs                           []*nodeProc
}

type nodeProc struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	exited chan struct{}
	err    error
}

func startCluster(t testing.TB, opts clusterOptions) *cluster {
	t.Helper()
	if opts.drainWindow == 0 {
		opts.drainWindow = time.Second
	}
	if opts.grace == 0 {
		opts.grace = 8 * time.Second
	}
	if opts.callWait == 0 {
		opts.callWait = 20 * time.Second
	}
	key := make([]byte, 32)
	rand.Read(key)
	c := &cluster{t: t, opts: opts, key: base64.StdEncoding.EncodeToString(key)}
	c.startRedis()
	c.lb = startBalancer(t)
	c.public = "http://" + c.lb.addr()
	for i := 0; i < opts.nodes; i++ {
		n := &clusterNode{c: c, i: i, listen: freePort(t), admin: freePort(t), remote: freePort(t), dataDir: t.TempDir()}
		n.url, n.adminURL = "http://"+n.listen, "http://"+n.admin
		n.http = nodeClient(n.listen)
		c.nodes = append(c.nodes, n)
		c.lb.add(n.listen)
	}
	t.Cleanup(c.cleanup)
	for _, n := range c.nodes {
		n.start()
	}
	for _, n := range c.nodes {
		n.waitReady(30 * time.Second)
	}
	c.waitMembers(opts.nodes, 15*time.Second)
	return c
}

// clusterFamilies are the keys whose slots a Redis Cluster failover test
// takes away with master 0: membership, placement, the tokens' families,
// and the channels of the members' hints and the browsers' events (a
// cluster client subscribes at the master of a channel's slot).
var clusterFamilies = []string{"tabrelay:{members}:leases", "tabrelay:{placement}:at:", "tabrelay:{fam}:", "tabrelay:{conn}:"}

// clusterChannels are the channels every node subscribes to.
var clusterChannels = []string{"tabrelay:members:changed", "tabrelay:browser-events"}

// startRedis starts the Redis of the shape asked for.
func (c *cluster) startRedis() {
	switch c.opts.shape {
	case "":
		c.redis = redistest.StartPersistent(c.t)
		c.redisURL, c.rdb = c.redis.URL(), c.redis.Client()
	case "sentinel":
		c.sentinel = redistest.StartSentinel(c.t)
		c.redisURL, c.rdb = c.sentinel.URL(), c.sentinel.Client()
	case "cluster":
		c.rcluster = redistest.StartCluster(c.t, 3, 1, append(clusterFamilies, clusterChannels...)...)
		c.redisURL, c.rdb = c.rcluster.URL(), c.rcluster.Client()
	default:
		c.t.Fatalf("no Redis shape %q", c.opts.shape)
	}
}

// placementRedis is where the placement records are: on a Redis Cluster,
// the master of their slot (a SCAN asks one node).
func (c *cluster) placementRedis(ctx context.Context) goredis.Cmdable {
	if cc, ok := c.rdb.(*goredis.ClusterClient); ok {
		if m, err := cc.MasterForKey(ctx, "tabrelay:{placement}:at:"); err == nil {
			return m
		}
	}
	return c.rdb
}

// nodeClient is an HTTP client whose every connection goes to addr.
func nodeClient(addr string) *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
			MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (c *cluster) cleanup() {
	for _, n := range c.nodes {
		n.kill()
	}
	c.lb.close()
	if !c.t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", "tabrelay-cluster-logs-")
	if err != nil {
		return
	}
	for _, n := range c.nodes {
		n.mu.Lock()
		runs := n.runs
		n.mu.Unlock()
		for r, p := range runs {
			path := filepath.Join(dir, fmt.Sprintf("node%d-run%d.log", n.i, r))
			os.WriteFile(path, []byte(p.stderr.String()), 0o644)
			c.t.Logf("node %d run %d: exit %v; last lines of its log (all in %s):\n%s", n.i, r, p.err, path, tail(p.stderr.String(), 40))
		}
	}
	if c.redis != nil {
		c.t.Logf("redis-server output:\n%s", tail(c.redis.Output(), 20))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (n *clusterNode) env() []string {
	c := n.c
	return append([]string{"PATH=/usr/bin:/bin",
		"RELAY_LISTEN=" + n.listen, "RELAY_ADMIN_LISTEN=" + n.admin, "RELAY_DATA_DIR=" + n.dataDir,
		"RELAY_PUBLIC_URL=" + c.public, "ALLOWED_ORIGINS=" + origin, "RELAY_TRUST_PROXY=true", "RELAY_BUNDLE=probe",
		"REDIS_URL=" + c.redisURL, "RELAY_SIGNING_KEY=" + c.key, "RELAY_CLUSTER_LISTEN=" + n.remote,
		"RELAY_LEASE_TTL=2s", "RELAY_DRAIN_WINDOW=" + c.opts.drainWindow.String(), "RELAY_GRACE=" + c.opts.grace.String(),
		"TAB_CALL_WAIT=" + c.opts.callWait.String(),
		// No shutdown delay unless a test asks for one in opts.env (the
		// last value wins): the others take a node off the balancer
		// themselves, as a pre-stop hook does, and need not wait.
		"RELAY_SHUTDOWN_DELAY=0s",
		"RELAY_SIGNING_KEY_PREVIOUS=" + c.previous,
	}, c.opts.env...)
}

// start runs the node's process (again) on its ports and data directory.
func (n *clusterNode) start() {
	n.c.t.Helper()
	bin := binary
	if v := os.Getenv("CLUSTER_BINARY"); v != "" {
		bin = v // another build of tabrelay, to compare with (BenchmarkClusterCall)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = n.env()
	p := &nodeProc{cmd: cmd, stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		n.c.t.Fatalf("node %d: %v", n.i, err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	n.mu.Lock()
	n.proc = p
	n.runs = append(n.runs, p)
	n.mu.Unlock()
}

func (n *clusterNode) current() *nodeProc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// ready asks GET /ready once: its status (0: no answer).
func (n *clusterNode) ready() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.c.public+"/ready", nil)
	resp, err := n.http.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady waits for /ready to answer 200, failing if the process ends.
func (n *clusterNode) waitReady(within time.Duration) {
	n.c.t.Helper()
	p := n.current()
	deadline := time.Now().Add(within)
	for n.ready() != http.StatusOK {
		select {
		case <-p.exited:
			n.c.t.Fatalf("node %d exited before it was ready: %v\n%s", n.i, p.err, tail(p.stderr.String(), 30))
		default:
		}
		if time.Now().After(deadline) {
			n.c.t.Fatalf("node %d not ready within %v (GET /ready: %d)\n%s", n.i, within, n.ready(), tail(p.stderr.String(), 30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// terminate sends SIGTERM and waits for the process to end; it returns
// how long that took and the process's error (nil: exit 0).
func (n *clusterNode) terminate(within time.Duration) (time.Duration, error) {
	n.c.t.Helper()
	p := n.current()
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(within):
		n.c.t.Fatalf("node %d did not exit within %v of SIGTERM", n.i, within)
	}
	n.mu.Lock()
	n.proc = nil
	n.mu.Unlock()
	return time.Since(start), p.err
}

// kill9 ends the process at once (SIGKILL) and waits for it.
func (n *clusterNode) kill9() {
	p := n.current()
	p.cmd.Process.Kill()
	<-p.exited
	n.mu.Lock()
	n.proc = nil
	n.mu.Unlock()
}

// kill is the cleanup's: SIGKILL whatever runs.
func (n *clusterNode) kill() {
	if p := n.current(); p != nil {
		n.kill9()
	}
}

// restart starts the node again on the same ports and waits for /ready.
func (n *clusterNode) restart(within time.Duration) {
	n.c.t.Helper()
	if n.c.opts.freshRemote {
		n.remote = freePort(n.c.t)
	}
	n.start()
	n.waitReady(within)
}

// metrics scrapes the node's admin /metrics: series (name with labels, as
// printed) → value.
func (n *clusterNode) metrics() (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.adminURL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// metric is one series of the node (-1: not there, or no answer).
func (n *clusterNode) metric(series string) float64 {
	m, err := n.metrics()
	if err != nil {
		return -1
	}
	v, ok := m[series]
	if !ok {
		return -1
	}
	return v
}

// sumMetric adds a series (or, with a name alone, all its labelled series)
// over the running nodes; missing counts the nodes that lack it.
func (c *cluster) sumMetric(name string) (sum float64, missing int) {
	for _, n := range c.nodes {
		if n.current() == nil {
			continue
		}
		m, err := n.metrics()
		found := false
		if err == nil {
			for series, v := range m {
				if series == name || strings.HasPrefix(series, name+"{") {
					sum += v
					found = true
				}
			}
		}
		if !found {
			missing++
		}
	}
	return sum, missing
}

// perNode lists a series' value on each node, for messages.
func (c *cluster) perNode(series string) string {
	var parts []string
	for _, n := range c.nodes {
		if n.current() == nil {
			parts = append(parts, fmt.Sprintf("node%d=down", n.i))
			continue
		}
		parts = append(parts, fmt.Sprintf("node%d=%v", n.i, n.metric(series)))
	}
	return strings.Join(parts, " ")
}

// member is the cluster member id of the node's current process, read
// from its "cluster joined" log line ("" before it joined).
func (n *clusterNode) member() string {
	p := n.current()
	if p == nil {
		return ""
	}
	m := joinedLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		return ""
	}
	return m[1]
}

var joinedLine = regexp.MustCompile(`"msg":"cluster joined","member":"([^"]+)"`)

// placementRecords counts the activation records in Redis by the node they
// name (a member of no running node counts as "gone"), for messages: a
// node holding more pairing actors than records naming it holds actors
// that placement does not know (a duplicate activation).
func (c *cluster) placementRecords() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc := c.placementRedis(ctx)
	byMember := map[string]int{}
	iter := rc.Scan(ctx, 0, "tabrelay:{placement}:at:*", 1000).Iterator()
	for iter.Next(ctx) {
		v, err := rc.Get(ctx, iter.Val()).Result()
		if err != nil {
			continue
		}
		member, _, _ := strings.Cut(v, " ")
		byMember[member]++
	}
	if err := iter.Err(); err != nil {
		return "records: " + err.Error()
	}
	var parts []string
	for _, n := range c.nodes {
		if m := n.member(); m != "" {
			parts = append(parts, fmt.Sprintf("node%d=%d", n.i, byMember[m]))
			delete(byMember, m)
		}
	}
	gone := 0
	for _, k := range byMember {
		gone += k
	}
	return "records naming " + strings.Join(append(parts, fmt.Sprintf("gone=%d", gone)), " ")
}

// waitMembers waits until every running node counts want members.
func (c *cluster) waitMembers(want int, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok := true
		for _, n := range c.nodes {
			if n.current() != nil && n.metric("tabrelay_cluster_members") != float64(want) {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("tabrelay_cluster_members is not %d on every node within %v: %s", want, within, c.perNode("tabrelay_cluster_members"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSum waits until a metric summed over the running nodes is want.
func (c *cluster) waitSum(name string, want float64, within time.Duration) {
	c.t.Helper()
	if err := c.sumWithin(name, want, within); err != nil {
		c.t.Fatal(err)
	}
}

// sumWithin is waitSum's wait: an error says what the nodes count.
func (c *cluster) sumWithin(name string, want float64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		sum, missing := c.sumMetric(name)
		if sum == want && missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s summed over the nodes is %v (missing on %d), want %v within %v: tabs %s; pairings %s; %s", name, sum, missing, want, within,
				c.perNode("tabrelay_tabs_connected"), c.perNode("tabrelay_pairings_active"), c.placementRecords())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordOf is the node whose member the pairing's activation record names
// (-1: no record; -2: a member of no running node).
func (c *cluster) recordOf(pairing string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.rdb.Get(ctx, "tabrelay:{placement}:at:"+pairing).Result()
	if err != nil {
		return -1
	}
	member, _, _ := strings.Cut(v, " ")
	for _, n := range c.nodes {
		if n.member() == member {
			return n.i
		}
	}
	return -2
}

// debugCheck reads the admin /debug/check of every running node when it
// exists (the contract names it), failing the test on a report that says
// something is inconsistent. It returns whether any node served it.
func (c *cluster) debugCheck() bool {
	c.t.Helper()
	served := false
	for _, n := range c.nodes {
		if n.current() == nil {
			continue
		}
		resp, err := http.Get(n.adminURL + "/debug/check")
		if err != nil {
			c.t.Errorf("node %d /debug/check: %v", n.i, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound:
			continue
		case resp.StatusCode != http.StatusOK:
			c.t.Errorf("node %d /debug/check: %d\n%s", n.i, resp.StatusCode, body)
		default:
			served = true
			var report map[string]any
			if json.Unmarshal(body, &report) == nil {
				if ok, has := report["ok"].(bool); has && !ok {
					c.t.Errorf("node %d /debug/check reports a problem:\n%s", n.i, body)
				}
			}
			c.t.Logf("node %d /debug/check: %s", n.i, strings.TrimSpace(string(body)))
		}
	}
	return served
}

// --- the load balancer -------------------------------------------------

// balancer is a TCP load balancer on loopback: each connection goes to a
// backend marked up (the preferred one first when set, else round robin);
// a backend that refuses the dial is skipped, as a balancer's health check
// would soon do. Without checkHealth it has no health check of its own: a
// node that drains gets new connections until its listener closes.
type balancer struct {
	t  testing.TB
	ln net.Listener

	mu       sync.Mutex // guards the fields below
	backends []string
	down     map[int]bool
	sick     map[int]bool // backends whose last health check failed (checkHealth)
	strict   bool         // a refused dial is not tried elsewhere (checkHealth)
	prefer   int
	next     int
	conns    map[net.Conn]struct{}
	routes   map[string]string // a client's address → the backend its connection went to
	closed   bool
}

func startBalancer(t testing.TB) *balancer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{t: t, ln: ln, down: map[int]bool{}, sick: map[int]bool{}, prefer: -1, conns: map[net.Conn]struct{}{},
		routes: map[string]string{}}
	go b.accept()
	return b
}

func (b *balancer) addr() string { return b.ln.Addr().String() }

func (b *balancer) add(backend string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append(b.backends, backend)
}

// setUp marks backend i up or down: new connections go to backends up.
func (b *balancer) setUp(i int, up bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down[i] = !up
}

// setPrefer sends new connections to backend i first (-1: round robin).
func (b *balancer) setPrefer(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prefer = i
}

// checkHealth makes b a balancer without a pre-stop hook that checks its
// backends: every period it asks healthy(i) of each backend i (GET /ready,
// say), and sends new connections only to those that passed their last
// check, or to all when none did (it fails open); and a connection whose
// dial is refused is closed, not tried on another backend.
func (b *balancer) checkHealth(period time.Duration, healthy func(i int) bool) {
	b.mu.Lock()
	b.strict = true
	n := len(b.backends)
	b.mu.Unlock()
	for i := range n {
		go func() {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				ok := healthy(i)
				b.mu.Lock()
				if b.closed {
					b.mu.Unlock()
					return
				}
				if ok {
					delete(b.sick, i)
				} else {
					b.sick[i] = true
				}
				b.mu.Unlock()
				<-tick.C
			}
		}()
	}
}

// order is the order in which backends are tried for one connection.
func (b *balancer) order() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	allSick := len(b.sick) == len(b.backends)
	skip := func(i int) bool { return b.down[i] || (b.sick[i] && !allSick) }
	var out []string
	if b.prefer >= 0 && !skip(b.prefer) {
		out = append(out, b.backends[b.prefer])
	}
	for k := 0; k < len(b.backends); k++ {
		i := (b.next + k) % len(b.backends)
		if !skip(i) && i != b.prefer {
			out = append(out, b.backends[i])
		}
	}
	b.next++
	if b.strict && len(out) > 1 {
		out = out[:1]
	}
	return out
}

// backendOf is the backend that the connection from the client address
// client (its local address, host:port) went to, or was refused by last;
// "" when there was none to try.
func (b *balancer) backendOf(client string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.routes[client]
}

func (b *balancer) track(c net.Conn, add bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		if b.closed {
			return false
		}
		b.conns[c] = struct{}{}
	} else {
		delete(b.conns, c)
	}
	return true
}

func (b *balancer) accept() {
	for {
		in, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.serve(in)
	}
}

func (b *balancer) serve(in net.Conn) {
	var out net.Conn
	for _, backend := range b.order() {
		c, err := net.DialTimeout("tcp", backend, time.Second)
		b.mu.Lock()
		b.routes[in.RemoteAddr().String()] = backend // the last tried
		b.mu.Unlock()
		if err == nil {
			out = c
			break
		}
	}
	if out == nil {
		in.Close()
		return
	}
	if !b.track(in, true) || !b.track(out, true) {
		in.Close()
		out.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	in.Close()
	out.Close()
	<-done
	b.track(in, false)
	b.track(out, false)
}

func (b *balancer) close() {
	b.ln.Close()
	b.mu.Lock()
	b.closed = true
	conns := b.conns
	b.conns = map[net.Conn]struct{}{}
	b.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// --- MCP over HTTP, entering at a chosen node ---------------------------

// rpcReply is one MCP exchange as the host saw it.
// text is the first content item's text of a tools/call result.
func (a rpcReply) text() string {
	content, _ := a.result["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

func (a rpcReply) isError() bool { return a.result["isError"] == true }

// data decodes the tagged data of an answered call (nil when it is not).
func (a rpcReply) data() map[string]any {
	if a.result == nil || a.isError() {
		return nil
	}
	raw, err := protocol.UntagData(protocol.DefaultDataTag, a.text())
	if err != nil {
		return nil
	}
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// sentence is the relay's own sentence in an answer that is not a result:
// a tool error's text, a JSON-RPC error's message, or a plain body.
func (a rpcReply) sentence() string {
	switch {
	case a.result != nil:
		return a.text()
	case a.err != nil:
		s, _ := a.err["message"].(string)
		return s
	}
	return strings.TrimSpace(a.rawBody)
}

func (a rpcReply) String() string {
	return fmt.Sprintf("HTTP %d: %s", a.status, clip(a.rawBody, 400))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// isSentence reports whether s reads as one or more sentences for a person
// or a model (not empty, not a bare code or a stack trace).
func isSentence(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) >= 12 && strings.ContainsAny(s, " ") && strings.HasSuffix(s, ".")
}

var callSeq struct {
	sync.Mutex
	n int
}

func nextRPCID() int {
	callSeq.Lock()
	defer callSeq.Unlock()
	callSeq.n++
	return callSeq.n
}

// mcp sends one JSON-RPC request to node n (handshake era, SSE accepted).
func (n *clusterNode) mcp(ctx context.Context, token, method string, params map[string]any) (rpcReply, error) {
	return postMCP(ctx, n.http, n.c.public, token, nextRPCID(), method, params)
}

// postMCP sends one JSON-RPC request with id to public's MCP endpoint
// through client (which may dial a node, or the balancer).
func postMCP(ctx context.Context, client *http.Client, public, token string, id int, method string, params map[string]any) (rpcReply, error) {
	if params == nil {
		params = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, public+"/", strings.NewReader(string(body)))
	if err != nil {
		return rpcReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return rpcReply{}, err
	}
	defer resp.Body.Close()
	return tryReadReply(resp)
}

// callTool is tools/call of one tool at node n.
func (n *clusterNode) callTool(ctx context.Context, token, tool string, args map[string]any) (rpcReply, error) {
	if args == nil {
		args = map[string]any{}
	}
	return n.mcp(ctx, token, "tools/call", map[string]any{"name": tool, "arguments": args})
}

// --- OAuth, without t.Fatal (usable from goroutines) ---------------------

// registerHost registers a host at the cluster's public URL (any node
// serves OAuth, through the balancer).
func registerHost(public string) (*host, error) {
	h := newHost(nil, public)
	return h, h.tryRegister()
}

// tokens is a token answer.
type tokens struct{ Access, Refresh string }

// connect runs one authorization: /authorize, approve(code) as the person
// in their tab, the waiting page's status until approved, the code
// exchange.
//
// The nodes trust X-Forwarded-For (RELAY_TRUST_PROXY, as behind a load
// balancer), and each authorization comes from a browser and an address
// of its own (a loopback one, written in the header only): the relay
// limits authorization requests per address, and hundreds of people do
// not share one.
func (h *host) connect(approve func(code string) error) (tokens, error) {
	person := *h
	jar, _ := cookiejar.New(nil)
	person.http = &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: forwardedFor{nextPersonAddr()},
		CheckRedirect: h.http.CheckRedirect}
	f, err := person.tryAuthorize()
	if err != nil {
		return tokens{}, err
	}
	if err := approve(f.code); err != nil {
		return tokens{}, fmt.Errorf("approve: %w", err)
	}
	var st map[string]string
	for deadline := time.Now().Add(5 * time.Second); st["state"] != "approved"; time.Sleep(20 * time.Millisecond) {
		if st, err = person.tryStatus(f); err != nil {
			return tokens{}, err
		}
		if st["state"] != "approved" && time.Now().After(deadline) {
			return tokens{}, fmt.Errorf("status after approval: %v", st)
		}
	}
	code, err := person.tryCodeFrom(f, st["redirect"])
	if err != nil {
		return tokens{}, err
	}
	r, err := person.tryExchange(f, code)
	if err != nil {
		return tokens{}, err
	}
	if r.status != http.StatusOK || r.access() == "" || r.refresh() == "" {
		return tokens{}, fmt.Errorf("token: %d %s", r.status, clip(r.raw, 300))
	}
	return tokens{Access: r.access(), Refresh: r.refresh()}, nil
}

var personSeq atomic.Int64

// nextPersonAddr is a loopback address of its own for each person.
func nextPersonAddr() string {
	k := personSeq.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", 1+k/65536%250, k/256%256, 1+k%250)
}

// forwardedFor sends requests as a load balancer passes them on from addr.
type forwardedFor struct{ addr string }

func (f forwardedFor) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return http.DefaultTransport.RoundTrip(r)
}

// refreshVia presents a refresh token at the node of client.
func (h *host) refreshVia(client *http.Client, refresh string) (tokenReply, error) {
	at := *h
	at.http = client
	return at.tryRefresh(refresh)
}

// approveByProcess approves a connect code as the person in a tab process
// of browser b, through the node at nodeURL.
func approveByProcess(b *browser, nodeURL string) func(string) error {
	return func(code string) error {
		if out, err := b.ask(nodeURL, "approve", code); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
}

// connectedBrowser is a browser with a tab named name (started with
// tabArgs) through the cluster's balancer, and a host connected to it,
// approved at node 0.
func connectedBrowser(t *testing.T, c *cluster, name string, tabArgs ...string) (*browser, *tabProc, *host, tokens) {
	t.Helper()
	b := newBrowser(t)
	tab := b.startTab(c.public, name, tabArgs...)
	b.waitSecret()
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := h.connect(approveByProcess(b, c.nodes[0].url))
	if err != nil {
		t.Fatal(err)
	}
	return b, tab, h, tok
}

// fullScope is every tool of the probe bundle, every action.
func fullScope() []protocol.ScopeEntry {
	var out []protocol.ScopeEntry
	for _, tl := range protocol.ProbeBundle().Tools {
		out = append(out, protocol.ScopeEntry{Tool: tl.Name, Actions: []string{"*"}})
	}
	return out
}

// errorsJoin keeps at most n errors for a message, with the count.
type errorList struct {
	mu   sync.Mutex
	errs []string
	n    int
}

func (e *errorList) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.errs) < 20 {
		e.errs = append(e.errs, fmt.Sprintf(format, args...))
	}
}

func (e *errorList) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		return nil
	}
	return fmt.Errorf("%d failures, first %d:\n  %s", e.n, len(e.errs), strings.Join(e.errs, "\n  "))
}

// counts is a concurrent tally by kind, printed sorted.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counts) add(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[kind]++
}

func (c *counts) get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[kind]
}

func (c *counts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.m[k]))
	}
	return strings.Join(parts, " ")
}
