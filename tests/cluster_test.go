package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/protocol"
)

// The multi-process cluster tests of SPEC §3 and §7: real `tabrelay serve`
// processes on loopback ports sharing a real redis-server (append-only),
// real `tabrelay tab` processes, and headless tabs over real WebSockets.
// cluster_harness_test.go starts them.

const probeTitle = "Probe"

// TestClusterCallsCrossNodes connects one tab process to each of three
// nodes and calls every tab through every node: each call returns the
// tab's own answer, and no pairing is active on two nodes.
// tabOn is a browser with one tab on a node, and its host's token.
type tabOn struct {
	b     *browser
	name  string
	token string
}

func TestClusterCallsCrossNodes(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3})
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	var tabs []tabOn
	for i, n := range c.nodes {
		b := newBrowser(t)
		name := fmt.Sprintf("tab-on-node%d", i)
		b.startTab(n.url, name, "--focus") // straight to node i
		b.waitSecret()
		tok, err := h.connect(approveByProcess(b, n.url))
		if err != nil {
			t.Fatalf("connecting the browser on node %d: %v", i, err)
		}
		tabs = append(tabs, tabOn{b: b, name: name, token: tok.Access})
	}
	for _, n := range c.nodes {
		eventually(t, func() bool { return n.metric("tabrelay_tabs_connected") == 1 }, "one tab on node %d (%s)", n.i, c.perNode("tabrelay_tabs_connected"))
	}
	ctx := t.Context()
	for _, tab := range tabs {
		for _, n := range c.nodes {
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			a, err := n.callTool(cctx, tab.token, "whoami", nil)
			cancel()
			if err != nil {
				t.Fatalf("whoami of %s entering at node %d: %v", tab.name, n.i, err)
			}
			if got := a.data()["tab"]; got != tab.name {
				t.Fatalf("whoami of %s entering at node %d answered %v (want the tab's name): %v", tab.name, n.i, got, a)
			}
			t.Logf("whoami of %s entering at node %d: %v", tab.name, n.i, time.Since(start).Round(time.Millisecond))
		}
	}
	// A call whose answer takes a while, entering away from its pairing.
	for i, tab := range tabs {
		n := c.nodes[(i+1)%len(c.nodes)]
		a, err := n.callTool(ctx, tab.token, "wait", map[string]any{"ms": 300})
		if err != nil || a.data()["waited"] != 300.0 {
			t.Fatalf("wait of %s entering at node %d: %v %v", tab.name, n.i, err, a)
		}
	}
	c.waitSum("tabrelay_pairings_active", 3, 5*time.Second)
	t.Logf("pairings active: %s; activations: %s", c.perNode("tabrelay_pairings_active"), c.perNode("tabrelay_placement_activations_total"))
	for _, n := range c.nodes {
		// Local first: each pairing is activated where its tab's socket is.
		if got := n.metric("tabrelay_pairings_active"); got != 1 {
			t.Errorf("node %d holds %v pairings, want 1 (local first: the pairing of the tab on this node)", n.i, got)
		}
	}
	for _, tab := range tabs {
		for id, k := range tab.b.execCounts() {
			if k != 1 {
				t.Errorf("call %s ran %d times in %s", id, k, tab.name)
			}
		}
	}
	c.debugCheck()
}

