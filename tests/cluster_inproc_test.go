//go:build !race

// Two or more nodes in one process: protoactor's remote sets grpc's
// process-wide logger each time a node starts, a data race of the library
// (reference/protoactor.md), so these run without the race detector
// (make test runs them in a second pass). The multi-process tests
// (cluster_test.go) run real nodes, each in its own process.

package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// startMembers starts n in-process nodes of one cluster on srv, sharing
// one signing key, each edited by edits.
func startMembers(t testing.TB, srv *redistest.Server, n int, edits ...func(*node.Config)) []*relay {
	t.Helper()
	var key []byte
	out := make([]*relay, 0, n)
	for i := 0; i < n; i++ {
		r := startRelay(t, func(c *node.Config) {
			if key == nil {
				key = c.SigningKey
			} else {
				c.PublicURL = out[0].url // one origin for hosts, as behind a load balancer
			}
			c.SigningKey = key
			c.Redis = &goredis.UniversalOptions{Addrs: []string{srv.Addr()}, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}
			c.RedisPrefix = "t:"
			c.ClusterListen = "127.0.0.1:" + redistest.FreePort(t)
			c.LeaseTTL = 2 * time.Second
			for _, e := range edits {
				e(c)
			}
		})
		r.key = key // startRelay's own key was replaced by the shared one
		out = append(out, r)
	}
	return out
}

// tabOnSecondMember starts two members on one Redis and a tab process
// "on-b" on the second, and returns them with the tab's pairing once it is
// registered. Their logs are printed when the test fails.
func tabOnSecondMember(t *testing.T) ([]*relay, string) {
	t.Helper()
	nodes := startMembers(t, redistest.Start(t), 2)
	a, b := nodes[0], nodes[1]
	br := newBrowser(t)
	br.startTab(b.url, "on-b")
	br.waitSecret()
	pairing := br.pairing(b.key)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node a:\n%s\nnode b:\n%s", a.logs.String(), b.logs.String())
		}
	})
	b.waitTabs(pairing, 1)
	return nodes, pairing
}

func TestInProcessMembersCallAcross(t *testing.T) {
	nodes, pairing := tabOnSecondMember(t)
	a := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := a.call(ctx, pairing, "conn-1", "whoami", map[string]any{})
	if res.outcome.Kind != protocol.Answered {
		t.Fatalf("call through node a ended %v: %+v", res.outcome.Kind, res.result)
	}
	if got := res.data(t)["tab"]; got != "on-b" {
		t.Fatalf("answered by %v, want on-b", got)
	}
	// Actors, placement and gauges agree on both nodes; the pairing lives
	// on b, where its tab is (local first).
	for i, n := range nodes {
		resp, err := http.Get("http://" + n.node.AdminAddr() + "/debug/check")
		if err != nil {
			t.Fatal(err)
		}
		var check struct {
			OK             bool
			PairingsActive int
			Placement      struct{ Active, Recorded int }
		}
		json.NewDecoder(resp.Body).Decode(&check)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !check.OK || check.Placement.Recorded != check.Placement.Active {
			t.Fatalf("node %d: /debug/check %d %+v", i, resp.StatusCode, check)
		}
		if want := i; check.PairingsActive != want {
			t.Fatalf("node %d holds %d pairings, want %d", i, check.PairingsActive, want)
		}
	}
}

