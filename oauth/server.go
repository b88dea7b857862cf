package oauth

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/internal/netaddr"
	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/protocol"
)

// Lifetimes (SPEC §10).
const (
	ConnectCodeTTL    = 10 * time.Minute
	AuthCodeTTL       = 60 * time.Second
	AccessTokenTTL    = time.Hour
	FamilyIdleTTL     = 30 * 24 * time.Hour
	FamilyAbsoluteTTL = 90 * 24 * time.Hour
	// RefreshGrace is how long after a rotation the rotated token may be
	// presented again (a client that lost the response), RefreshRetries
	// how often (SPEC §5: ≤ 60 s, a few retries). Presented later, once
	// more, or after its successor was used, it revokes the family.
	RefreshGrace   = 60 * time.Second
	RefreshRetries = 3

	// ClientIdleTTL is how long a registered client stays after its last
	// token was issued or refreshed (issue 15, defect 6): longer than a
	// family lives idle, so a host whose tokens ended can connect again
	// under the client it keeps. ClientUnusedTTL is the life of a client
	// no token was ever issued to: a registration nobody completes goes
	// within a day (issue 23: it is what anyone can make the store keep);
	// its first token extends it to ClientIdleTTL.
	ClientIdleTTL   = 90 * 24 * time.Hour
	ClientUnusedTTL = 24 * time.Hour
	// ConnectionTTL is a connection's life from its approval: that of its
	// family, which can never refresh past FamilyAbsoluteTTL (the host
	// connects again, which makes a new connection).
	ConnectionTTL = FamilyAbsoluteTTL
)

// Config is what the authorization server needs.
type Config struct {
	// Issuer is the relay's public origin: the issuer, the resource, and
	// the base of every endpoint URL.
	Issuer string
	AppURL string // the approval link goes to AppURL#tabrelay-connect=<code>
	// AppTitle names the app on the waiting page.
	AppTitle string
	// NoCrossDevice refuses typed connect codes (RELAY_CONNECT_CROSS_DEVICE
	// =false): only a link approval, proven by the browser that opened
	// the waiting page, connects.
	NoCrossDevice bool
	Bundle        *protocol.Bundle // the catalogue a chosen scope is checked against
	Store         Store
	Hasher        *Hasher
	CIMD          *cimd.Fetcher
	Clock         clock.Clock
	Logger        *slog.Logger
	Metrics       *Metrics
	// TrustProxy takes the client address from X-Forwarded-For (behind a
	// load balancer) for the per-address limits.
	TrustProxy bool
	// Revoked, when set, hears of every revocation (a family, an access
	// token, a forgotten connection) with its browser's pairing id: long
	// requests of that browser check their token again at once.
	Revoked func(pairing string)
	// ConnectionsChanged, when set, hears that a connection of the
	// browser was approved, derived, forgotten, or had its scope written:
	// the browser's tabs are pushed their connections anew.
	ConnectionsChanged func(pairing string)
	// VerifiedFor bounds how long a bearer check is kept in memory
	// (Verify); 0 keeps it until the token or a connection expires
	// or an event of its browser drops it. A node sharing its store with
	// others sets 1 s: their events come as hints over Redis, which may
	// lose them.
	VerifiedFor time.Duration
}

// Server serves the authorization endpoints and decides for tabs.
type Server struct {
	cfg      Config
	resource string
	verified *verified
}

// NewServer returns the authorization server.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Issuer == "" || cfg.Store == nil || cfg.Hasher == nil || cfg.Bundle == nil {
		return nil, errors.New("oauth: issuer, store, hasher and bundle are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.CIMD == nil {
		cfg.CIMD = cimd.NewFetcher(cimd.Options{})
	}
	if cfg.AppTitle == "" {
		cfg.AppTitle = cfg.Bundle.App.Title
	}
	issuer := strings.TrimSuffix(cfg.Issuer, "/")
	cfg.Issuer = issuer
	return &Server{cfg: cfg, resource: issuer, verified: newVerified(cfg.VerifiedFor)}, nil
}

// Resource is the protected resource these tokens are for.
func (s *Server) Resource() string { return s.resource }

