package node

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tabrelay/tabrelay/admin"
	"github.com/tabrelay/tabrelay/web/demo"
	"github.com/tabrelay/tabrelay/web/sdk"
)

// publicRoutes are the public listener's routes at this stage (SPEC §2).
func (n *Node) publicRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /tab", n.tabs)
	n.oauth.Routes(mux)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": n.cfg.Version})
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := n.readiness(); !ok {
			w.Header().Set("Retry-After", "1") // as every 503; a probe asks again on its own period
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": why})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	})
	mux.Handle("/{$}", n.mcp)
	mux.Handle("GET /sdk/", sdk.Handler())
	if n.cfg.Demo {
		mux.Handle("GET "+demo.Path, demo.Handler())
		mux.Handle("GET "+strings.TrimSuffix(demo.Path, "/"), demo.Handler())
	}
	return n.closeWhileDraining(counted(mux, n.guardStore(mux), n.httpRequests))
}

// closeWhileDraining answers every request of a draining node with
// Connection: close: the client's next request opens a new connection,
// which a balancer sends to a ready node, instead of reusing one that ends
// when this node's listener closes. A tab's upgrade keeps its own headers.
func (n *Node) closeWhileDraining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.draining.Load() && r.Header.Get("Upgrade") == "" {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// adminRoutes are the admin listener's routes (loopback by default):
// /metrics stays open for Prometheus, /admin/… needs RELAY_ADMIN_TOKEN.
func (n *Node) adminRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /debug/check", n.debugCheck)
	admin.New(admin.Config{Token: n.cfg.AdminToken, Bundle: n.cfg.Bundle, Scopes: n.oauth, Connections: n.store,
		Logger: n.log}).Routes(mux)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
