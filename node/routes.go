package node

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/admin"
	"github.com/tabrelay/tabrelay/internal/httpserver"
	"github.com/tabrelay/tabrelay/mcp"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/web/demo"
	"github.com/tabrelay/tabrelay/web/sdk"
)

// publicRoutes are the public listener's routes (SPEC §2).
func (n *Node) publicRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /tab", n.tabs)
	n.oauth.Routes(mux)
	httpserver.Probes(mux, n.cfg.Version, n.readiness)
	mux.Handle("/{$}", n.mcp)
	mux.Handle("GET /sdk/", sdk.Handler())
	if n.cfg.Demo {
		mux.Handle("GET "+demo.Path, demo.Handler())
		mux.Handle("GET "+strings.TrimSuffix(demo.Path, "/"), demo.Handler())
	}
	return httpserver.CloseWhileDraining(n.draining.Load,
		httpserver.Counted(mux, guardStore(n.redisUp.Load, mux), n.httpRequests))
}

// adminRoutes are the admin listener's routes (loopback by default):
// /metrics, /debug/check, /health and /ready open, /admin/… behind
// RELAY_ADMIN_TOKEN. The probes answer here too, where a storm of tabs on
// the public listener (its accept queue, its handshakes) cannot hold them
// up (issue 13). Every route answers only a Host no DNS-rebinding page
// can send (admin.HostGuard; issue 23).
func (n *Node) adminRoutes() http.Handler {
	mux := http.NewServeMux()
	httpserver.Probes(mux, n.cfg.Version, n.readiness)
	admin.New(admin.Config{Token: n.cfg.AdminToken, Bundle: n.cfg.Bundle, Scopes: n.oauth, Connections: n.store,
		Metrics: n.registry, Check: n.check, Logger: n.log}).Routes(mux)
	return admin.HostGuard(n.cfg.AdminHosts, mux)
}

// check is the node's side of /debug/check (SPEC §2): whether its actors,
// placement and gauges agree, in counts (no pairing ids).
func (n *Node) check(ctx context.Context) (map[string]any, bool, error) {
	active := n.acts.Count()
	gauge := int(gaugeValue(n.metrics.PairingsActive))
	out := map[string]any{"pairingsActive": active, "pairingsActiveGauge": gauge}
	ok := active == gauge
	if n.cluster != nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := n.cluster.Lookup.Check(ctx)
		if err != nil {
			return nil, false, err
		}
		out["placement"] = c
		ok = ok && c.Recorded == c.Active
	}
	return out, ok, nil
}

// StoreUnreachable is the one sentence of a request refused while Redis
// is away.
const StoreUnreachable = "The relay cannot reach its store right now; retry in a few seconds."

// guardStore answers 503 with one sentence while up says the store is
// unreachable (liveness, readiness and the static files still answer), in
// the shape the routes' own 503s have: a JSON-RPC error carrying the
// request's id for an MCP host, an OAuth error otherwise; Retry-After on
// both.
func guardStore(up func() bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if up() || r.URL.Path == "/health" || r.URL.Path == "/ready" || strings.HasPrefix(r.URL.Path, "/sdk/") || strings.HasPrefix(r.URL.Path, "/demo") {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == "/" {
			mcp.WriteUnavailable(w, r, StoreUnreachable)
			return
		}
		oauth.WriteUnavailable(w, StoreUnreachable)
	})
}
