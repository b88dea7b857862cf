//go:build !race

// Two or more nodes in one process: protoactor's remote sets grpc's
// process-wide logger each time a node starts, a data race of the library
// (reference/protoactor.md), so these run without the race detector
// (make test runs them in a second pass). The multi-process tests
// (cluster_test.go) run real nodes, each in its own process.

package tests

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/actors"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/node"
)

// startMembers starts n in-process nodes of one cluster on srv, sharing
// one signing key.
func startMembers(t *testing.T, srv *redistest.Server, n int) []*relay {
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
