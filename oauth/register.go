package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/internal/limit"
	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/protocol"
)

// maxRegistration bounds a registration request's body.
const maxRegistration = 64 << 10

// maxClientMetadata bounds what the relay keeps of a client: its name and
// redirect URIs, as stored (JSON). A registration keeps it for up to
// ClientUnusedTTL without a token (issue 23: 20 URIs of 2 KiB each were
// 40 KiB a client); hosts register a few URIs of a few hundred bytes.
const maxClientMetadata = 4 << 10

// register is RFC 7591 dynamic client registration, for public clients.
// Registrations count against the address's limit and, once valid,
// against the relay's (limit.go), in the store.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	addr := limit.Bucket{Key: "register:" + s.clientAddr(r), Rate: registrationsPerAddress}
	if !s.registrationAllowed(w, r, limitedRegisterAddress, addr, "Too many registrations from this address") {
		return
	}
	var md cimd.Metadata
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegistration))
	if err := dec.Decode(&md); err != nil || dec.More() {
		httpx.WriteOAuthError(w, protocol.ErrInvalidClientMetadata)
		return
	}
	if err := checkClientMetadata(&md); err != nil {
		kind := protocol.ErrInvalidClientMetadata
		var rerr redirectError
		if errors.As(err, &rerr) {
			kind = protocol.ErrInvalidRedirectURI
		}
		httpx.WriteOAuthError(w, kind.With(err.Error()))
		return
	}
	relay := limit.Bucket{Key: "register", Rate: registrationsRelayWide}
	if !s.registrationAllowed(w, r, limitedRegisterRelay, relay, "The relay takes no more registrations for now") {
		return
	}
	c := Client{ID: randomID("client_"), Name: md.ClientName, RedirectURIs: md.RedirectURIs, Kind: "dcr", CreatedAt: s.cfg.Clock.Now().UTC()}
	if err := s.cfg.Store.PutClient(r.Context(), c); err != nil {
		s.cfg.Logger.Error("store client", "err", err)
		WriteUnavailable(w, "The relay could not store the registration; retry in a few seconds.")
		return
	}
	s.cfg.Metrics.Registrations.Inc()
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	})
}

// registrationAllowed counts a registration against b, or answers 429
// with the wait (why, then when to try again), or 503 when the store
// failed.
func (s *Server) registrationAllowed(w http.ResponseWriter, r *http.Request, label string, b limit.Bucket, why string) bool {
	wait, err := s.limited(r.Context(), label, b)
	switch {
	case err != nil:
		WriteUnavailable(w, "The relay could not check its registration limits; retry in a few seconds.")
	case wait > 0:
		w.Header().Set("Retry-After", seconds(wait))
		httpx.WriteOAuthError(w, protocol.ErrLimited.Withf("%s; try again in %s seconds.", why, seconds(wait)))
	}
	return err == nil && wait == 0
}

type redirectError struct{ msg string }

func (e redirectError) Error() string { return e.msg }

// checkClientMetadata holds registrations and metadata documents to the
// same rules: a name to show, https or loopback redirect URIs, a public
// client.
func checkClientMetadata(md *cimd.Metadata) error {
	md.ClientName = strings.TrimSpace(md.ClientName)
	switch {
	case cimd.NameProblem(md.ClientName) != "":
		return errors.New("client_name " + cimd.NameProblem(md.ClientName))
	case md.TokenEndpointAuthMethod != "" && md.TokenEndpointAuthMethod != "none":
		return errors.New("token_endpoint_auth_method must be none: the relay registers public clients only")
	case len(md.RedirectURIs) == 0:
		return redirectError{"redirect_uris is required"}
	case len(md.RedirectURIs) > 20:
		return redirectError{"redirect_uris may list at most 20 URIs"}
	}
	for _, rt := range md.ResponseTypes {
		if rt != "code" {
			return errors.New("response_types may only hold code")
		}
	}
	for _, gt := range md.GrantTypes {
		if gt != "authorization_code" && gt != "refresh_token" {
			return errors.New("grant_types may only hold authorization_code and refresh_token")
		}
	}
	for i, u := range md.RedirectURIs {
		if problem := checkRedirectURI(u); problem != "" {
			return redirectError{fmt.Sprintf("redirect URI number %d %s", i+1, problem)}
		}
	}
	if n := clientMetadataSize(md); n > maxClientMetadata {
		return fmt.Errorf("client_name and redirect_uris take %d bytes; the relay keeps at most %d", n, maxClientMetadata)
	}
	return nil
}

// clientMetadataSize is what the relay stores of md: its name and
// redirect URIs, as JSON (escapes included).
func clientMetadataSize(md *cimd.Metadata) int {
	b, _ := json.Marshal(Client{Name: md.ClientName, RedirectURIs: md.RedirectURIs})
	return len(b)
}

// checkRedirectURI says what is wrong with a redirect URI, or "": https
// URLs and http loopback URLs are allowed, without a fragment or user info
// (SPEC §5; reference/mcp.md). The answer never quotes the URI: an
// error_description holds only the characters RFC 6749 §5.2 allows, and
// what a caller sent is not echoed back.
func checkRedirectURI(raw string) string {
	if len(raw) > maxRedirectURI {
		return fmt.Sprintf("is longer than %d bytes", maxRedirectURI)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return "is not an absolute URL"
	}
	switch {
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "has a fragment"
	case u.User != nil:
		return "has user info"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return ""
	}
	return "must be https, or http on a loopback address"
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// redirectMatches compares a requested redirect URI with a registered one:
// exactly, except that a loopback URI may use any port (RFC 8252 §7.3).
func redirectMatches(registered, requested string) bool {
	if strings.Contains(requested, "#") {
		return false // never a fragment, even an empty one (RFC 6749 §3.1.2)
	}
	if registered == requested {
		return true
	}
	a, err1 := url.Parse(registered)
	b, err2 := url.Parse(requested)
	if err1 != nil || err2 != nil || a.Scheme != "http" || !isLoopbackHost(a.Hostname()) {
		return false
	}
	return b.Scheme == a.Scheme && b.Hostname() == a.Hostname() && b.Path == a.Path &&
		b.RawQuery == a.RawQuery && b.Fragment == "" && b.User == nil
}

// client finds the client of a request: registered, or by its metadata
// document when the id is an https URL.
func (s *Server) client(ctx context.Context, id string) (Client, error) {
	if cimd.IsClientID(id) {
		md, err := s.cfg.CIMD.Fetch(ctx, id)
		if err != nil {
			return Client{}, err
		}
		return Client{ID: id, Name: md.ClientName, RedirectURIs: md.RedirectURIs, Kind: "cimd"}, nil
	}
	return s.cfg.Store.Client(ctx, id)
}
