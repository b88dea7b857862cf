package oauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/internal/limit"
	"github.com/tabrelay/tabrelay/oauth/cimd"
	"github.com/tabrelay/tabrelay/protocol"
)

// waitCookie holds the waiting page's secret: the status URL alone is not
// enough to fetch an authorization code, the browser that opened the page
// must also hold this cookie. It is SameSite=Strict with the status URL's
// path, under which the confirm page of a link approval posts it too
// (confirm.go): a same-origin request of a relay page, which carries a
// Strict cookie even when another site opened that page.
const waitCookie = "tabrelay_wait"

// Bounds of what an authorization request brings into the connect request
// it stores, far above what hosts send (a random state of a few dozen
// characters, VS Code's callback URI of a couple hundred, a JWT): a
// longer one is refused, never stored. The code challenge is bounded by
// its own rule, the scope by the catalogue (requestedScope), the client's
// name at its registration (cimd.MaxClientName).
const (
	maxState       = 2 << 10             // bytes
	maxRedirectURI = cimd.MaxRedirectURI // bytes, also of a registered one (checkRedirectURI)
	maxClientID    = cimd.MaxURLLen
)

// authorize validates an authorization request and shows the waiting page
// (SPEC §5). Errors that cannot be trusted to redirect (an unknown client,
// a redirect URI not registered) are shown as a page, never redirected.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	addr := s.clientAddr(r)
	wait, err := s.limited(r.Context(), limitedAuthorizeAddress, limit.Bucket{Key: "authorize:" + addr, Rate: authorizationsPerAddress})
	if err != nil {
		s.unavailablePage(w, "The relay could not check its limits; reload this page in a few seconds.")
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", seconds(wait))
		s.errorPage(w, protocol.ErrLimited.Withf("Too many sign-in attempts from this address. Wait %s seconds, then start again from the application.", seconds(wait)))
		return
	}
	q := r.URL.Query()
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")
	if clientID == "" || redirectURI == "" {
		s.errorPage(w, protocol.ErrBadRequest.With("This sign-in link is incomplete: it names no client or no return address."))
		return
	}
	if len(clientID) > maxClientID || len(redirectURI) > maxRedirectURI {
		// Not a client or an address the relay could trust: a page.
		s.errorPage(w, protocol.ErrBadRequest.Withf("This sign-in link is not valid: its client_id or redirect_uri is longer than %d bytes.", maxRedirectURI))
		return
	}
	client, err := s.client(r.Context(), clientID)
	if err != nil {
		msg := "The application asking to connect is not registered with this relay."
		var cerr *cimd.Error
		switch {
		case !errors.As(err, &cerr) && !errors.Is(err, ErrNotFound):
			s.cfg.Logger.Error("read client", "err", err)
			s.unavailablePage(w, "The relay could not check the application asking to connect; reload this page in a few seconds.")
			return
		case errors.As(err, &cerr) && errors.Is(err, cimd.ErrInvalid):
			msg = "The application asking to connect could not be checked: " + cerr.Error()
		case errors.As(err, &cerr):
			// Where a fetch failed (an address, a name that did not
			// resolve) would map the relay's network for anyone: the page
			// says it failed, the log says how.
			s.cfg.Logger.Info("client metadata document refused", "client", protocol.Clip(clientID, 200), "reason", cerr.Error())
			msg = "The application asking to connect could not be checked: its metadata document could not be fetched."
		}
		s.errorPage(w, protocol.ErrBadRequest.With(msg))
		return
	}
	if !registered(client, redirectURI) {
		s.errorPage(w, protocol.ErrBadRequest.With("The return address of this sign-in link is not one the application registered."))
		return
	}
	fail := func(e *protocol.RelayError) { s.redirectError(w, redirectURI, q.Get("state"), e) }
	switch {
	case q.Get("response_type") != "code":
		fail(protocol.ErrUnsupportedResponseType)
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail(protocol.ErrBadRequest.With("PKCE with code_challenge_method S256 is required"))
		return
	case len(q.Get("code_challenge")) < 43 || len(q.Get("code_challenge")) > 128:
		fail(protocol.ErrBadRequest.With("code_challenge must be a base64url SHA-256 (43 characters)"))
		return
	case len(q.Get("state")) > maxState:
		fail(protocol.ErrBadRequest.Withf("state may have at most %d bytes", maxState))
		return
	case q.Has("resource") && !s.isResource(q.Get("resource")):
		fail(s.notThisResource("resource"))
		return
	}
	s.startWaiting(w, r, client, redirectURI, addr)
}