// TestClusterKill9 kills the node that holds the pairings (their tabs'
// sockets are there) with SIGKILL while calls to them are in flight from
// other nodes: the calls end (with their result or the restarting
// sentence, never at their deadline), the tabs reconnect elsewhere by
// themselves through the balancer, and the pairings answer again within
// 5 s of the kill.
func TestClusterKill9(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 3, callWait: 20 * time.Second})
	c.lb.setPrefer(0) // every tab lands on node 0
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	var tabs []tabOn
	for i := 0; i < 3; i++ {
		b := newBrowser(t)
		name := fmt.Sprintf("tab%d", i)
		b.startTab(c.public, name, "--focus")
		b.waitSecret()
		tok, err := h.connect(approveByProcess(b, c.nodes[0].url))
		if err != nil {
			t.Fatal(err)
		}
		tabs = append(tabs, tabOn{b: b, name: name, token: tok.Access})
	}
	victim := c.nodes[0]
	eventually(t, func() bool { return victim.metric("tabrelay_tabs_connected") == 3 }, "3 tabs on node 0 (%s)", c.perNode("tabrelay_tabs_connected"))
	if got := victim.metric("tabrelay_pairings_active"); got != 3 {
		t.Fatalf("node 0 holds %v pairings, want 3 (local first: their tabs are there); per node: %s", got, c.perNode("tabrelay_pairings_active"))
	}
	ctx := t.Context()
	for i, tab := range tabs {
		a, err := c.nodes[1+i%2].callTool(ctx, tab.token, "whoami", nil)
		if err != nil || a.data()["tab"] != tab.name {
			t.Fatalf("before the kill, whoami of %s: %v %v", tab.name, err, a)
		}
	}

	// Calls in flight on the victim's pairings, entering at the survivors.
	type flight struct {
		a    rpcReply
		err  error
		took time.Duration
		end  time.Time
	}
	inflight := make([]chan flight, 2)
	for k := range inflight {
		inflight[k] = make(chan flight, 1)
		go func(k int) {
			start := time.Now()
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second) // past TAB_CALL_WAIT: the relay must end it first
			defer cancel()
			a, err := c.nodes[1+k].callTool(cctx, tabs[k].token, "wait", map[string]any{"ms": 4000})
			inflight[k] <- flight{a, err, time.Since(start), time.Now()}
		}(k)
	}
	for k := range inflight {
		eventually(t, func() bool {
			raw, _ := os.ReadFile(tabs[k].b.execLog)
			return strings.Contains(string(raw), " wait\n")
		}, "the tab of %s runs the wait", tabs[k].name)
	}

	c.lb.setPrefer(-1)
	killed := time.Now()
	victim.kill9()
	t.Logf("node 0 killed (%v to reap)", time.Since(killed).Round(time.Millisecond))

	// The pairings answer again, through either survivor, within 5 s.
	var wg sync.WaitGroup
	back := make([]time.Duration, len(tabs))
	lastErr := make([]string, len(tabs))
	for i := range tabs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for attempt := 0; time.Since(killed) < 20*time.Second; attempt++ {
				n := c.nodes[1+attempt%2]
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				a, err := n.callTool(cctx, tabs[i].token, "whoami", nil)
				cancel()
				if err == nil && a.data()["tab"] == tabs[i].name {
					back[i] = time.Since(killed)
					return
				}
				if err != nil {
					lastErr[i] = fmt.Sprintf("node %d: %v", n.i, err)
				} else {
					lastErr[i] = fmt.Sprintf("node %d: %v", n.i, a)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}(i)
	}

	for k := range inflight {
		select {
		case f := <-inflight[k]:
			switch {
			case f.err != nil:
				t.Errorf("the call in flight entering at node %d ended with %v after %v", 1+k, f.err, f.took)
			case f.end.Before(killed):
				t.Errorf("the call in flight entering at node %d ended before the kill, after %v: %v", 1+k, f.took, f.a)
			case f.a.data()["waited"] == 4000.0:
				t.Logf("the call in flight entering at node %d was answered by its tab %v after the kill", 1+k, f.end.Sub(killed).Round(time.Millisecond))
			case f.a.isError() && f.a.text() == protocol.RestartingSentence(""):
				t.Logf("the call in flight entering at node %d got the restarting sentence %v after the kill", 1+k, f.end.Sub(killed).Round(time.Millisecond))
			default:
				t.Errorf("the call in flight entering at node %d ended after %v with neither its result nor the restarting sentence: %v", 1+k, f.took, f.a)
			}
			if since := f.end.Sub(killed); since > 10*time.Second {
				t.Errorf("the call in flight entering at node %d ended %v after the kill (TAB_CALL_WAIT is 20 s): it hung", 1+k, since)
			}
		case <-time.After(time.Until(killed.Add(25 * time.Second))):
			t.Fatalf("the call in flight entering at node %d still hangs 25 s after the kill", 1+k)
		}
	}
	wg.Wait()
	for i, d := range back {
		switch {
		case d == 0:
			t.Errorf("the pairing of %s never answered again after the kill; last: %s", tabs[i].name, lastErr[i])
		case d > 5*time.Second:
			t.Errorf("the pairing of %s answered again %v after the kill, want within 5 s", tabs[i].name, d.Round(time.Millisecond))
		default:
			t.Logf("the pairing of %s answered again %v after the kill", tabs[i].name, d.Round(time.Millisecond))
		}
	}
	c.waitMembers(2, 10*time.Second)
	c.waitSum("tabrelay_pairings_active", 3, 10*time.Second)
	for _, tab := range tabs {
		for id, k := range tab.b.execCounts() {
			if k != 1 {
				t.Errorf("call %s ran %d times in %s", id, k, tab.name)
			}
		}
	}
	c.debugCheck()
}

