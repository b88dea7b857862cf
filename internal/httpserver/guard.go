package httpserver

import (
	"net/http"

	"github.com/tabrelay/tabrelay/internal/httpx"
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