func registered(c Client, redirectURI string) bool {
	for _, u := range c.RedirectURIs {
		if redirectMatches(u, redirectURI) {
			return true
		}
	}
	return false
}

// isResource accepts this relay's origin, with or without a trailing slash.
func (s *Server) isResource(v string) bool {
	return strings.TrimSuffix(v, "/") == s.resource
}

// notThisResource is the invalid_target of a request whose param (resource
// or audience) names another resource than this relay (RFC 8707 §2).
func (s *Server) notThisResource(param string) *protocol.RelayError {
	return protocol.ErrInvalidTarget.With(param + " must be this relay: " + s.resource)
}

// startWaiting stores the connect request and shows its waiting page.
func (s *Server) startWaiting(w http.ResponseWriter, r *http.Request, c Client, redirectURI, addr string) {
	code, wait := newConnectCode(), randomToken("")
	now := s.cfg.Clock.Now().UTC()
	req := ConnectRequest{
		ID: randomID("req_"), WaitHash: s.cfg.Hasher.Hash(purposeWait, wait), CodeHash: s.cfg.Hasher.Hash(purposeConnect, code),
		ClientID: c.ID, ClientName: c.Name, RedirectURI: redirectURI, CodeChallenge: r.URL.Query().Get("code_challenge"),
		State: r.URL.Query().Get("state"), Resource: s.resource, CreatedAt: now, ExpiresAt: now.Add(ConnectCodeTTL),
		Status: RequestPending, RequestedScope: s.requestedScope(r.URL.Query().Get("scope")),
		Network: limit.Network(addr),
		Device:  deviceOf(r.UserAgent()), AddrHash: s.cfg.Hasher.Hash(purposeAddress, addr),
	}
	if err := s.cfg.Store.PutConnectRequest(r.Context(), req); err != nil {
		s.cfg.Logger.Error("store connect request", "err", err)
		s.unavailablePage(w, "The relay could not start the connection; reload this page in a few seconds.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: waitCookie, Value: wait, Path: "/authorize/status/" + req.ID,
		MaxAge: int(ConnectCodeTTL / time.Second), HttpOnly: true, Secure: strings.HasPrefix(s.cfg.Issuer, "https:"),
		SameSite: http.SameSiteStrictMode})
	s.waitingPage(w, waitingData{
		App: s.cfg.AppTitle, Client: c.Name, Host: asciiHost(redirectURI), Code: code, LinkOnly: s.cfg.NoCrossDevice,
		StatusURL: s.cfg.Issuer + "/authorize/status/" + req.ID, ApproveURL: s.approveURL(code),
		Minutes: int(ConnectCodeTTL / time.Minute),
	})
}

// approveURL links into the app with the code in the fragment, which no
// server ever sees in a request line or a log.
func (s *Server) approveURL(code string) string {
	if s.cfg.AppURL == "" {
		return ""
	}
	base, _, _ := strings.Cut(s.cfg.AppURL, "#")
	return base + "#tabrelay-connect=" + url.QueryEscape(code)
}

