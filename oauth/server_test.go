package oauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/store/bolt"
)

const (
	testAppURL  = "https://app.example/demo"
	testPairing = "pair_test"
	testAddr    = "192.0.2.10" // the tab's address, for the wrong-code limits
	testCB      = "https://client.example/cb"
)

var testStart = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// harness is one authorization server on a real bolt store and a fake
// clock, served over real HTTP at the issuer it announces.
type harness struct {
	tb      testing.TB
	srv     *httptest.Server
	as      *oauth.Server
	clock   *clock.Fake
	metrics *oauth.Metrics
	store   *bolt.Store
	// client has no cookie jar and does not follow redirects.
	client *http.Client
}

func newHarness(tb testing.TB, edit ...func(*oauth.Config)) *harness {
	tb.Helper()
	st, err := bolt.Open(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	key := make([]byte, 32)
	rand.Read(key)
	h := &harness{tb: tb, srv: srv, clock: clock.NewFake(testStart), metrics: oauth.NewMetrics(nil), store: st}
	cfg := oauth.Config{Issuer: srv.URL, AppURL: testAppURL, Bundle: protocol.ProbeBundle(), Store: st,
		Hasher: oauth.NewHasher(key), Clock: h.clock, Logger: slog.New(slog.DiscardHandler), Metrics: h.metrics}
	for _, e := range edit {
		e(&cfg)
	}
	if h.as, err = oauth.NewServer(cfg); err != nil {
		tb.Fatal(err)
	}
	h.as.Routes(mux)
	transport := &http.Transport{MaxIdleConnsPerHost: 256}
	tb.Cleanup(transport.CloseIdleConnections)
	h.client = &http.Client{Transport: transport, CheckRedirect: noRedirects}
	return h
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// browser is a client with its own cookie jar: the one that opened a
// waiting page.
func (h *harness) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: h.client.Transport, Jar: jar, CheckRedirect: noRedirects}
}

func (h *harness) do(c *http.Client, req *http.Request) (*http.Response, []byte) {
	h.tb.Helper()
	resp, body, err := send(c, req)
	if err != nil {
		h.tb.Fatal(err)
	}
	return resp, body
}

// send is do for goroutines other than the test's, which must not fail it.
func send(c *http.Client, req *http.Request) (*http.Response, []byte, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading the body: %w", req.Method, req.URL.Path, err)
	}
	return resp, body, nil
}

// refresh posts a refresh grant from any goroutine.
func (h *harness) refresh(clientID, refresh string) (int, []byte, error) {
	form := refreshForm(clientID, refresh, h.srv.URL)
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := send(h.client, req)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

func (h *harness) get(c *http.Client, rawURL string) (*http.Response, []byte) {
	h.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		h.tb.Fatal(err)
	}
	return h.do(c, req)
}

func (h *harness) post(path, contentType string, body []byte) (*http.Response, []byte) {
	h.tb.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		h.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	return h.do(h.client, req)
}

func (h *harness) postForm(path string, form url.Values) (*http.Response, []byte) {
	h.tb.Helper()
	return h.post(path, "application/x-www-form-urlencoded", []byte(form.Encode()))
}

// register registers a client by DCR and returns its id.
func (h *harness) register(name string, redirectURIs ...string) string {
	h.tb.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirectURIs})
	resp, raw := h.post("/register", "application/json", body)
	if resp.StatusCode != http.StatusCreated {
		h.tb.Fatalf("register %q: %d %s", name, resp.StatusCode, raw)
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.ClientID == "" {
		h.tb.Fatalf("register %q: no client_id in %s", name, raw)
	}
	return out.ClientID
}

// pkce returns a fresh S256 verifier and its challenge.
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func authorizeURL(issuer, clientID, redirectURI, challenge, state string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {state}, "resource": {issuer}}
	return issuer + "/authorize?" + q.Encode()
}

// waiting is an authorization request shown on its waiting page.
type waiting struct {
	clientID, redirectURI, verifier, state string
	header                                 http.Header
	page                                   string
	code                                   string       // the connect code the page shows
	statusURL                              string       // what the page polls
	browser                                *http.Client // holds the page's cookie
}

