package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/protocol"
)

// BenchmarkLeanCallPath is issue 13's out-of-process benchmark: `tabrelay
// serve` (embedded store) with real headless tabs over real sockets, and
// an official go-sdk Streamable HTTP server in a process of its own as
// the peer, both reached by the same client code. It runs its phases once
// whatever b.N (run it with -benchtime 1x) and reports:
//
//   - p50-relay-us, p50-gosdk-us, ratio: a host's tools/call of echo to an
//     instant tab, the two servers called in turn in one loop;
//     p50-in-tab-us: of the relay's, the headless tab's own time, from its
//     socket's read of the call to its write of the result (the rest is the
//     relay's and the two hops'; LEAN_LATENCY_TRACE=PREFIX writes execution
//     traces of both processes over these calls, traceLatency);
//   - calls/cpu-s, allocs/call, B/call: 32 callers over 1,000 pairings,
//     the relay's CPU from /proc/PID/stat, its allocations from its own
//     Go metrics; cold-calls/cpu-s: 4,000 more, each with an access token
//     never used before (a refresh's), whose check reads the store;
//   - KiB/tab@N: the relay's RSS per idle tab at N tabs (each a browser of
//     its own, spread over 127.0.0.x source addresses), less the RSS
//     before the first tab; idle-cpu%: the relay's CPU over 30 s with the
//     most tabs; admit/s: new browsers welcomed per second while the tabs
//     connect, and per new browser the relay's CPU (relay-us/admit) and heap
//     allocations (B/admit) and the benchmark's own CPU (tab-us/admit; its
//     tabs are leanTabs, or headless ones with LEAN_CLIENT=headless); storm-s, ready-max-ms and admin-ready-max-ms: after a
//     restart of the relay (SIGTERM, drain, a new process on the same ports
//     and data), the time until every tab is back, and the longest /ready
//     took meanwhile on the public listener and on the admin one.
//
// LEAN_STORE=redis runs the relay on a redis-server of the benchmark's
// own (one node of a cluster) instead of the embedded store.
//
// LEAN_BINARY runs another build of tabrelay instead of this tree's (a
// baseline to compare with). LEAN_TABS (default 1000,10000,19000) sets the steps of the idle tabs;
// the process's file limit here is 20,000, which the relay's sockets and
// the tabs' ends (in this process) must each fit in. LEAN_PHASES (default
// calls,tabs,idle,storm) picks the phases; LEAN_IDLE_ONLY=1 is
// LEAN_PHASES=tabs,idle (no latency, throughput or restart); LEAN_IDLE_ROUNDS
// (default 1) measures the idle CPU that many times in a row, reporting
// their mean; LEAN_CALLS_PROFILE=FILE writes a 5 s CPU profile of the relay
// under the calls' load (after the measured run), LEAN_CALLS_ALLOCS=FILE
// a profile of the allocations it made in 5 s of that load; LEAN_PROFILE=FILE writes a 30 s CPU profile of the idle
// relay, taken from its admin listener after the measured rounds;
// LEAN_ADMIT_PROFILE=FILE one of the relay while the step up to
// LEAN_ADMIT_PROFILE_STEP tabs is admitted (profileAdmission).
//
// It runs only with TABRELAY_LEAN_BENCH=1 (make bench's second line), so
// that `-bench .` over every package does not run it as well:
//
//	TABRELAY_LEAN_BENCH=1 go test ./tests -run '^$' -bench BenchmarkLeanCallPath -benchtime 1x -timeout 20m
func BenchmarkLeanCallPath(b *testing.B) {
	if os.Getenv("TABRELAY_LEAN_BENCH") != "1" {
		b.Skip("set TABRELAY_LEAN_BENCH=1 (make bench does)")
	}
	phases := leanPhases(b)
	if phases["calls"] {
		peer := startGoSDKPeer(b)
		a := startBenchRelay(b, b.TempDir())
		latency(b, a, peer)
		throughput(b, a)
		a.stop()
	}
	if phases["tabs"] {
		idleTabs(b, startBenchRelay(b, b.TempDir()), phases)
	}
}