// status answers the waiting page's poll: {state, redirect}.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	req, err := s.cfg.Store.ConnectRequest(r.Context(), r.PathValue("id"))
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.cfg.Logger.Error("read connect request", "err", err)
		WriteUnavailable(w, "The relay cannot read this connection request right now; the page asks again.")
		return
	}
	cookie, cerr := r.Cookie(waitCookie)
	if err != nil || cerr != nil || !s.matches(purposeWait, cookie.Value, req.WaitHash) {
		unknown := protocol.ErrNotFound.With("This connection request is unknown or belongs to another browser.")
		httpx.WriteJSON(w, unknown.Status, map[string]string{"error": unknown.Message})
		return
	}
	now := s.cfg.Clock.Now()
	// A link approval waiting for its browser's proof is still pending
	// here: no code until the approving browser showed this page's cookie.
	waiting := req.Status == RequestPending || req.Status == RequestConfirming
	switch {
	case waiting && now.After(req.ExpiresAt):
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"state": RequestExpired,
			"redirect": s.errorRedirect(req.RedirectURI, req.State, protocol.ErrAccessDenied.With("the connect code expired before it was approved"))})
	case waiting:
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"state": RequestPending})
	case req.Status == RequestDeclined:
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"state": RequestDeclined,
			"redirect": s.errorRedirect(req.RedirectURI, req.State, protocol.ErrAccessDenied)})
	case req.Status == RequestApproved:
		s.issueCode(w, r, req)
	default: // exchanged: the client has its tokens
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"state": RequestApproved})
	}
}

// issueCode mints the authorization code when the waiting page first asks
// after the approval. The code exists in clear only in this response; a
// page that lost it asks again and gets a new one, which replaces the old.
func (s *Server) issueCode(w http.ResponseWriter, r *http.Request, req ConnectRequest) {
	code := randomToken(prefixAuthCode)
	now := s.cfg.Clock.Now().UTC()
	_, err := s.cfg.Store.UpdateConnectRequest(r.Context(), req.ID, func(cr *ConnectRequest) error {
		if cr.Status != RequestApproved {
			return errNotApproved
		}
		cr.AuthCodeHash = s.cfg.Hasher.Hash(purposeAuthCode, code)
		cr.AuthCodeExpiresAt = now.Add(AuthCodeTTL)
		return nil
	})
	if errors.Is(err, errNotApproved) {
		httpx.WriteJSON(w, http.StatusOK, map[string]string{"state": RequestApproved})
		return
	}
	if err != nil {
		s.cfg.Logger.Error("issue authorization code", "request", req.ID, "err", err)
		WriteUnavailable(w, "The relay cannot issue the authorization code right now; the page asks again.")
		return
	}
	v := url.Values{"code": {code}, "iss": {s.cfg.Issuer}}
	if req.State != "" {
		v.Set("state", req.State)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"state": RequestApproved, "redirect": withQuery(req.RedirectURI, v)})
}

var errNotApproved = errors.New("the request is not approved")

// redirectError answers a bad authorization request of a known client with
// a page that links back to it, not a redirect: anyone can register a
// client, so redirecting at once would make the relay's origin an open
// redirector to whatever that client registered (RFC 9700 §4.11.2). The
// link carries the error, state and iss as a redirect would.
func (s *Server) redirectError(w http.ResponseWriter, redirectURI, state string, e *protocol.RelayError) {
	pageHeaders(w, "")
	w.WriteHeader(e.Status)
	u, _ := url.Parse(redirectURI)
	_ = backTemplate.Execute(w, map[string]string{"Desc": e.Message, "Host": u.Host, "Link": s.errorRedirect(redirectURI, state, e)})
}

// errorRedirect is an authorization error response, with iss (RFC 9207).
func (s *Server) errorRedirect(redirectURI, state string, e *protocol.RelayError) string {
	v := url.Values{"error": {e.OAuth}, "error_description": {e.Message}, "iss": {s.cfg.Issuer}}
	if state != "" {
		v.Set("state", state)
	}
	return withQuery(redirectURI, v)
}

func withQuery(base string, v url.Values) string {
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + v.Encode()
}

// matches compares secret with a stored hash under every key.
func (s *Server) matches(purpose, secret string, stored []byte) bool {
	for _, h := range s.cfg.Hasher.Candidates(purpose, secret) {
		if equalHash(h, stored) {
			return true
		}
	}
	return false
}

func equalHash(a, b []byte) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	var v byte
	for i := range a {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

// nonce returns a fresh CSP nonce for one page.
func nonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}