var (
	codeAttr   = regexp.MustCompile(`data-connect-code="([^"]*)"`)
	statusAttr = regexp.MustCompile(`data-status-url="([^"]*)"`)
)

// startConnect opens the waiting page of a new authorization request.
func (h *harness) startConnect(clientID, redirectURI string) *waiting {
	h.tb.Helper()
	return h.startConnectAsking(clientID, redirectURI, "")
}

// startConnectAsking is startConnect with the request's scope parameter.
func (h *harness) startConnectAsking(clientID, redirectURI, scope string) *waiting {
	h.tb.Helper()
	w := &waiting{clientID: clientID, redirectURI: redirectURI, state: randomState(), browser: h.browser()}
	var challenge string
	w.verifier, challenge = pkce()
	u := authorizeURL(h.srv.URL, clientID, redirectURI, challenge, w.state)
	if scope != "" {
		u += "&" + url.Values{"scope": {scope}}.Encode()
	}
	resp, body := h.get(w.browser, u)
	if resp.StatusCode != http.StatusOK {
		h.tb.Fatalf("authorize: %d %s", resp.StatusCode, body)
	}
	w.header, w.page = resp.Header, string(body)
	m, s := codeAttr.FindStringSubmatch(w.page), statusAttr.FindStringSubmatch(w.page)
	if m == nil || s == nil {
		h.tb.Fatalf("the waiting page has no connect code or status URL:\n%s", w.page)
	}
	w.code, w.statusURL = html.UnescapeString(m[1]), html.UnescapeString(s[1])
	return w
}

func randomState() string {
	b := make([]byte, 8)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// status polls the waiting page's status URL as c.
func (h *harness) status(c *http.Client, w *waiting) (int, map[string]string) {
	h.tb.Helper()
	resp, body := h.get(c, w.statusURL)
	var out map[string]string
	if err := json.Unmarshal(body, &out); err != nil {
		h.tb.Fatalf("status: %d, not JSON: %s", resp.StatusCode, body)
	}
	return resp.StatusCode, out
}

var whoami = []protocol.ScopeEntry{{Tool: "whoami"}}

// authCode approves w's connect code in the "tab" and fetches the
// authorization code the way the waiting page does.
func (h *harness) authCode(w *waiting) string {
	h.tb.Helper()
	if _, err := h.as.Approve(context.Background(), testPairing, testAddr, w.code, whoami); err != nil {
		h.tb.Fatalf("approve: %v", err)
	}
	st, out := h.status(w.browser, w)
	if st != http.StatusOK || out["state"] != oauth.RequestApproved || out["redirect"] == "" {
		h.tb.Fatalf("status after approval: %d %v", st, out)
	}
	u, err := url.Parse(out["redirect"])
	if err != nil {
		h.tb.Fatal(err)
	}
	q := u.Query()
	if q.Get("iss") != h.srv.URL || q.Get("state") != w.state || q.Get("code") == "" {
		h.tb.Fatalf("the redirect %s lacks iss, state or code", out["redirect"])
	}
	return q.Get("code")
}

type tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

func (w *waiting) exchangeForm(code, resource string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "client_id": {w.clientID}, "code": {code},
		"redirect_uri": {w.redirectURI}, "code_verifier": {w.verifier}, "resource": {resource}}
}

func refreshForm(clientID, refresh, resource string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {refresh}, "resource": {resource}}
}

// tokenOK posts form to /token and wants tokens back.
func (h *harness) tokenOK(form url.Values) tokens {
	h.tb.Helper()
	resp, body := h.postForm("/token", form)
	if resp.StatusCode != http.StatusOK {
		h.tb.Fatalf("token (%s): %d %s", form.Get("grant_type"), resp.StatusCode, body)
	}
	var t tokens
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" || t.RefreshToken == "" {
		h.tb.Fatalf("token (%s): %s", form.Get("grant_type"), body)
	}
	return t
}

// connect runs the whole flow for clientID and returns its tokens.
func (h *harness) connect(clientID string) tokens {
	h.tb.Helper()
	w := h.startConnect(clientID, testCB)
	return h.tokenOK(w.exchangeForm(h.authCode(w), h.srv.URL))
}