// BenchmarkInProcessCluster compares a call that enters at the node
// holding the pairing and its tab's socket (local) with one that enters
// at another node (cross-node: a Redis lookup, then protoactor remote both
// ways), and measures placement: the first touch of a pairing (a Redis
// compare-and-set, an actor started) and a lookup of a pairing that lives
// on the other node.
func BenchmarkInProcessCluster(b *testing.B) {
	srv := redistest.Start(b)
	nodes := startMembers(b, srv, 2)
	a, home := nodes[0], nodes[1]
	tab := runHeadless(b, headless.Options{Relay: home.url, Name: "bench"})
	home.waitTabs(tab.Pairing(), 1)
	ctx := context.Background()
	call := func(b *testing.B, r *relay) {
		for i := 0; i < b.N; i++ {
			if res := r.call(ctx, tab.Pairing(), "c1", "echo", map[string]any{"value": i}); res.outcome.Kind != protocol.Answered {
				b.Fatalf("outcome %v", res.outcome.Kind)
			}
		}
	}
	b.Run("call/local", func(b *testing.B) { call(b, home) })
	b.Run("call/cross-node", func(b *testing.B) { call(b, a) })
	b.Run("placement/first-touch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := a.node.Inspect(ctx, fmt.Sprintf("bench-%d-%d", b.N, i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("placement/remote-lookup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := a.node.Inspect(ctx, tab.Pairing()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("placement/local-lookup", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := home.node.Inspect(ctx, tab.Pairing()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestInProcessMembersTellListenersOnEveryNode holds a subscriptions/listen
// stream on node a for a browser whose tab is on node b: the tab's
// permissions-changed reaches the stream, and the person's Forget on b ends
// it at once (not at its next 15 s recheck).
func TestInProcessMembersTellListenersOnEveryNode(t *testing.T) {
	srv := redistest.Start(t)
	nodes := startMembers(t, srv, 2)
	a, b := nodes[0], nodes[1]
	br, _ := pairedBrowser(t, b)
	h := newHost(t, a.url) // the public origin; its tab approves on b
	_, tokens := connect(t, b, br, h)

	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, a.url+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tokens["access_token"].(string))
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("listen on node a: %d", resp.StatusCode)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				lines <- sc.Text()
			}
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended, waiting for %s", what)
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s", what)
		}
		return ""
	}
	if l := next("acknowledgement"); !strings.Contains(l, "subscriptions/acknowledged") {
		t.Fatalf("first message %s", l)
	}
	br.tabs()[0].cmd.Process.Signal(syscall.SIGUSR2) // the tab's allowed tools changed
	if l := next("tools/list_changed"); !strings.Contains(l, "notifications/tools/list_changed") {
		t.Fatalf("got %s", l)
	}

	out, _ := br.ask(b.url, "connections")
	var list struct {
		Connections []struct{ ID string } `json:"connections"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Connections) != 1 {
		t.Fatalf("connections %s: %v", out, err)
	}
	// The person narrows the connection's scope on b: what the host may
	// list changed.
	if out, err := br.ask(b.url, "set-scope", "--scope", "whoami", list.Connections[0].ID); err != nil {
		t.Fatalf("set-scope: %v %s", err, out)
	}
	if l := next("tools/list_changed after set-scope"); !strings.Contains(l, "notifications/tools/list_changed") {
		t.Fatalf("got %s", l)
	}
	if out, err := br.ask(b.url, "forget", list.Connections[0].ID); err != nil {
		t.Fatalf("forget: %v %s", err, out)
	}
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("the stream went on after Forget: %s", l)
		}
	case <-time.After(time.Second):
		t.Fatal("the stream on node a outlived the Forget on node b by 1 s")
	}
}

// BenchmarkInProcessMCPToolsCallOnRedis is BenchmarkMCPToolsCall on one
// cluster node: the same path with the Redis store. The bearer check is
// kept for up to 1 s on a cluster (oauth.Config.VerifiedFor), so most
// calls read nothing; a cold one reads the token, its family, its
// connection's chain and their scopes in one round trip (the check
// script, store/redis/check.go).
func BenchmarkInProcessMCPToolsCallOnRedis(b *testing.B) {
	srv := redistest.Start(b)
	r := startMembers(b, srv, 1)[0]
	tab := runHeadless(b, headless.Options{Relay: r.url, Name: "bench"})
	r.waitTabs(tab.Pairing(), 1)
	benchMCPToolsCall(b, r, tab)
}

// TestInProcessADrainingNodeFinishesTheCallsItServes: a call entering at a
// node that drains, for a pairing on another node, is answered, not cut
// when the draining node has handed off its own pairings (it holds none).
func TestInProcessADrainingNodeFinishesTheCallsItServes(t *testing.T) {
	nodes, pairing := tabOnSecondMember(t)
	a, b := nodes[0], nodes[1]
	done := make(chan callResult, 1)
	go func() { done <- a.call(context.Background(), pairing, "conn-1", "wait", map[string]any{"ms": 1500}) }()
	eventually(t, func() bool {
		s, err := b.node.Inspect(context.Background(), pairing)
		return err == nil && s.Calls == 1
	},
		"the call reached the tab")
	a.node.Shutdown(context.Background()) // grace 5 s: the call has time to finish
	res := <-done
	if res.outcome.Kind != protocol.Answered {
		t.Fatalf("the call through the draining node ended %v: %+v", res.outcome.Kind, res.result)
	}
}

// TestInProcessMembersCarryLargeCalls sends calls with arguments of a few
// MiB across nodes, several at once, and back as results: what a host may
// send (MCP bodies up to 4 MiB) and a tab may answer (16 MiB) must cross
// the nodes' link, which protoactor batches into one gRPC message.
func TestInProcessMembersCarryLargeCalls(t *testing.T) {
	nodes, pairing := tabOnSecondMember(t)
	a := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big := strings.Repeat("x", 3<<20)
	results := make(chan callResult, 4)
	for i := 0; i < cap(results); i++ {
		go func() { results <- a.call(ctx, pairing, "conn-1", "echo", map[string]any{"value": big}) }()
	}
	for i := 0; i < cap(results); i++ {
		// The host sees the first part of so large a result, and its size.
		res := <-results
		var text string
		if len(res.result.Content) > 0 {
			text = res.result.Content[0].Text
		}
		if res.outcome.Kind != protocol.Answered || !strings.Contains(text, "has 3,145,740 characters") {
			t.Fatalf("echo of 3 MiB ended %v: %.300q", res.outcome.Kind, text)
		}
	}
	if res := a.call(ctx, pairing, "conn-1", "whoami", map[string]any{}); res.outcome.Kind != protocol.Answered {
		t.Fatalf("a small call after the large ones ended %v", res.outcome.Kind)
	}
}