// The go-sdk peer: this test binary again, serving an echo tool.

const goSDKPeerEnv = "TABRELAY_BENCH_GOSDK_PEER"

// serveGoSDKPeer serves go-sdk's Streamable HTTP handler (stateless, its
// default answer shapes) with one tool, echo, at addr until killed.
func serveGoSDKPeer(addr string) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "gosdk-peer", Version: "1"}, nil)
	type echoArgs struct {
		Value any `json:"value"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes value"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, map[string]any, error) {
			return nil, map[string]any{"value": in.Value}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	if err := http.ListenAndServe(addr, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type benchPeer struct {
	url  string
	http *http.Client
}

func startGoSDKPeer(b *testing.B) *benchPeer {
	addr := freePort(b)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), goSDKPeerEnv+"="+addr)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &benchPeer{url: "http://" + addr, http: benchClient()}
	eventually(b, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, "the go-sdk peer listening")
	return p
}

func benchClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 128
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// The relay: one `tabrelay serve` process.

type benchRelay struct {
	b                  *testing.B
	listen, admin, dir string
	key                string
	url, adminURL      string
	redis              *redistest.Server // LEAN_STORE=redis: the relay's store
	clusterListen      string            // with redis: the node's RELAY_CLUSTER_LISTEN
	host               *host             // connectHosts's client, which refreshes
	http               *http.Client
	cmd                *exec.Cmd
	exited             chan struct{}
	tokens             []tokens
	tabs               []*headless.Tab
	stopTabs           []func()
	idleErrs           *errorList // what the idle phases' tabs failed on (leanTab)
}

func startBenchRelay(b *testing.B, dir string) *benchRelay {
	key := make([]byte, 32)
	rand.Read(key)
	r := &benchRelay{b: b, listen: freePort(b), admin: freePort(b), dir: dir, key: base64.StdEncoding.EncodeToString(key)}
	r.url, r.adminURL, r.http = "http://"+r.listen, "http://"+r.admin, benchClient()
	r.idleErrs = &errorList{}
	r.start()
	b.Cleanup(r.stop)
	return r
}

func (r *benchRelay) start() {
	r.spawn()
	eventually(r.b, func() bool { return r.readyStatus(time.Second) == http.StatusOK }, "the relay ready")
}

// spawn starts the relay's process and does not wait for it.
func (r *benchRelay) spawn() {
	bin := binary
	if v := os.Getenv("LEAN_BINARY"); v != "" {
		bin = v // another build of tabrelay, to compare with
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "RELAY_LISTEN=" + r.listen, "RELAY_ADMIN_LISTEN=" + r.admin,
		"RELAY_DATA_DIR=" + r.dir, "RELAY_PUBLIC_URL=" + r.url, "ALLOWED_ORIGINS=" + origin, "RELAY_TRUST_PROXY=true",
		"RELAY_BUNDLE=probe", "RELAY_SIGNING_KEY=" + r.key, "RELAY_LOG_LEVEL=warn", "RELAY_SHUTDOWN_DELAY=0s",
		"RELAY_DRAIN_WINDOW=5s", "RELAY_GRACE=20s"}
	logf, err := os.Create(filepath.Join(r.b.TempDir(), "relay.log"))
	if err != nil {
		r.b.Fatal(err)
	}
	cmd.Stderr = logf
	cmd.Env = append(cmd.Env, r.storeEnv()...)
	if err := cmd.Start(); err != nil {
		r.b.Fatal(err)
	}
	r.cmd, r.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(r.exited) }()
}

// storeEnv is the relay's store: the embedded one, or with
// LEAN_STORE=redis a redis-server of the benchmark's own on a free
// loopback port (one node of a cluster), started at the relay's first
// spawn and kept across its restarts.
func (r *benchRelay) storeEnv() []string {
	switch v := os.Getenv("LEAN_STORE"); v {
	case "", "embedded":
		return nil
	case "redis":
		if r.redis == nil {
			r.redis, r.clusterListen = redistest.Start(r.b), freePort(r.b)
		}
		return []string{"REDIS_URL=" + r.redis.URL(), "RELAY_CLUSTER_LISTEN=" + r.clusterListen}
	default:
		r.b.Fatalf("LEAN_STORE=%q: want embedded (the default) or redis", v)
		return nil
	}
}

// stop ends the tabs, then the relay (SIGTERM).
func (r *benchRelay) stop() {
	for _, s := range r.stopTabs {
		s()
	}
	r.stopTabs, r.tabs = nil, nil
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
	}
	r.cmd = nil
}

func (r *benchRelay) readyStatus(within time.Duration) int { return readyAt(r.url, within) }

// readyAt asks base's /ready, waiting at most within; 0: no answer.
func readyAt(base string, within time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/ready", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (r *benchRelay) metric(series string) float64 {
	n := &clusterNode{adminURL: r.adminURL}
	return n.metric(series)
}

// cpuTicks is the relay's user+system CPU in clock ticks (1/100 s).
func (r *benchRelay) cpuTicks() int64 {
	ut, st := r.cpuSplit()
	return ut + st
}

// cpuSplit is the relay's user and system CPU in clock ticks.
func (r *benchRelay) cpuSplit() (user, system int64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		r.b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	user, _ = strconv.ParseInt(f[11], 10, 64)
	system, _ = strconv.ParseInt(f[12], 10, 64)
	return user, system
}

// syscalls is how many read and write system calls the relay made so
// far (/proc/PID/io's syscr and syscw: reads and writes of its sockets,
// whether they moved bytes or found none).
func (r *benchRelay) syscalls() (reads, writes float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", r.cmd.Process.Pid))
	if err != nil {
		r.b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// rssKiB is the relay's resident set.
func (r *benchRelay) rssKiB() float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		r.b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return n
		}
	}
	return 0
}

var benchSource atomic.Int64

// sourceDialer dials from 127.0.0.x, x going round 2..254; with st, its
// connections record in st when they read and write.
func sourceDialer(st *stamps) *http.Client {
	k := benchSource.Add(1)
	ip := net.IPv4(127, 0, 0, byte(2+k%253))
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 10 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	if st != nil {
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stampedConn{Conn: c, s: st}, nil
		}
	}
	return &http.Client{Transport: t}
}

// addTabs connects n more headless tabs, each a new browser, with at
// most inflight connecting at once; it returns the seconds it took.
func (r *benchRelay) addTabs(n, inflight int) float64 { return r.addStampedTabs(n, inflight, nil) }

// addStampedTabs is addTabs, the tabs' sockets recording in st (nil:
// nowhere).
func (r *benchRelay) addStampedTabs(n, inflight int, st *stamps) float64 {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// One bundle for every tab: each would otherwise decode and check its
	// own, which cost the benchmark's process a quarter of its CPU (a tab's
	// cost, not the relay's, on the cores they share).
	bundle := protocol.ProbeBundle()
	sem := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := &errorList{}
	start := time.Now()
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			tab, err := headless.New(headless.Options{Relay: r.url, Origin: origin, Name: "idle", Logger: quiet, Dialer: sourceDialer(st),
				Bundle: bundle})
			if err != nil {
				errs.add("%v", err)
				return
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { tab.Run(ctx); close(done) }()
			wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
			defer wcancel()
			if err := tab.WaitConnected(wctx); err != nil {
				errs.add("%v", err)
			}
			mu.Lock()
			r.tabs = append(r.tabs, tab)
			r.stopTabs = append(r.stopTabs, func() { cancel(); <-done })
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errs.err(); err != nil {
		r.b.Fatal(err)
	}
	return time.Since(start).Seconds()
}

// benchCall is one tools/call of echo through client at url: the same
// lean client for both servers (one buffer per call, the answer's JSON
// found in a JSON body or in the event stream's data line).
func benchCall(ctx context.Context, client *http.Client, url, token string, v int) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"value":%d}}}`, v, v)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				msg = d
			}
		}
	}
	var a struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			Structured map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &a); err != nil {
		return fmt.Errorf("echo %d: %d %q", v, resp.StatusCode, clip(string(raw), 300))
	}
	got := a.Result.Structured // go-sdk's answer: its structured content, untagged
	if len(a.Result.Content) > 0 {
		if data, err := protocol.UntagData(protocol.DefaultDataTag, a.Result.Content[0].Text); err == nil {
			json.Unmarshal(data, &got)
		}
	}
	if got["value"] != float64(v) {
		return fmt.Errorf("echo %d: %d %q", v, resp.StatusCode, clip(string(raw), 300))
	}
	return nil
}