// oauthErr decodes an RFC 6749 error body.
func oauthErr(tb testing.TB, body []byte) string {
	tb.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		tb.Fatalf("not an error object: %s", body)
	}
	return e.Error
}

func isJSON(header http.Header) bool {
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

func TestMetadata(t *testing.T) {
	h := newHarness(t)
	iss := h.srv.URL

	var bodies [][]byte
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		resp, body := h.get(h.client, iss+path)
		if resp.StatusCode != http.StatusOK || !isJSON(resp.Header) {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		bodies = append(bodies, body)
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("the two metadata documents differ:\n%s\n%s", bodies[0], bodies[1])
	}
	var md map[string]any
	if err := json.Unmarshal(bodies[0], &md); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/authorize",
		"token_endpoint":                                 iss + "/token",
		"registration_endpoint":                          iss + "/register",
		"revocation_endpoint":                            iss + "/revoke",
		"response_types_supported":                       []any{"code"},
		"code_challenge_methods_supported":               []any{"S256"},
		"grant_types_supported":                          []any{"authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange"},
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
	}
	for k, v := range want {
		if got := md[k]; fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	methods, _ := md["token_endpoint_auth_methods_supported"].([]any)
	if !containsAny(methods, "none") {
		t.Errorf("token_endpoint_auth_methods_supported = %v, want it to include none", methods)
	}

	t.Run("protected resource", func(t *testing.T) {
		resp, body := h.get(h.client, iss+"/.well-known/oauth-protected-resource")
		if resp.StatusCode != http.StatusOK || !isJSON(resp.Header) {
			t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.Unmarshal(body, &prm); err != nil {
			t.Fatal(err)
		}
		if prm.Resource != iss || strings.HasSuffix(prm.Resource, "/") {
			t.Errorf("resource = %q, want %q", prm.Resource, iss)
		}
		if len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != iss {
			t.Errorf("authorization_servers = %v, want [%s]", prm.AuthorizationServers, iss)
		}
		if h.as.Resource() != iss || h.as.ResourceMetadataURL() != iss+"/.well-known/oauth-protected-resource" {
			t.Errorf("Resource() = %q, ResourceMetadataURL() = %q", h.as.Resource(), h.as.ResourceMetadataURL())
		}
	})

	t.Run("issuer configured with a trailing slash", func(t *testing.T) {
		h := newHarness(t, func(c *oauth.Config) { c.Issuer += "/" })
		_, body := h.get(h.client, h.srv.URL+"/.well-known/oauth-authorization-server")
		var md struct {
			Issuer string `json:"issuer"`
		}
		json.Unmarshal(body, &md)
		if md.Issuer != h.srv.URL {
			t.Errorf("issuer = %q, want %q", md.Issuer, h.srv.URL)
		}
	})
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestConnectFlow(t *testing.T) {
	h := newHarness(t)
	client := h.register("Flow Client", testCB)
	w := h.startConnect(client, testCB)
	code := h.authCode(w)

	resp, body := h.postForm("/token", w.exchangeForm(code, h.srv.URL))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("exchange: %d, Cache-Control %q: %s", resp.StatusCode, resp.Header.Get("Cache-Control"), body)
	}
	var tok tokens
	json.Unmarshal(body, &tok)
	if tok.TokenType != "Bearer" || tok.ExpiresIn != int(oauth.AccessTokenTTL/time.Second) {
		t.Errorf("token_type %q, expires_in %d", tok.TokenType, tok.ExpiresIn)
	}
	g, err := h.as.Verify(context.Background(), tok.AccessToken)
	if err != nil || g.PairingID != testPairing || g.ClientName != "Flow Client" || g.Host != "client.example" {
		t.Fatalf("Verify = %+v, %v", g, err)
	}

	t.Run("code used twice revokes what it issued", func(t *testing.T) {
		resp, body := h.postForm("/token", w.exchangeForm(code, h.srv.URL))
		if resp.StatusCode != http.StatusBadRequest || oauthErr(t, body) != "invalid_grant" {
			t.Fatalf("second exchange: %d %s", resp.StatusCode, body)
		}
		if _, err := h.as.Verify(context.Background(), tok.AccessToken); !errors.Is(err, oauth.ErrInvalidToken) {
			t.Errorf("Verify after code reuse = %v, want ErrInvalidToken", err)
		}
	})
}

func TestTokenErrors(t *testing.T) {
	h := newHarness(t)
	iss := h.srv.URL
	cases := []struct {
		name   string
		form   url.Values
		status int
		err    string
	}{
		{"unsupported grant", url.Values{"grant_type": {"password"}, "client_id": {"c"}}, 400, "unsupported_grant_type"},
		{"no grant", url.Values{"client_id": {"c"}}, 400, "unsupported_grant_type"},
		{"missing client_id", url.Values{"grant_type": {"authorization_code"}, "code": {"trc_x"}}, 401, "invalid_client"},
		{"unknown code", url.Values{"grant_type": {"authorization_code"}, "client_id": {"c"}, "code": {"trc_unknown"},
			"code_verifier": {strings.Repeat("v", 43)}, "redirect_uri": {testCB}}, 400, "invalid_grant"},
		{"code without prefix", url.Values{"grant_type": {"authorization_code"}, "client_id": {"c"}, "code": {"unknown"},
			"code_verifier": {strings.Repeat("v", 43)}, "redirect_uri": {testCB}}, 400, "invalid_grant"},
		{"missing code_verifier", url.Values{"grant_type": {"authorization_code"}, "client_id": {"c"}, "code": {"trc_x"}}, 400, "invalid_request"},
		{"unknown refresh token", refreshForm("c", "trr_unknown", iss), 400, "invalid_grant"},
		{"resource mismatch", url.Values{"grant_type": {"authorization_code"}, "client_id": {"c"}, "code": {"trc_x"},
			"code_verifier": {strings.Repeat("v", 43)}, "resource": {"https://other.example"}}, 400, "invalid_target"},
		{"resource with trailing slash is this relay", url.Values{"grant_type": {"authorization_code"}, "client_id": {"c"},
			"code": {"trc_x"}, "code_verifier": {strings.Repeat("v", 43)}, "resource": {iss + "/"}}, 400, "invalid_grant"},
		{"form over 16 KiB", refreshForm("c", "trr_"+strings.Repeat("a", 17<<10), iss), 400, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.postForm("/token", c.form)
			if resp.StatusCode != c.status || oauthErr(t, body) != c.err {
				t.Errorf("%d %s, want %d %s", resp.StatusCode, body, c.status, c.err)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
		})
	}

	t.Run("code of another client or verifier", func(t *testing.T) {
		client := h.register("Token Client", testCB)
		w := h.startConnect(client, testCB)
		code := h.authCode(w)
		for name, edit := range map[string]func(url.Values){
			"other client":       func(f url.Values) { f.Set("client_id", "client_other") },
			"wrong verifier":     func(f url.Values) { f.Set("code_verifier", strings.Repeat("w", 43)) },
			"other redirect_uri": func(f url.Values) { f.Set("redirect_uri", testCB+"2") },
		} {
			f := w.exchangeForm(code, iss)
			edit(f)
			resp, body := h.postForm("/token", f)
			if resp.StatusCode != http.StatusBadRequest || oauthErr(t, body) != "invalid_grant" {
				t.Errorf("%s: %d %s, want 400 invalid_grant", name, resp.StatusCode, body)
			}
		}
		// None of those used the code up.
		h.tokenOK(w.exchangeForm(code, iss))
	})

	t.Run("code expired", func(t *testing.T) {
		client := h.register("Token Client", testCB)
		w := h.startConnect(client, testCB)
		code := h.authCode(w)
		h.clock.Advance(oauth.AuthCodeTTL + time.Second)
		resp, body := h.postForm("/token", w.exchangeForm(code, iss))
		if resp.StatusCode != http.StatusBadRequest || oauthErr(t, body) != "invalid_grant" {
			t.Errorf("%d %s, want 400 invalid_grant", resp.StatusCode, body)
		}
	})
}

func TestRevoke(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name   string
		form   url.Values
		status int
	}{
		{"unknown refresh token", url.Values{"token": {"trr_unknown"}}, http.StatusOK},
		{"unknown access token", url.Values{"token": {"tra_unknown"}}, http.StatusOK},
		{"token of no kind", url.Values{"token": {"whatever"}, "token_type_hint": {"access_token"}}, http.StatusOK},
		{"missing token", url.Values{"client_id": {"c"}}, http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.postForm("/revoke", c.form)
			if resp.StatusCode != c.status {
				t.Errorf("%d %s, want %d", resp.StatusCode, body, c.status)
			}
			if c.status == http.StatusBadRequest && oauthErr(t, body) != "invalid_request" {
				t.Errorf("error %s, want invalid_request", body)
			}
			if resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q", resp.Header.Get("Cache-Control"))
			}
		})
	}

	t.Run("refresh token ends its family", func(t *testing.T) {
		client := h.register("Revoke Client", testCB)
		tok := h.connect(client)
		if resp, body := h.postForm("/revoke", url.Values{"token": {tok.RefreshToken}, "client_id": {"client_other"}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke as another client: %d %s", resp.StatusCode, body)
		}
		if _, err := h.as.Verify(context.Background(), tok.AccessToken); err != nil {
			t.Fatalf("another client's revocation ended the family: %v", err)
		}
		if resp, body := h.postForm("/revoke", url.Values{"token": {tok.RefreshToken}, "client_id": {client}}); resp.StatusCode != http.StatusOK {
			t.Fatalf("revoke: %d %s", resp.StatusCode, body)
		}
		if _, err := h.as.Verify(context.Background(), tok.AccessToken); !errors.Is(err, oauth.ErrInvalidToken) {
			t.Errorf("Verify after revocation = %v, want ErrInvalidToken", err)
		}
		resp, body := h.postForm("/token", refreshForm(client, tok.RefreshToken, h.srv.URL))
		if resp.StatusCode != http.StatusBadRequest || oauthErr(t, body) != "invalid_grant" {
			t.Errorf("refresh after revocation: %d %s", resp.StatusCode, body)
		}
	})
}