// loadTab is one headless tab of the rolling restart with its connection.
type loadTab struct {
	tab   *headless.Tab
	token string
	// counter increments sent to the tab, and answered by it: its counter
	// must end between the two, or some call ran twice (under whatever
	// call id).
	incSent, incAnswered atomic.Int64
}

// startHeadlessTabs runs n headless tabs (one browser each, secrets in
// memory) through the balancer and connects a host to each of them.
func startHeadlessTabs(t *testing.T, c *cluster, n int) []*loadTab {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	out := make([]*loadTab, n)
	for i := range out {
		tab, err := headless.New(headless.Options{Relay: c.public, Origin: origin, Name: fmt.Sprintf("h%03d", i), Focus: true,
			Logger: quiet, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &loadTab{tab: tab}
		running.Add(1)
		go func() { defer running.Done(); tab.Run(ctx) }()
	}
	for _, lt := range out {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		err := lt.tab.WaitConnected(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("tab %s not connected: %v", lt.tab.Name(), err)
		}
	}
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	var errs errorList
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				lt := out[i]
				tok, err := h.connect(func(code string) error {
					ref := fmt.Sprintf("approve-%d", i)
					actx, acancel := context.WithTimeout(ctx, 10*time.Second)
					defer acancel()
					_, err := lt.tab.Ask(actx, protocol.Approve{Envelope: protocol.Envelope{Type: protocol.TypeApprove, Ref: ref},
						Code: code, Scope: fullScope()}, ref)
					return err
				})
				if err != nil {
					errs.add("tab %s: %v", lt.tab.Name(), err)
					continue
				}
				lt.token = tok.Access
			}
		}()
	}
	for i := range out {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := errs.err(); err != nil {
		t.Fatalf("connecting hosts to the headless tabs: %v", err)
	}
	return out
}

// upSet is the test's view of which nodes take requests (the balancer's
// health checks, for the hosts' requests).
type upSet struct {
	mu   sync.Mutex
	down map[int]bool
	next int
}

func (u *upSet) set(i int, up bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.down == nil {
		u.down = map[int]bool{}
	}
	u.down[i] = !up
}

// pick returns the next node up, round robin.
func (u *upSet) pick(n int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k := 0; k < n; k++ {
		i := (u.next + k) % n
		if !u.down[i] {
			u.next = i + 1
			return i
		}
	}
	return -1
}

// TestClusterRollingRestart restarts each of three nodes in turn (SIGTERM,
// wait for the exit, start again on the same ports, wait for /ready) under
// a steady load of MCP calls spread over the nodes up, with 200 headless
// tabs (one browser each) in this process over real WebSockets through the
// balancer. Every call returns its result or a clear sentence, no call id
// runs twice on a tab, and at the end every tab is connected again and
// answers.
func TestClusterRollingRestart(t *testing.T) {
	rollingRestart(t, clusterOptions{nodes: 3, drainWindow: 2 * time.Second, grace: 8 * time.Second, callWait: 20 * time.Second}, 200)
}

