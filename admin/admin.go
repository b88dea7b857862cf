// Package admin serves the admin listener (SPEC §2, §8, §9): /metrics,
// /debug/check and Go's runtime profiles under /debug/pprof/, open (the
// listener is loopback by default) to any request whose Host no web page
// can send (HostGuard: no DNS rebinding), and the
// admin API under /admin/, which answers only a bearer token equal to
// RELAY_ADMIN_TOKEN. The API is how an operator reads and writes a
// connection's scope (`tabrelay scope …`); nothing an MCP request carries
// reaches it. It reads and writes scopes through the authorization server
// and keeps no state of its own.
//
//	GET    /admin/scopes/{conn}            the connection's scope record
//	POST   /admin/scopes/{conn}            {"entries":[…]} added to it
//	PUT    /admin/scopes/{conn}            {"entries":[…]} replaces it
//	DELETE /admin/scopes/{conn}            no access
//	GET    /admin/scopes?tool=X[&action=Y] which connections may use X (Y)
//
// Errors are {"error": code, "message": sentence}, values of the relay's
// error table (protocol/errors.go): 400 bad-request or invalid-scope, 401
// unauthorized (a wrong or missing token), 404 not-found (an unknown
// connection; admin-disabled when no token is configured), 405
// bad-request (a wrong method), 413 too-large, 503 unavailable (the store
// failed).
package admin

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// Scopes is what the API reads and writes of connections' scopes: the
// authorization server's (oauth.Server).
type Scopes interface {
	Scope(ctx context.Context, connection string) (oauth.Scope, error)
	WriteScope(ctx context.Context, connection string, entries []protocol.ScopeEntry, add bool, by string) (oauth.Scope, error)
	ResolvedScope(ctx context.Context, connection string) ([]protocol.ScopeEntry, error)
	ScopeHolders(ctx context.Context, tool, action string) ([]string, error)
}

var _ Scopes = (*oauth.Server)(nil)

// Connections reads connection records (the store).
type Connections interface {
	Connection(ctx context.Context, id string) (oauth.Connection, error)
}

// Config is what the admin listener needs.
type Config struct {
	// Token is RELAY_ADMIN_TOKEN; empty: the API is off (every request
	// is answered admin-disabled).
	Token       string
	Bundle      *protocol.Bundle // the catalogue a tool in a query is checked against
	Scopes      Scopes
	Connections Connections
	Metrics     prometheus.Gatherer // served at /metrics, when set
	// Check is the node's consistency check (/debug/check, when set): a
	// report in counts, whether its parts agree, or why it could not be
	// read.
	Check  func(ctx context.Context) (report map[string]any, ok bool, err error)
	Logger *slog.Logger
}

// API serves the admin listener's routes.
type API struct{ cfg Config }

// New returns the admin listener's routes.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &API{cfg: cfg}
}

// Routes mounts the admin listener's routes on mux.
func (a *API) Routes(mux *http.ServeMux) {
	if a.cfg.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(a.cfg.Metrics, promhttp.HandlerOpts{}))
	}
	if a.cfg.Check != nil {
		mux.HandleFunc("GET /debug/check", a.debugCheck)
	}
	profiles(mux)
	mux.Handle("/admin/", a.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, protocol.ErrNotFound.With("The admin API has no such route."))
	})))
	mux.Handle("/admin/scopes", a.auth(http.HandlerFunc(a.holders)))
	mux.Handle("/admin/scopes/{conn}", a.auth(http.HandlerFunc(a.scope)))
}

// profiles mounts Go's runtime profiles (net/http/pprof), to see where a
// running node spends its CPU and memory (docs/BENCHMARKS.md profiles the
// idle relay so): /debug/pprof/ (the index, and heap, allocs, goroutine,
// mutex, block… by name), /debug/pprof/profile?seconds=N (CPU) and
// /debug/pprof/trace?seconds=N. Not /debug/pprof/cmdline: the command line
// may carry a secret given as a flag (--signing-key). The handlers are
// mounted on mux, never through net/http/pprof's init on
// http.DefaultServeMux, which the public listener does not serve either.
func profiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/cmdline" {
			http.NotFound(w, r)
			return
		}
		pprof.Index(w, r)
	})
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// debugCheck reports whether the node's actors, placement and gauges
// agree (SPEC §2): counts only, no pairing ids. 200 when they do, 409 when
// not, 503 when placement cannot be read.
func (a *API) debugCheck(w http.ResponseWriter, r *http.Request) {
	out, ok, err := a.cfg.Check(r.Context())
	if err != nil {
		httpx.WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "placement unreadable: " + err.Error()})
		return
	}
	out["ok"] = ok
	status := http.StatusOK
	if !ok {
		status = http.StatusConflict
	}
	httpx.WriteJSON(w, status, out)
}