var (
	cspNonce  = regexp.MustCompile(`script-src 'nonce-([^']+)'`)
	tagNonce  = regexp.MustCompile(`<(script|style) nonce="([^"]*)">`)
	linkAttr  = regexp.MustCompile(`(?i)\s(src|href|action|formaction|poster|srcset)\s*=\s*"([^"]*)"`)
	anyURL    = regexp.MustCompile(`(?i)https?://[^\s"'<>]*`)
	anchorRef = regexp.MustCompile(`<a href="([^"]*)"`)
)

func TestWaitingPage(t *testing.T) {
	h := newHarness(t)
	const evil = `<script>alert(1)</script>`
	client := h.register(evil, testCB)
	w := h.startConnect(client, testCB)

	t.Run("headers", func(t *testing.T) {
		csp := w.header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'none'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, d) {
				t.Errorf("Content-Security-Policy %q lacks %s", csp, d)
			}
		}
		m := cspNonce.FindStringSubmatch(csp)
		if m == nil {
			t.Fatalf("Content-Security-Policy %q has no script-src nonce", csp)
		}
		tags := tagNonce.FindAllStringSubmatch(w.page, -1)
		if len(tags) == 0 {
			t.Fatal("the page has no script or style with a nonce")
		}
		for _, tag := range tags {
			if got := html.UnescapeString(tag[2]); got != m[1] {
				t.Errorf("<%s nonce=%q>, the policy allows %q", tag[1], got, m[1])
			}
		}
		for k, v := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
			"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
			if got := w.header.Get(k); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		other := h.startConnect(client, testCB)
		if n := cspNonce.FindStringSubmatch(other.header.Get("Content-Security-Policy")); n == nil || n[1] == m[1] {
			t.Errorf("two pages share the nonce %q", m[1])
		}
	})

	t.Run("client name is escaped", func(t *testing.T) {
		if strings.Contains(w.page, "<script>alert") {
			t.Errorf("the page holds the client's name raw:\n%s", w.page)
		}
		if !strings.Contains(w.page, html.EscapeString(evil)) {
			t.Errorf("the page does not show the client's name escaped:\n%s", w.page)
		}
		if n := strings.Count(w.page, "<script"); n != 1 {
			t.Errorf("the page has %d script tags, want the one of its own", n)
		}
	})

	approve := testAppURL + "#tabrelay-connect=" + w.code

	t.Run("approval link", func(t *testing.T) {
		m := anchorRef.FindStringSubmatch(w.page)
		if m == nil {
			t.Fatal("the page has no approval link")
		}
		if got := html.UnescapeString(m[1]); got != approve {
			t.Errorf("approval link %q, want %q", got, approve)
		}
		if !regexp.MustCompile(`^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$`).MatchString(w.code) {
			t.Errorf("connect code %q is not XXXX-XXXX in the unambiguous alphabet", w.code)
		}
	})

	t.Run("no external URLs", func(t *testing.T) {
		for _, m := range linkAttr.FindAllStringSubmatch(w.page, -1) {
			if v := html.UnescapeString(m[2]); v != approve {
				t.Errorf("%s=%q: the page loads or links something besides the approval link", m[1], v)
			}
		}
		for _, u := range anyURL.FindAllString(html.UnescapeString(w.page), -1) {
			if u != approve && u != w.statusURL {
				t.Errorf("the page names the URL %q", u)
			}
		}
		for _, bad := range []string{"<link", "<img", "<iframe", "<object", "<embed", "@import", "url("} {
			if strings.Contains(w.page, bad) {
				t.Errorf("the page has %s", bad)
			}
		}
		if !strings.HasPrefix(w.statusURL, h.srv.URL+"/authorize/status/") {
			t.Errorf("status URL %q is not on the issuer", w.statusURL)
		}
	})

	t.Run("status URL needs the page's cookie", func(t *testing.T) {
		if st, out := h.status(h.browser(), w); st != http.StatusNotFound {
			t.Errorf("without the cookie: %d %v, want 404", st, out)
		}
		st, out := h.status(w.browser, w)
		if st != http.StatusOK || len(out) != 1 || out["state"] != "pending" {
			t.Errorf("with the cookie: %d %v, want 200 {state: pending}", st, out)
		}
		// Another page's cookie does not open this one.
		other := h.startConnect(client, testCB)
		req, _ := http.NewRequest(http.MethodGet, w.statusURL, nil)
		for _, c := range other.browser.Jar.Cookies(mustURL(t, other.statusURL)) {
			req.AddCookie(c)
		}
		if resp, body := h.do(h.client, req); resp.StatusCode != http.StatusNotFound {
			t.Errorf("with another page's cookie: %d %s, want 404", resp.StatusCode, body)
		}
	})

	t.Run("approved code only reaches the page's browser", func(t *testing.T) {
		if _, err := h.as.Approve(context.Background(), testPairing, testAddr, w.code, whoami); err != nil {
			t.Fatal(err)
		}
		if st, out := h.status(h.browser(), w); st != http.StatusNotFound {
			t.Errorf("without the cookie after approval: %d %v, want 404", st, out)
		}
		if st, out := h.status(w.browser, w); st != http.StatusOK || !strings.Contains(out["redirect"], "code=trc_") {
			t.Errorf("with the cookie after approval: %d %v", st, out)
		}
	})
}

