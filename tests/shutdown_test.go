package tests

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// probeDelay is RELAY_SHUTDOWN_DELAY in these tests. Calls are sent during
// its first three quarters only: the last quarter is slack for a loaded
// machine, so that no call of the test dials as the listener closes.
const probeDelay = 2 * time.Second

// shutdownProbe sends counter increments to one node, each over a
// connection of its own (as hosts behind a TCP balancer open them),
// before and through the node's shutdown.
type shutdownProbe struct {
	t      *testing.T
	addr   string // the node's public listener
	public string // RELAY_PUBLIC_URL, whose Host the requests carry
	token  string

	mu         sync.Mutex // guards the tallies below
	results    int        // calls answered with the tab's result
	restarting int        // calls answered with the restarting sentence
	during     int        // of both, answered once the shutdown began
	failures   errorList
}

// client dials the node for every request, whatever the URL says; fresh
// makes each request dial anew.
func (p *shutdownProbe) client(fresh bool) *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: fresh,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, p.addr)
		}}}
}

// probed is one request as the host saw it: whether its connection was
// made, whether it was one kept alive, and the answer.
type probed struct {
	connected, reused bool
	resp              *http.Response
	reply             rpcReply
	err               error
}

func (p *shutdownProbe) do(client *http.Client, req *http.Request) probed {
	var x probed
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) { x.connected = err == nil },
		GotConn: func(info httptrace.GotConnInfo) {
			x.connected = true
			x.reused = info.Reused
		},
	}))
	x.resp, x.err = client.Do(req)
	if x.err != nil {
		return x
	}
	defer x.resp.Body.Close()
	x.reply, x.err = tryReadReply(x.resp)
	return x
}

// call sends one counter increment and tallies its answer; draining says
// the node may have turned unready.
func (p *shutdownProbe) call(client *http.Client, draining bool) probed {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextRPCID(), "method": "tools/call",
		"params": map[string]any{"name": "counter", "arguments": map[string]any{"action": "increment"}}})
	req, _ := http.NewRequest(http.MethodPost, p.public+"/", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+p.token)
	x := p.do(client, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case x.err != nil && !x.connected:
		p.failures.add("a call sent within the shutdown delay was refused a connection: %v", x.err)
	case x.err != nil:
		p.failures.add("a call whose connection the node accepted got no answer: %v", x.err)
	case x.reply.data()["counter"] != nil:
		p.results++
	case x.reply.text() == protocol.RestartingSentence(""):
		p.restarting++
	default:
		p.failures.add("a call got neither its result nor the restarting sentence: %v", x.reply)
		return x
	}
	if draining && x.err == nil {
		p.during++
	}
	return x
}

// through runs calls from before shutdown starts until three quarters of
// the shutdown delay after, then waits for shutdown to end; every call
// must be answered. A call on a connection kept alive from before the
// shutdown is answered too, and asked to close its connection. Once the
// shutdown ended, the listener is closed.
func (p *shutdownProbe) through(shutdown func()) {
	t := p.t
	keptAlive := p.client(false)
	defer keptAlive.CloseIdleConnections()
	if x := p.call(keptAlive, false); x.err != nil || x.reply.data() == nil {
		t.Fatalf("a call before the shutdown: %v %v", x.err, x.reply)
	}
	fresh := p.client(true)
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); shutdown() }()

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < probeDelay*3/4 {
				p.call(fresh, true)
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	p.unready(fresh)
	x := p.call(keptAlive, true)
	if x.err == nil && (!x.reused || !x.resp.Close) {
		t.Errorf("a call on a connection kept from before the shutdown: reused %v, Connection: close %v; want both", x.reused, x.resp.Close)
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the shutdown did not end")
	}
	if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts after the shutdown ended")
	}
	if err := p.failures.err(); err != nil {
		t.Error(err)
	}
}

// unready waits until the node's /ready says it drains: every check is
// answered (the node keeps accepting), with 503 once it drains.
func (p *shutdownProbe) unready(client *http.Client) {
	p.t.Helper()
	for {
		req, _ := http.NewRequest(http.MethodGet, p.public+"/ready", nil)
		x := p.do(client, req)
		if x.err != nil {
			p.t.Fatalf("/ready after SIGTERM got no answer (connected %v): %v", x.connected, x.err)
		}
		if x.resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(x.reply.rawBody, "draining") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkRuns: a call ran only when its host got its result, and never twice.
func (p *shutdownProbe) checkRuns(b *browser) {
	runs := 0
	for id, k := range b.execCounts() {
		runs += k
		if k != 1 {
			p.t.Errorf("call %s ran %d times", id, k)
		}
	}
	if runs != p.results {
		p.t.Errorf("the tab ran %d calls and %d results were answered: a call ran without its host getting the result", runs, p.results)
	}
}

// TestShutdownDelayAnswersEveryRequest (issue 17, item 5): after SIGTERM a
// single node is unready at once, yet for RELAY_SHUTDOWN_DELAY it keeps
// accepting; every call sent meanwhile is answered (the restarting
// sentence, before anything ran: one node has nothing to hand the call
// to), none is refused or reset, and only then the listener closes.
func TestShutdownDelayAnswersEveryRequest(t *testing.T) {
	r := startRelay(t, func(c *node.Config) { c.ShutdownDelay = probeDelay })
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h)
	p := &shutdownProbe{t: t, addr: r.node.Addr(), public: r.url, token: tokens["access_token"].(string)}
	p.through(func() { r.node.Shutdown(context.Background()) })
	t.Logf("results %d, restarting %d, answered once the shutdown began %d", p.results, p.restarting, p.during)
	if p.restarting == 0 {
		t.Error("no call was answered with the restarting sentence while the node drained")
	}
	p.checkRuns(b)
}

// TestClusterShutdownDelayAnswersEveryRequest (issue 17, item 5): a
// cluster member that receives SIGTERM, with nothing in flight, keeps
// accepting for RELAY_SHUTDOWN_DELAY; calls entering there for a pairing
// on the other member get their results; none is refused or reset.
func TestClusterShutdownDelayAnswersEveryRequest(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 2, env: []string{"RELAY_SHUTDOWN_DELAY=" + probeDelay.String()}})
	c.lb.setPrefer(1) // the tab, and its pairing, on node 1
	b, _, tok := tabAndHost(t, c, "on-1", c.nodes[1])
	eventually(t, func() bool { return c.nodes[1].metric("tabrelay_pairings_active") == 1 },
		"the pairing on node 1 (%s)", c.perNode("tabrelay_pairings_active"))
	victim := c.nodes[0]
	p := &shutdownProbe{t: t, addr: victim.listen, public: c.public, token: tok.Access}
	p.through(func() {
		if _, err := victim.terminate(c.opts.grace + 5*time.Second); err != nil {
			t.Errorf("node 0 exited with %v after SIGTERM", err)
		}
	})
	t.Logf("results %d, restarting %d, answered once the shutdown began %d", p.results, p.restarting, p.during)
	if p.restarting != 0 || p.during == 0 {
		t.Errorf("calls through the draining node: %d restarting, %d answered once the shutdown began; want results only", p.restarting, p.during)
	}
	p.checkRuns(b)
}
