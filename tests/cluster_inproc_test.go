//go:build !race

// Two or more nodes in one process: protoactor's remote sets grpc's
// process-wide logger each time a node starts, a data race of the library
// (reference/protoactor.md), so these run without the race detector
// (make test runs them in a second pass). The multi-process tests
// (cluster_test.go) run real nodes, each in its own process.

package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/headless"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/node"
)

// startMembers starts n in-process nodes of one cluster on srv, sharing
// one signing key.
func startMembers(t testing.TB, srv *redistest.Server, n int) []*relay {
	t.Helper()
	var key []byte
	out := make([]*relay, 0, n)
	for i := 0; i < n; i++ {
		r := startRelay(t, func(c *node.Config) {
			if key == nil {
				key = c.SigningKey
			}
			c.SigningKey = key
			c.Redis = &goredis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}
			c.RedisPrefix = "t:"
			c.ClusterListen = "127.0.0.1:" + redistest.FreePort(t)
			c.LeaseTTL = 2 * time.Second
		})
		r.key = key // startRelay's own key was replaced by the shared one
		out = append(out, r)
	}
	return out
}

func TestInProcessMembersCallAcross(t *testing.T) {
	srv := redistest.Start(t)
	nodes := startMembers(t, srv, 2)
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := a.call(ctx, pairing, "conn-1", "whoami", map[string]any{})
	if res.outcome.Kind != actors.Answered {
		t.Fatalf("call through node a ended %v: %+v", res.outcome.Kind, res.result)
	}
	if got := res.data(t)["tab"]; got != "on-b" {
		t.Fatalf("answered by %v, want on-b", got)
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
	tab, err := headless.New(headless.Options{Relay: home.url, Origin: origin, Name: "bench",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tab.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	if err := tab.WaitConnected(ctx); err != nil {
		b.Fatal(err)
	}
	home.waitTabs(tab.Pairing(), 1)
	call := func(b *testing.B, r *relay) {
		for i := 0; i < b.N; i++ {
			if res := r.call(ctx, tab.Pairing(), "c1", "echo", map[string]any{"value": i}); res.outcome.Kind != actors.Answered {
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