func mustURL(tb testing.TB, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func requestErrCode(err error) string {
	var re *protocol.RelayError
	if errors.As(err, &re) {
		return re.Code
	}
	return fmt.Sprintf("not a RelayError: %v", err)
}

func TestApproveScope(t *testing.T) {
	h := newHarness(t)
	client := h.register("Scope Client", testCB)
	w := h.startConnect(client, testCB)
	ctx := context.Background()
	cases := []struct {
		name  string
		scope []protocol.ScopeEntry
	}{
		{"empty", nil},
		{"empty slice", []protocol.ScopeEntry{}},
		{"unknown tool", []protocol.ScopeEntry{{Tool: "no_such_tool"}}},
		{"unknown action of counter", []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get", "explode"}}}},
		{"action of a tool without actions", []protocol.ScopeEntry{{Tool: "whoami", Actions: []string{"get"}}}},
		{"duplicate tool", []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get"}}, {Tool: "counter", Actions: []string{"reset"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.as.Approve(ctx, testPairing, testAddr, w.code, c.scope)
			if got := requestErrCode(err); got != protocol.ErrCodeInvalidScope {
				t.Errorf("Approve = %v, want %s", err, protocol.ErrCodeInvalidScope)
			}
		})
	}

	t.Run("refused scopes leave the code pending", func(t *testing.T) {
		info, err := h.as.Approve(ctx, testPairing, testAddr, w.code,
			[]protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get", "increment"}}, {Tool: "whoami"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get", "increment"}}, {Tool: "whoami", Actions: []string{"*"}}}
		if fmt.Sprint(info.Scope) != fmt.Sprint(want) || info.Client != "Scope Client" || info.Host != "client.example" {
			t.Errorf("Approve = %+v, want scope %v", info, want)
		}
	})
}