func rollingRestart(t *testing.T, opts clusterOptions, nTabs int) {
	const workers = 6
	c := startCluster(t, opts)
	setupStart := time.Now()
	tabs := startHeadlessTabs(t, c, nTabs)
	c.waitSum("tabrelay_tabs_connected", float64(nTabs), 20*time.Second)
	t.Logf("%d tabs connected and approved in %v; tabs per node: %s", nTabs, time.Since(setupStart).Round(time.Millisecond), c.perNode("tabrelay_tabs_connected"))

	testStart := time.Now()
	var up upSet
	var stop atomic.Bool
	var failures errorList
	var kinds counts
	var seq atomic.Int64
	var slowest atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for !stop.Load() {
				lt := tabs[rng.IntN(len(tabs))]
				i := up.pick(len(c.nodes))
				if i < 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				n := c.nodes[i]
				id := seq.Add(1)
				tool, args := "echo", map[string]any{"value": fmt.Sprintf("v%d", id)}
				switch id % 3 {
				case 0:
					tool, args = "wait", map[string]any{"ms": 100 + rng.IntN(400)}
				case 1:
					tool, args = "counter", map[string]any{"action": "increment"}
					lt.incSent.Add(1)
				}
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), c.opts.callWait+5*time.Second)
				a, err := n.callTool(ctx, lt.token, tool, args)
				timedOut := ctx.Err() == context.DeadlineExceeded
				cancel()
				took := time.Since(start)
				if ms := took.Milliseconds(); ms > slowest.Load() {
					slowest.Store(ms)
				}
				what := fmt.Sprintf("%s to %s (pairing %s) entering at node %d after %v", tool, lt.tab.Name(), lt.tab.Pairing(), i, took.Round(time.Millisecond))
				if took > 2*time.Second {
					t.Logf("slow: %s (from %v into the test): %v", what, start.Sub(testStart).Round(time.Millisecond), clip(a.String(), 200))
				}
				switch {
				case err != nil && timedOut:
					kinds.add("hang")
					failures.add("%s: not ended 5 s past TAB_CALL_WAIT (%v): %v", what, c.opts.callWait, err)
				case err != nil:
					kinds.add("transport_error")
					failures.add("%s: %v", what, err)
				case took > 10*time.Second:
					kinds.add("hang")
					failures.add("%s: took over 10 s: %v", what, a)
				case a.status == http.StatusServiceUnavailable:
					if isSentence(sentenceOf(a.sentence())) {
						kinds.add("503_sentence")
					} else {
						kinds.add("503_bare")
						failures.add("%s: 503 without a sentence: %v", what, a)
					}
				case a.status != http.StatusOK || a.result == nil:
					kinds.add(fmt.Sprintf("http_%d", a.status))
					failures.add("%s: %v", what, a)
				case !a.isError():
					d := a.data()
					switch {
					case tool == "echo" && d["value"] != args["value"],
						tool == "wait" && d["waited"] != float64(args["ms"].(int)),
						tool == "counter" && d["counter"] == nil:
						kinds.add("wrong_result")
						failures.add("%s: a result that is not this call's: %v", what, a)
					default:
						kinds.add("answered")
						if tool == "counter" {
							lt.incAnswered.Add(1)
						}
					}
				case a.text() == protocol.RestartingSentence(""):
					kinds.add("restarting")
				case a.text() == protocol.NoTabSentence(probeTitle):
					kinds.add("no_tab")
				case strings.HasPrefix(a.text(), "The tab did not answer within"):
					kinds.add("timeout")
					failures.add("%s: waited out its deadline: %v", what, a)
				case isSentence(a.text()):
					kinds.add("other_sentence")
					t.Logf("%s: sentence %q", what, a.text())
				default:
					kinds.add("unclear")
					failures.add("%s: %v", what, a)
				}
			}
		}(w)
	}

	time.Sleep(time.Second)
	restartsStart := time.Now()
	for _, n := range c.nodes {
		// As a deployment does: the balancer stops sending new requests
		// and sockets (readiness, pre-stop), then SIGTERM.
		up.set(n.i, false)
		c.lb.setUp(n.i, false)
		time.Sleep(300 * time.Millisecond)
		t.Logf("node %d: SIGTERM %v into the test", n.i, time.Since(testStart).Round(time.Millisecond))
		took, err := n.terminate(c.opts.grace + 5*time.Second)
		if err != nil {
			t.Errorf("node %d exited with %v after SIGTERM", n.i, err)
		}
		if took > c.opts.grace+time.Second {
			t.Errorf("node %d took %v to exit, its grace is %v", n.i, took, c.opts.grace)
		}
		restartAt := time.Now()
		n.restart(30 * time.Second)
		t.Logf("node %d: drained in %v, ready again %v after its start; tabs per node: %s", n.i, took.Round(time.Millisecond),
			time.Since(restartAt).Round(time.Millisecond), c.perNode("tabrelay_tabs_connected"))
		c.lb.setUp(n.i, true)
		up.set(n.i, true)
		c.waitMembers(len(c.nodes), 15*time.Second)
		time.Sleep(time.Second)
	}
	t.Logf("rolling restart of %d nodes took %v", len(c.nodes), time.Since(restartsStart).Round(time.Millisecond))
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("calls: %d (%s); slowest %d ms", seq.Load(), &kinds, slowest.Load())
	if err := failures.err(); err != nil {
		t.Errorf("calls under the rolling restart: %v", err)
	}
	if kinds.get("answered") < 100 {
		t.Errorf("only %d calls answered: the load did not load", kinds.get("answered"))
	}

	// Every tab is back, and answers.
	for _, lt := range tabs {
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := lt.tab.WaitConnected(wctx); err != nil {
			t.Errorf("tab %s not connected again: %v", lt.tab.Name(), err)
		}
		wcancel()
	}
	if err := c.sumWithin("tabrelay_tabs_connected", float64(nTabs), 10*time.Second); err != nil {
		t.Errorf("after the restarts: %v", err)
	}
	if err := c.sumWithin("tabrelay_pairings_active", float64(nTabs), 5*time.Second); err != nil {
		t.Errorf("after the restarts (a pairing active twice, or a gauge that drifts): %v", err)
	}
	t.Logf("after the restarts: tabs per node %s; pairings per node %s; %s", c.perNode("tabrelay_tabs_connected"),
		c.perNode("tabrelay_pairings_active"), c.placementRecords())
	var noRecord []string
	for _, lt := range tabs {
		if at := c.recordOf(lt.tab.Pairing()); at < 0 {
			noRecord = append(noRecord, fmt.Sprintf("%s (%d)", lt.tab.Name(), at))
		}
	}
	if len(noRecord) > 0 {
		t.Errorf("%d connected tabs' pairings have no activation record naming a running node: %v", len(noRecord), noRecord)
	}
	var final errorList
	jobs := make(chan int)
	var fwg sync.WaitGroup
	for w := 0; w < 8; w++ {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			for k := range jobs {
				lt := tabs[k]
				n := c.nodes[k%len(c.nodes)]
				ctx, cancel := context.WithTimeout(context.Background(), c.opts.callWait+5*time.Second)
				a, err := n.callTool(ctx, lt.token, "whoami", nil)
				if err != nil || a.data()["tab"] != lt.tab.Name() {
					final.add("whoami of %s (pairing %s, record on node %d) entering at node %d: %v %v", lt.tab.Name(), lt.tab.Pairing(), c.recordOf(lt.tab.Pairing()), n.i, err, a)
				}
				if err != nil || a.data()["tab"] != lt.tab.Name() {
					cancel()
					continue
				}
				a, err = n.callTool(ctx, lt.token, "counter", map[string]any{"action": "get"})
				cancel()
				v, _ := a.data()["counter"].(float64)
				if err != nil || int64(v) < lt.incAnswered.Load() || int64(v) > lt.incSent.Load() {
					final.add("the counter of %s is %v after %d increments sent and %d answered (a call ran twice, or an answer was not the tab's): %v %v",
						lt.tab.Name(), a.data()["counter"], lt.incSent.Load(), lt.incAnswered.Load(), err, a)
				}
			}
		}()
	}
	for k := range tabs {
		jobs <- k
	}
	close(jobs)
	fwg.Wait()
	if err := final.err(); err != nil {
		t.Errorf("after the rolling restart: %v", err)
	}
	ran := 0
	for _, lt := range tabs {
		for id, k := range lt.tab.Executions() {
			ran++
			if k != 1 {
				t.Errorf("call %s ran %d times on tab %s", id, k, lt.tab.Name())
			}
		}
	}
	t.Logf("the tabs ran %d calls, each once", ran)
	c.debugCheck()
}

