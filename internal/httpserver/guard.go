package httpserver

import (
	"net/http"
	"strings"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/mcp"
	"github.com/tabrelay/tabrelay/oauth"
)

// CloseWhileDraining answers every request with Connection: close while
// draining says so: the client's next request opens a new connection,
// which a balancer sends to a ready node, instead of reusing one that ends
// when this node's listener closes. A tab's upgrade keeps its own headers.
func CloseWhileDraining(draining func() bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining() && r.Header.Get("Upgrade") == "" {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// StoreUnreachable is the one sentence of a request refused while Redis
// is away.
const StoreUnreachable = "The relay cannot reach its store right now; retry in a few seconds."

// GuardStore answers 503 with one sentence while up says the store is
// unreachable (liveness, readiness and the static files still answer), in
// the shape the routes' own 503s have: a JSON-RPC error carrying the
// request's id for an MCP host, an OAuth error otherwise; Retry-After on
// both.
func GuardStore(up func() bool, next http.Handler) http.Handler {
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

// Probes mounts the liveness and readiness probes (SPEC §9): /health
// answers while the process serves, /ready while ready says so, else 503
// with its reason.
func Probes(mux *http.ServeMux, version string, ready func() (bool, string)) {
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": version})
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := ready(); !ok {
			w.Header().Set("Retry-After", "1") // as every 503; a probe asks again on its own period
			httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "reason": why})
			return
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"ready": true})
	})
}