func TestDecisions(t *testing.T) {
	ctx := context.Background()

	t.Run("code typed in lower case without dash", func(t *testing.T) {
		h := newHarness(t)
		w := h.startConnect(h.register("Typed Client", testCB), testCB)
		typed := strings.ToLower(strings.ReplaceAll(w.code, "-", ""))
		if _, err := h.as.Approve(ctx, testPairing, testAddr, typed, whoami); err != nil {
			t.Fatalf("Approve(%q) for %s: %v", typed, w.code, err)
		}
		_, err := h.as.Approve(ctx, testPairing, testAddr, " "+strings.ToLower(w.code)+" ", whoami)
		if got := requestErrCode(err); got != protocol.ErrCodeCodeUsed {
			t.Errorf("second Approve = %v, want %s", err, protocol.ErrCodeCodeUsed)
		}
	})

	t.Run("declined", func(t *testing.T) {
		h := newHarness(t)
		w := h.startConnect(h.register("Declined Client", testCB), testCB)
		if err := h.as.Decline(ctx, testPairing, testAddr, w.code); err != nil {
			t.Fatal(err)
		}
		_, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami)
		if got := requestErrCode(err); got != protocol.ErrCodeCodeUsed {
			t.Errorf("Approve after Decline = %v, want %s", err, protocol.ErrCodeCodeUsed)
		}
		st, out := h.status(w.browser, w)
		q := mustURL(t, out["redirect"]).Query()
		if st != http.StatusOK || out["state"] != "declined" || q.Get("error") != "access_denied" ||
			q.Get("iss") != h.srv.URL || q.Get("state") != w.state {
			t.Errorf("status after Decline: %d %v", st, out)
		}
	})

	t.Run("expired", func(t *testing.T) {
		h := newHarness(t)
		w := h.startConnect(h.register("Slow Client", testCB), testCB)
		h.clock.Advance(oauth.ConnectCodeTTL + time.Second)
		_, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami)
		if got := requestErrCode(err); got != protocol.ErrCodeCodeExpired {
			t.Errorf("Approve after %v = %v, want %s", oauth.ConnectCodeTTL, err, protocol.ErrCodeCodeExpired)
		}
		st, out := h.status(w.browser, w)
		if st != http.StatusOK || out["state"] != "expired" || !strings.Contains(out["redirect"], "error=access_denied") {
			t.Errorf("status after expiry: %d %v", st, out)
		}
	})

	t.Run("wrong codes are limited", func(t *testing.T) {
		h := newHarness(t)
		w := h.startConnect(h.register("Limited Client", testCB), testCB)
		for i := range 10 {
			_, err := h.as.Approve(ctx, testPairing, testAddr, "ZZZZ-ZZZZ", whoami)
			if got := requestErrCode(err); got != protocol.ErrCodeWrongCode {
				t.Fatalf("wrong code %d: %v, want %s", i+1, err, protocol.ErrCodeWrongCode)
			}
		}
		_, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami)
		if got := requestErrCode(err); got != protocol.ErrCodeLimited {
			t.Fatalf("right code after 10 wrong ones: %v, want %s", err, protocol.ErrCodeLimited)
		}
		_, err = h.as.Approve(ctx, "pair_other", testAddr, w.code, whoami)
		if got := requestErrCode(err); got != protocol.ErrCodeLimited {
			t.Fatalf("another pairing from the same address: %v, want %s", err, protocol.ErrCodeLimited)
		}
		h.clock.Advance(time.Minute)
		if _, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami); err != nil {
			t.Errorf("right code a minute later: %v", err)
		}
	})
}