// connectHosts authorizes a host at n of the relay's tabs (their browsers
// approve with every tool in scope), 16 at a time.
func (r *benchRelay) connectHosts(n int) {
	h, err := registerHost(r.url)
	if err != nil {
		r.b.Fatal(err)
	}
	r.host = h
	r.tokens = make([]tokens, n)
	errs := &errorList{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			tok, err := h.connect(askApprove(r.tabs[i]))
			if err != nil {
				errs.add("%v", err)
			}
			r.tokens[i] = tok
		}()
	}
	wg.Wait()
	if err := errs.err(); err != nil {
		r.b.Fatal(err)
	}
}

func p50(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// latency calls the relay and the go-sdk peer in turn, one caller.
func latency(b *testing.B, r *benchRelay, peer *benchPeer) {
	legs := &stamps{}
	r.addStampedTabs(1, 1, legs)
	r.connectHosts(1)
	ctx := context.Background()
	tok := r.tokens[0].Access
	const warm, n = 300, 3000
	var rel, sdk []time.Duration
	var toTab, inTab, fromTab []time.Duration // a relay call's three legs, by the tab's socket
	stopTrace := func() {}
	for i := 0; i < warm+n; i++ {
		if i == warm {
			stopTrace = r.traceLatency()
		}
		legs.reset()
		t0 := time.Now()
		if err := benchCall(ctx, r.http, r.url, tok, i); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if read, wrote, ok := legs.legs(); ok && i >= warm {
			toTab, inTab, fromTab = append(toTab, read.Sub(t0)), append(inTab, wrote.Sub(read)), append(fromTab, t1.Sub(wrote))
		}
		if err := benchCall(ctx, peer.http, peer.url, "", i); err != nil {
			b.Fatal(err)
		}
		if i >= warm {
			rel, sdk = append(rel, t1.Sub(t0)), append(sdk, time.Since(t1))
		}
	}
	stopTrace()
	pr, ps := p50(rel), p50(sdk)
	b.ReportMetric(float64(pr.Microseconds()), "p50-relay-us")
	b.ReportMetric(float64(ps.Microseconds()), "p50-gosdk-us")
	b.ReportMetric(float64(pr)/float64(ps), "ratio")
	b.Logf("tools/call p50: relay %v, go-sdk %v, ratio %.2f (%d calls each, interleaved)", pr, ps, float64(pr)/float64(ps), n)
	if len(toTab) > 0 {
		b.Logf("a relay call's legs, p50 of %d: host to the tab's socket %v, in the tab (its read to its write) %v, the tab's socket to the host %v",
			len(toTab), p50(toTab), p50(inTab), p50(fromTab))
		b.ReportMetric(float64(p50(inTab).Microseconds()), "p50-in-tab-us")
	}
}

// throughput runs 32 callers over 1,000 pairings.
func throughput(b *testing.B, r *benchRelay) {
	const pairings, callers, perCaller = 1000, 32, 500
	r.addTabs(pairings, 64)
	r.connectHosts(pairings)
	ctx := context.Background()
	run := func(calls int, token func(k int) string) {
		var wg sync.WaitGroup
		errs := &errorList{}
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < calls; i++ {
					if err := benchCall(ctx, r.http, r.url, token(c*calls+i), i); err != nil {
						errs.add("%v", err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := errs.err(); err != nil {
			b.Fatal(err)
		}
	}
	reused := func(k int) string { return r.tokens[k%pairings].Access }
	run(50, reused) // every pairing active, connections warm
	m0, a0, t0, w0 := r.metric("go_memstats_mallocs_total"), r.metric("go_memstats_alloc_bytes_total"), r.cpuTicks(), time.Now()
	r0, wr0 := r.syscalls()
	run(perCaller, reused)
	wall, ticks := time.Since(w0), r.cpuTicks()-t0
	r1, wr1 := r.syscalls()
	m1, a1 := r.metric("go_memstats_mallocs_total"), r.metric("go_memstats_alloc_bytes_total")
	calls := float64(callers * perCaller)
	cps := calls / (float64(ticks) / 100)
	b.ReportMetric(cps, "calls/cpu-s")
	b.ReportMetric((m1-m0)/calls, "allocs/call")
	b.ReportMetric((a1-a0)/calls, "B/call")
	b.Logf("load: %d calls by %d callers over %d pairings in %v: %.0f calls per relay CPU-second (%.0f µs CPU per call), %.0f allocations and %.1f KiB per call, %.1f reads and %.1f writes (system calls) per call",
		int(calls), callers, pairings, wall.Round(time.Millisecond), cps, float64(ticks)*1e4/calls, (m1-m0)/calls, (a1-a0)/calls/1024, (r1-r0)/calls, (wr1-wr0)/calls)

	// Profiles of the relay under the same load, after the measured run
	// (their own cost stays out of it): CPU, and the allocations made
	// meanwhile.
	for env, profile := range map[string]string{"LEAN_CALLS_PROFILE": "profile?seconds=5", "LEAN_CALLS_ALLOCS": "allocs?seconds=5"} {
		path := os.Getenv(env)
		if path == "" {
			continue
		}
		done := make(chan struct{})
		go func() { defer close(done); r.saveProfile(profile, path, time.Minute) }()
		for {
			select {
			case <-done:
				b.Logf("%s of the relay under the calls' load: %s", profile, path)
			default:
				run(50, reused)
				continue
			}
			break
		}
	}

	// Cold: each call's token is new (a refresh's), so no check of it is
	// kept and the relay reads the store for it, as for a host's first
	// call after each refresh.
	const coldPerCaller = 125
	fresh := r.freshTokens(callers * coldPerCaller)
	t0, w0 = r.cpuTicks(), time.Now()
	run(coldPerCaller, func(k int) string { return fresh[k] })
	wall, ticks = time.Since(w0), r.cpuTicks()-t0
	calls = float64(callers * coldPerCaller)
	cps = calls / (float64(ticks) / 100)
	b.ReportMetric(cps, "cold-calls/cpu-s")
	b.Logf("cold: %d calls with tokens never used before in %v: %.0f calls per relay CPU-second (%.0f µs CPU per call)",
		int(calls), wall.Round(time.Millisecond), cps, float64(ticks)*1e4/calls)
}

// freshTokens mints n access tokens by refreshing the connections'
// families in turn, 16 refreshes at once, each family's one after the
// other; the k-th token is of connection k % len(r.tokens).
func (r *benchRelay) freshTokens(n int) []string {
	out := make([]string, n)
	errs := &errorList{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for p := range r.tokens {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for k := p; k < n; k += len(r.tokens) {
				rep, err := r.host.tryRefresh(r.tokens[p].Refresh)
				if err == nil && (rep.access() == "" || rep.refresh() == "") {
					err = fmt.Errorf("refresh: %d %s", rep.status, clip(rep.raw, 300))
				}
				if err != nil {
					errs.add("%v", err)
					return
				}
				out[k], r.tokens[p].Refresh = rep.access(), rep.refresh()
			}
		}()
	}
	wg.Wait()
	if err := errs.err(); err != nil {
		r.b.Fatal(err)
	}
	return out
}

func tabSteps() []int {
	v := os.Getenv("LEAN_TABS")
	if v == "" {
		v = "1000,10000,19000"
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// idleTabs grows the idle tabs by steps, then (phases idle, storm)
// measures them idle and restarts the relay under them.
func idleTabs(b *testing.B, r *benchRelay, phases map[string]bool) {
	time.Sleep(2 * time.Second)
	rss0 := r.rssKiB()
	var admitted, admitSecs, relayTicks, selfUs, allocBytes float64
	n := 0
	for _, step := range tabSteps() {
		add := step - n
		t0, s0, a0 := r.cpuTicks(), selfCPUMicros(), r.metric("go_memstats_alloc_bytes_total")
		profile := r.profileAdmission(step)
		secs := r.addIdleTabs(add, 512)
		ticks, self, bytes := float64(r.cpuTicks()-t0), selfCPUMicros()-s0, r.metric("go_memstats_alloc_bytes_total")-a0
		profile()
		n = step
		admitted, admitSecs, relayTicks, selfUs = admitted+float64(add), admitSecs+secs, relayTicks+ticks, selfUs+self
		allocBytes += bytes
		b.Logf("%d new browsers admitted in %.2fs (%.0f/s): the relay's CPU %.0f µs and %.1f KiB allocated per browser, the tabs' CPU %.0f µs",
			add, secs, float64(add)/secs, ticks*1e4/float64(add), bytes/1024/float64(add), self/float64(add))
		time.Sleep(3 * time.Second)
		per := (r.rssKiB() - rss0) / float64(step)
		b.ReportMetric(per, fmt.Sprintf("KiB/tab@%d", step))
		b.Logf("%d idle tabs: %.1f KiB RSS per tab", step, per)
	}
	b.ReportMetric(admitted/admitSecs, "admit/s")
	b.ReportMetric(relayTicks*1e4/admitted, "relay-us/admit")
	b.ReportMetric(selfUs/admitted, "tab-us/admit")
	b.ReportMetric(allocBytes/admitted, "B/admit")
	if phases["idle"] {
		r.idleCPU(n)
		if path := os.Getenv("LEAN_PROFILE"); path != "" {
			r.profile(path, idleWindow)
		}
	}
	if phases["storm"] {
		storm(b, r, n)
	}
	if err := r.idleErrs.err(); err != nil {
		b.Fatal(err) // a tab that stopped reconnecting, or was sent what an idle tab never is
	}
}

// idleWindow is how long the relay's idle CPU is measured, each round.
const idleWindow = 30 * time.Second

// idleCPU reports the relay's CPU with its n tabs idle: as % of a core
// (the mean of LEAN_IDLE_ROUNDS rounds), and per ping and its pong, at
// the relay's default interval (a ping to each tab every 25 s: what an
// idle tab costs is mostly those).
func (r *benchRelay) idleCPU(n int) {
	rounds, _ := strconv.Atoi(os.Getenv("LEAN_IDLE_ROUNDS"))
	rounds = max(rounds, 1)
	pingsPerSec := float64(n) / (25 * time.Second).Seconds()
	var sum float64
	for i := range rounds {
		u0, s0 := r.cpuSplit()
		time.Sleep(idleWindow)
		u1, s1 := r.cpuSplit()
		pct := float64(u1-u0+s1-s0) / idleWindow.Seconds()
		sum += pct
		r.b.Logf("%d idle tabs, round %d: %.2f %% of a core over %v (user %.2f, system %.2f), %.1f µs of relay CPU per ping and pong (%.0f pings a second)",
			n, i+1, pct, idleWindow, float64(u1-u0)/idleWindow.Seconds(), float64(s1-s0)/idleWindow.Seconds(), pct*1e4/pingsPerSec, pingsPerSec)
	}
	pct := sum / float64(rounds)
	r.b.ReportMetric(pct, "idle-cpu%")
	r.b.ReportMetric(pct*1e4/pingsPerSec, "idle-cpu-us/ping")
}

// stamps records when a tab's socket first read after reset and when it
// last wrote: one caller's call splits into the way to the tab, the tab's
// own time, and the way back.
type stamps struct {
	read, wrote atomic.Int64 // UnixNano; 0: not yet
}

func (s *stamps) reset() {
	s.read.Store(0)
	s.wrote.Store(0)
}

// legs returns the first read and the last write since reset, when both
// happened in that order.
func (s *stamps) legs() (read, wrote time.Time, ok bool) {
	r, w := s.read.Load(), s.wrote.Load()
	return time.Unix(0, r), time.Unix(0, w), r != 0 && w > r
}

type stampedConn struct {
	net.Conn
	s *stamps
}

func (c *stampedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.s.read.CompareAndSwap(0, time.Now().UnixNano())
	}
	return n, err
}

func (c *stampedConn) Write(p []byte) (int, error) {
	c.s.wrote.Store(time.Now().UnixNano())
	return c.Conn.Write(p)
}

// traceLatency starts, when LEAN_LATENCY_TRACE=PREFIX is set, an execution
// trace of the relay (PREFIX.relay, 2 s from its admin listener) and, until
// the returned function is called, one of this process, the host and the
// tab (PREFIX.bench), with its CPU profile (PREFIX.bench.cpu): where one
// caller's tools/call waits (go tool trace -pprof=sched PREFIX.relay).
func (r *benchRelay) traceLatency() (stop func()) {
	prefix := os.Getenv("LEAN_LATENCY_TRACE")
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(prefix + ".bench")
	if err != nil {
		r.b.Fatal(err)
	}
	if err := trace.Start(f); err != nil {
		r.b.Fatal(err)
	}
	cpu, err := os.Create(prefix + ".bench.cpu")
	if err != nil {
		r.b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		r.b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.saveProfile("trace?seconds=2", prefix+".relay", time.Minute) }()
	return func() {
		<-done
		pprof.StopCPUProfile()
		cpu.Close()
		trace.Stop()
		f.Close()
		r.b.Logf("execution traces over the latency calls: %s.relay, %s.bench", prefix, prefix)
	}
}

// profile writes a CPU profile of the relay over d to path, from its
// admin listener (/debug/pprof/profile).
func (r *benchRelay) profile(path string, d time.Duration) {
	r.saveProfile(fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path, d+30*time.Second)
	r.b.Logf("CPU profile of the idle relay over %v: %s", d, path)
}

// saveProfile writes the relay's /debug/pprof/<name> (its admin
// listener) to path, waiting at most within; a failure fails the
// benchmark (Errorf: it may run in a goroutine of its own).
func (r *benchRelay) saveProfile(name, path string, within time.Duration) {
	c := &http.Client{Timeout: within}
	resp, err := c.Get(r.adminURL + "/debug/pprof/" + name)
	if err != nil {
		r.b.Errorf("profile %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%d %q", resp.StatusCode, clip(string(raw), 200))
	}
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		r.b.Errorf("profile %s: %v", name, err)
	}
}

// storm stops the relay under its tabs (SIGTERM: it drains them) and
// starts it again; it reports the time until every tab is back, polling
// /ready on both listeners meanwhile: the public one (where the tabs
// storm) and the admin one.
func storm(b *testing.B, r *benchRelay, n int) {
	r.cmd.Process.Signal(syscall.SIGTERM)
	<-r.exited
	start := time.Now()
	r.spawn()
	var worst, worstAdmin time.Duration
	var failed, ok int
	poll := func(base string, worst *time.Duration) bool {
		t := time.Now()
		up := readyAt(base, 5*time.Second) == http.StatusOK
		*worst = max(*worst, time.Since(t))
		return up
	}
	for {
		if poll(r.url, &worst) {
			ok++
		} else {
			failed++
		}
		poll(r.adminURL, &worstAdmin)
		if ok > 0 && r.metric("tabrelay_tab_sockets") >= float64(n) {
			break
		}
		if time.Since(start) > 120*time.Second {
			b.Fatalf("%v tabs of %d back after 2 minutes", r.metric("tabrelay_tab_sockets"), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	secs := time.Since(start).Seconds()
	b.ReportMetric(secs, "storm-s")
	b.ReportMetric(float64(worst.Milliseconds()), "ready-max-ms")
	b.ReportMetric(float64(worstAdmin.Milliseconds()), "admin-ready-max-ms")
	b.Logf("restart under %d tabs: all back %.1fs after the new process started; /ready took at most %v on the public listener (%d polls of %d not 200, the first while the process starts), %v on the admin listener",
		n, secs, worst, failed, failed+ok, worstAdmin)
}