// sentenceOf is the sentence in an error body: an OAuth error_description,
// a JSON message, or the text itself.
func sentenceOf(body string) string {
	var m map[string]any
	if json.Unmarshal([]byte(body), &m) == nil {
		for _, k := range []string{"error_description", "message", "reason"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
		if e, ok := m["error"].(map[string]any); ok {
			if s, ok := e["message"].(string); ok {
				return s
			}
		}
		if s, ok := m["error"].(string); ok {
			return s
		}
	}
	return strings.TrimSpace(body)
}

// TestClusterRedisOutage stops Redis (append-only) for 10 s under two
// nodes and starts it again: meanwhile /ready is false and requests are
// answered 503 with a sentence (never a hang, never a refusal a client
// would act on, such as invalid_grant), /health stays up; within 5 s of
// Redis coming back every node is ready, the token issued before still
// works and so does its refresh token.
func TestClusterRedisOutage(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 2})
	b, _, h, tok := connectedBrowser(t, c, "a", "--focus")
	ctx := t.Context()
	whoami := func(n *clusterNode, token string) (rpcReply, error) {
		cctx, cancel := context.WithTimeout(ctx, 8*time.Second)
		defer cancel()
		return n.callTool(cctx, token, "whoami", nil)
	}
	for _, n := range c.nodes {
		if a, err := whoami(n, tok.Access); err != nil || a.data()["tab"] != "a" {
			t.Fatalf("before the outage, whoami at node %d: %v %v", n.i, err, a)
		}
	}

	c.redis.Stop()
	stopped := time.Now()
	t.Logf("redis stopped")
	for _, n := range c.nodes {
		for n.ready() != http.StatusServiceUnavailable {
			if time.Since(stopped) > 5*time.Second {
				t.Fatalf("node %d: GET /ready answers %d 5 s into the outage, want 503", n.i, n.ready())
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("node %d not ready %v into the outage", n.i, time.Since(stopped).Round(time.Millisecond))
	}
	var problems errorList
	rounds := 0
	for time.Since(stopped) < 9*time.Second {
		rounds++
		for _, n := range c.nodes {
			if st := n.ready(); st != http.StatusServiceUnavailable {
				problems.add("round %d: node %d /ready answered %d during the outage", rounds, n.i, st)
			}
			resp, err := n.http.Get(c.public + "/health")
			if err != nil || resp.StatusCode != http.StatusOK {
				problems.add("round %d: node %d /health: %v %v", rounds, n.i, err, resp)
			}
			if resp != nil {
				resp.Body.Close()
			}
			start := time.Now()
			a, err := whoami(n, tok.Access)
			switch {
			case err != nil:
				problems.add("round %d: node %d tools/call: %v after %v", rounds, n.i, err, time.Since(start))
			case a.status != http.StatusServiceUnavailable || !isSentence(sentenceOf(a.sentence())):
				problems.add("round %d: node %d tools/call during the outage: %v (want 503 with a sentence)", rounds, n.i, a)
			}
			r, err := h.refreshVia(n.http, tok.Refresh)
			switch {
			case err != nil:
				problems.add("round %d: node %d refresh: %v", rounds, n.i, err)
			case r.status != http.StatusServiceUnavailable || !isSentence(sentenceOf(r.raw)):
				problems.add("round %d: node %d refresh during the outage: %d %s (want 503 with a sentence; a 400 would make the host drop its token)", rounds, n.i, r.status, clip(r.raw, 300))
			}
			if rounds == 1 {
				t.Logf("node %d during the outage: tools/call %v; refresh %d %s", n.i, a, r.status, clip(r.raw, 200))
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := problems.err(); err != nil {
		t.Errorf("during the outage: %v", err)
	}
	time.Sleep(time.Until(stopped.Add(10 * time.Second)))

	c.redis.Restart()
	restarted := time.Now()
	t.Logf("redis started again after %v", restarted.Sub(stopped).Round(time.Millisecond))
	for _, n := range c.nodes {
		for n.ready() != http.StatusOK {
			if time.Since(restarted) > 5*time.Second {
				t.Fatalf("node %d: GET /ready answers %d 5 s after Redis came back, want 200", n.i, n.ready())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, n := range c.nodes {
		var a rpcReply
		var err error
		for {
			a, err = whoami(n, tok.Access)
			if err == nil && a.data()["tab"] == "a" {
				break
			}
			if time.Since(restarted) > 5*time.Second {
				t.Fatalf("node %d: the token issued before the outage does not work 5 s after Redis came back: %v %v", n.i, err, a)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("every node ready and answering %v after Redis came back", time.Since(restarted).Round(time.Millisecond))
	fresh, err := h.refreshVia(c.nodes[1].http, tok.Refresh)
	if err != nil || fresh.status != http.StatusOK || fresh.access() == "" {
		t.Fatalf("the refresh token issued before the outage: %v %d %s", err, fresh.status, clip(fresh.raw, 300))
	}
	if a, err := whoami(c.nodes[0], fresh.access()); err != nil || a.data()["tab"] != "a" {
		t.Fatalf("the access token refreshed after the outage: %v %v", err, a)
	}
	for id, k := range b.execCounts() {
		if k != 1 {
			t.Errorf("call %s ran %d times", id, k)
		}
	}
}

// rawTab is one tab socket of the relay at addr (host:port) that only
// says hello: enough to activate its pairing, with no goroutine of its own.
func rawTab(ctx context.Context, addr, secret string) (*websocket.Conn, string, error) {
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/tab", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
	if err != nil {
		return nil, "", err
	}
	hello, _ := json.Marshal(protocol.Hello{Envelope: protocol.Typed(protocol.TypeHello), Protocol: protocol.Version,
		Secret: secret, TabID: fmt.Sprintf("t%016x", rand.Uint64()), Bundle: protocol.ProbeBundle().Version})
	if err := ws.Write(ctx, websocket.MessageText, hello); err != nil {
		ws.CloseNow()
		return nil, "", err
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			ws.CloseNow()
			return nil, "", err
		}
		var w protocol.Welcome
		if json.Unmarshal(data, &w) == nil && w.Type == protocol.TypeWelcome {
			return ws, w.Pairing, nil
		}
	}
}

// TestClusterActivationRace has two tabs of each of 2,000 browsers say
// hello at once, one to each of two nodes: every pairing is activated
// once, on one node (the sum of tabrelay_pairings_active and of
// tabrelay_placement_activations_total over the nodes is 2,000), and each
// pair of tabs is welcomed into the same pairing.
func TestClusterActivationRace(t *testing.T) {
	activationRace(t, clusterOptions{nodes: 2})
}

func activationRace(t *testing.T, opts clusterOptions) {
	const browsers, parallel = 2000, 48
	// 2,000 new browsers from one address: over its limit of new pairings.
	opts.env = append(opts.env, "RELAY_NEW_PAIRINGS_PER_HOUR=0")
	c := startCluster(t, opts)
	secrets := make([]string, browsers)
	for i := range secrets {
		secrets[i] = randomString()[:43]
	}
	var mu sync.Mutex
	var conns []*websocket.Conn
	t.Cleanup(func() {
		for _, ws := range conns {
			ws.CloseNow()
		}
	})
	var errs errorList
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				go1 := make(chan struct{})
				type got struct {
					ws      *websocket.Conn
					pairing string
					err     error
				}
				res := make([]got, 2)
				var pair sync.WaitGroup
				for k := 0; k < 2; k++ {
					pair.Add(1)
					go func(k int) {
						defer pair.Done()
						<-go1
						ws, p, err := rawTab(ctx, c.nodes[k].listen, secrets[i])
						res[k] = got{ws, p, err}
					}(k)
				}
				close(go1)
				pair.Wait()
				cancel()
				mu.Lock()
				for k, r := range res {
					if r.err != nil {
						errs.add("browser %d, tab on node %d: %v", i, k, r.err)
					} else {
						conns = append(conns, r.ws)
					}
				}
				mu.Unlock()
				if res[0].err == nil && res[1].err == nil && res[0].pairing != res[1].pairing {
					errs.add("browser %d: welcomed into pairings %s and %s", i, res[0].pairing, res[1].pairing)
				}
			}
		}()
	}
	for i := 0; i < browsers; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d tabs of %d browsers welcomed in %v", len(conns), browsers, time.Since(start).Round(time.Millisecond))
	if err := errs.err(); err != nil {
		t.Fatalf("racing hellos: %v", err)
	}
	c.waitSum("tabrelay_tabs_connected", 2*browsers, 30*time.Second)
	t.Logf("tabs per node %s; pairings per node %s; activations per node %s; lookups %s", c.perNode("tabrelay_tabs_connected"),
		c.perNode("tabrelay_pairings_active"), c.perNode("tabrelay_placement_activations_total"), lookups(c))
	if sum, missing := c.sumMetric("tabrelay_pairings_active"); sum != browsers || missing > 0 {
		t.Errorf("tabrelay_pairings_active summed over the nodes is %v (missing on %d), want %d: some pairing is active twice", sum, missing, browsers)
	}
	if sum, missing := c.sumMetric("tabrelay_placement_activations_total"); sum != browsers || missing > 0 {
		t.Errorf("tabrelay_placement_activations_total summed over the nodes is %v (missing on %d), want %d", sum, missing, browsers)
	}
	// Tabs count where their pairing lives: both tabs of each browser
	// registered with its one actor.
	for _, n := range c.nodes {
		if tabs, pairings := n.metric("tabrelay_tabs_connected"), n.metric("tabrelay_pairings_active"); tabs != 2*pairings {
			t.Errorf("node %d: %v tabs registered with its %v pairings, want two per pairing", n.i, tabs, pairings)
		}
	}
	c.debugCheck()
}

// lookups lists tabrelay_placement_lookups_total by result over the nodes.
func lookups(c *cluster) string {
	var parts []string
	for _, n := range c.nodes {
		m, err := n.metrics()
		if err != nil {
			continue
		}
		for series, v := range m {
			if strings.HasPrefix(series, "tabrelay_placement_lookups_total") {
				parts = append(parts, fmt.Sprintf("node%d %s=%v", n.i, strings.TrimPrefix(series, "tabrelay_placement_lookups_total"), v))
			}
		}
	}
	return strings.Join(parts, " ")
}

// TestClusterListenTakenSaysWhich: a node whose actor remote cannot listen
// exits at start with a line naming the setting.
func TestClusterListenTakenSaysWhich(t *testing.T) {
	srv := redistest.Start(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "RELAY_DATA_DIR=" + t.TempDir(), "ALLOWED_ORIGINS=" + origin,
		"RELAY_LISTEN=" + freePort(t), "RELAY_ADMIN_LISTEN=" + freePort(t),
		"REDIS_URL=" + srv.URL(), "RELAY_SIGNING_KEY=" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"RELAY_CLUSTER_LISTEN=" + held.Addr().String()}
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "(RELAY_CLUSTER_LISTEN)") ||
		!strings.Contains(string(out), "address already in use") {
		t.Fatalf("exit %d, output:\n%s\nwant exit 1 and a line naming RELAY_CLUSTER_LISTEN", code, out)
	}
}

// TestClusterDrainMovesCallsInFlight: a node drains (SIGTERM) while its
// pairing holds a call that takes longer than the node's whole grace: the
// pairing moves to another member with the call, the tab (which reconnects
// elsewhere through the balancer) answers it there, the host gets the
// result, the node exits within its grace, and the call ran once.
func TestClusterDrainMovesCallsInFlight(t *testing.T) {
	const grace = 5 * time.Second
	c := startCluster(t, clusterOptions{nodes: 3, drainWindow: time.Second, grace: grace, callWait: 30 * time.Second})
	c.lb.setPrefer(0) // the tab lands on node 0, and its pairing with it
	h, err := registerHost(c.public)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.startTab(c.public, "mover", "--focus")
	b.waitSecret()
	tok, err := h.connect(approveByProcess(b, c.nodes[0].url))
	if err != nil {
		t.Fatal(err)
	}
	victim := c.nodes[0]
	eventually(t, func() bool { return victim.metric("tabrelay_pairings_active") == 1 }, "the pairing on node 0 (%s)", c.perNode("tabrelay_pairings_active"))

	const ms = 8000 // longer than the grace
	type answer struct {
		a   rpcReply
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
		defer cancel()
		a, err := c.nodes[1].callTool(ctx, tok.Access, "wait", map[string]any{"ms": ms})
		done <- answer{a, err}
	}()
	eventually(t, func() bool {
		raw, _ := os.ReadFile(b.execLog)
		return strings.Contains(string(raw), " wait\n")
	}, "the tab runs the wait")

	c.lb.setPrefer(-1)
	took, err := victim.terminate(grace + 2*time.Second)
	t.Logf("node 0 drained and exited in %v (%v)", took.Round(time.Millisecond), err)
	if err != nil {
		t.Errorf("node 0 exited with %v", err)
	}
	select {
	case got := <-done:
		if got.err != nil || got.a.data()["waited"] != float64(ms) {
			t.Fatalf("the call across the drain answered %v, %v; want its result (waited %d)", got.a, got.err, ms)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call across the drain did not end")
	}
	for id, k := range b.execCounts() {
		if k != 1 {
			t.Errorf("call %s ran %d times", id, k)
		}
	}
	t.Logf("pairings active: %s; activations: %s", c.perNode("tabrelay_pairings_active"), c.perNode("tabrelay_placement_activations_total"))
}