// Routes adds the authorization server's routes to mux (SPEC §2).
func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", s.protectedResource)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/{rest...}", s.protectedResource)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.authorizationServer)
	mux.HandleFunc("GET /.well-known/openid-configuration", s.authorizationServer)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("GET /authorize/status/{id}", s.status)
	mux.HandleFunc("GET /authorize/status/{id}/confirm", s.confirmPage)
	mux.HandleFunc("POST /authorize/status/{id}/confirm", s.confirm)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /revoke", s.revoke)
}

// ResourceMetadataURL is where a 401 points hosts (RFC 9728).
func (s *Server) ResourceMetadataURL() string {
	return s.cfg.Issuer + "/.well-known/oauth-protected-resource"
}

func (s *Server) protectedResource(w http.ResponseWriter, r *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.resource,
		"authorization_servers":    []string{s.cfg.Issuer},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            s.cfg.AppTitle + " (tabrelay)",
	})
}

func (s *Server) authorizationServer(w http.ResponseWriter, r *http.Request) {
	iss := s.cfg.Issuer
	httpx.WriteJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/authorize",
		"token_endpoint":                                 iss + "/token",
		"registration_endpoint":                          iss + "/register",
		"revocation_endpoint":                            iss + "/revoke",
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", grantTokenExchange},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	})
}

// clientAddr is the address limits are kept per.
func (s *Server) clientAddr(r *http.Request) string { return netaddr.Client(r, s.cfg.TrustProxy) }

// retryAfter is the Retry-After of every 503 (docs/cluster.md): time for
// the node's next store check and a reconnect.
const retryAfter = "5"

// WriteUnavailable answers a request that the store cannot serve now: 503
// with Retry-After and an RFC 6749 error, temporarily_unavailable. Every
// 503 of the OAuth routes but the person's pages has this shape, from the
// first request of an outage on (issue 17).
func WriteUnavailable(w http.ResponseWriter, description string) {
	w.Header().Set("Retry-After", retryAfter)
	httpx.WriteOAuthError(w, protocol.ErrUnavailable.With(description))
}

// Metrics are the authorization server's metrics (SPEC §9).
type Metrics struct {
	TokensIssued  *prometheus.CounterVec // by grant
	RefreshReuse  prometheus.Counter
	Registrations prometheus.Counter
	Decisions     *prometheus.CounterVec // by decision
	Limited       *prometheus.CounterVec // by limit
}

// NewMetrics makes the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		TokensIssued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_oauth_tokens_issued_total", Help: "Token responses issued, by grant."}, []string{"grant"}),
		RefreshReuse: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_oauth_refresh_reuse_detected_total", Help: "Rotated refresh tokens presented again outside the grace: families revoked."}),
		Registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tabrelay_oauth_registrations_total", Help: "Clients registered dynamically."}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_oauth_connect_decisions_total", Help: "Connect codes decided in a tab (link approvals waiting for the browser's proof: confirming; declined because the approving browser did not open the waiting page: declined_other_browser; typed codes refused by RELAY_CONNECT_CROSS_DEVICE=false: cross_device_off), wrong codes, and codes refused by the wrong-code limits (of an address or its network: limited; of the whole relay: limited_relay)."}, []string{"decision"}),
		Limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tabrelay_oauth_limited_total", Help: "Registrations, authorization requests and token exchanges refused by a limit: of an address (register_address, authorize_address), of the whole relay (register_relay), or of one connection's tree of sub-agents (exchange_tree)."}, []string{"limit"}),
	}
	for _, g := range []string{"authorization_code", "refresh_token", grantTokenExchange} {
		m.TokensIssued.WithLabelValues(g)
	}
	for _, d := range []string{"approved", "declined", "confirming", "declined_other_browser", "cross_device_off", "wrong_code", "limited", "limited_relay"} {
		m.Decisions.WithLabelValues(d)
	}
	for _, l := range []string{limitedRegisterAddress, limitedRegisterRelay, limitedAuthorizeAddress} {
		m.Limited.WithLabelValues(l)
	}
	if reg != nil {
		reg.MustRegister(m.TokensIssued, m.RefreshReuse, m.Registrations, m.Decisions, m.Limited)
	}
	return m
}
