package tests

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// host is an MCP host as the authorization server sees it: a public client
// with a browser (cookie jar, no automatic redirects). Each step has a try
// form that returns its error (for goroutines, and for the cluster tests'
// hundreds of hosts); the plain form fails the test.
type host struct {
	t           testing.TB
	relay       string
	clientID    string
	redirectURI string
	http        *http.Client
}

func newHost(t testing.TB, relay string) *host {
	jar, _ := cookiejar.New(nil)
	return &host{t: t, relay: relay, redirectURI: "http://127.0.0.1:33418/callback",
		http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// must fails the test on err.
func (h *host) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) register() {
	h.t.Helper()
	h.must(h.tryRegister())
}

func (h *host) tryRegister() error {
	body, _ := json.Marshal(map[string]any{"client_name": "E2E Host", "redirect_uris": []string{h.redirectURI},
		"token_endpoint_auth_method": "none", "application_type": "native"})
	resp, err := h.http.Post(h.relay+"/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	var out struct {
		ClientID string `json:"client_id"`
	}
	if err := decodeAs(resp, http.StatusCreated, &out); err != nil {
		return err
	}
	if out.ClientID == "" {
		return fmt.Errorf("register: no client_id")
	}
	h.clientID = out.ClientID
	return nil
}

// flow is one authorization request in progress.
type flow struct {
	verifier, state, code, statusURL string
	page                             string
}

var (
	codeAttr   = regexp.MustCompile(`data-connect-code="([^"]+)"`)
	statusAttr = regexp.MustCompile(`data-status-url="([^"]+)"`)
)

// authorize opens /authorize as the person's browser would and reads the
// waiting page.
func (h *host) authorize() *flow {
	h.t.Helper()
	f, err := h.tryAuthorize()
	h.must(err)
	return f
}

// authorizationURL is the /authorize URL of an authorization request of h's,
// with PKCE S256 over verifier.
func (h *host) authorizationURL(verifier, state string) string {
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {h.clientID}, "redirect_uri": {h.redirectURI},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {state}, "resource": {h.relay}}
	return h.relay + "/authorize?" + q.Encode()
}

func (h *host) tryAuthorize() (*flow, error) {
	f := &flow{verifier: randomString(), state: randomString()}
	resp, err := h.http.Get(h.authorizationURL(f.verifier, f.state))
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	f.page = string(body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("authorize: %d\n%s", resp.StatusCode, body)
	}
	m1, m2 := codeAttr.FindStringSubmatch(f.page), statusAttr.FindStringSubmatch(f.page)
	if m1 == nil || m2 == nil {
		return nil, fmt.Errorf("the waiting page has no code or status URL:\n%s", f.page)
	}
	f.code, f.statusURL = m1[1], m2[1]
	return f, nil
}

// status polls the waiting page's status URL once.
func (h *host) status(f *flow) map[string]string {
	h.t.Helper()
	st, err := h.tryStatus(f)
	h.must(err)
	return st
}

func (h *host) tryStatus(f *flow) (map[string]string, error) {
	resp, err := h.http.Get(f.statusURL)
	if err != nil {
		return nil, err
	}
	var out map[string]string
	return out, decodeAs(resp, http.StatusOK, &out)
}

// codeFrom reads the authorization response the status sends the browser
// to, checking state and iss.
func (h *host) codeFrom(f *flow, redirect string) string {
	h.t.Helper()
	code, err := h.tryCodeFrom(f, redirect)
	h.must(err)
	return code
}

func (h *host) tryCodeFrom(f *flow, redirect string) (string, error) {
	u, err := url.Parse(redirect)
	if err != nil || !strings.HasPrefix(redirect, h.redirectURI+"?") {
		return "", fmt.Errorf("redirect %q", redirect)
	}
	q := u.Query()
	if q.Get("state") != f.state || q.Get("iss") != h.relay || q.Get("code") == "" {
		return "", fmt.Errorf("authorization response %v (want state %s, iss %s)", q, f.state, h.relay)
	}
	return q.Get("code"), nil
}

// tokenReply is an answer of /token.
type tokenReply struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

// access and refresh are the reply's tokens ("" when it has none).
func (r tokenReply) access() string  { s, _ := r.body["access_token"].(string); return s }
func (r tokenReply) refresh() string { s, _ := r.body["refresh_token"].(string); return s }

// token posts to /token and returns the status and the decoded answer.
func (h *host) token(form url.Values) (int, map[string]any, http.Header) {
	h.t.Helper()
	r, err := h.tryToken(form)
	h.must(err)
	return r.status, r.body, r.header
}

func (h *host) tryToken(form url.Values) (tokenReply, error) {
	form.Set("client_id", h.clientID)
	resp, err := h.http.PostForm(h.relay+"/token", form)
	if err != nil {
		return tokenReply{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := tokenReply{status: resp.StatusCode, raw: string(raw), header: resp.Header}
	json.Unmarshal(raw, &r.body)
	return r, nil
}

func (h *host) exchange(f *flow, code string) (int, map[string]any) {
	h.t.Helper()
	r, err := h.tryExchange(f, code)
	h.must(err)
	return r.status, r.body
}

func (h *host) tryExchange(f *flow, code string) (tokenReply, error) {
	r, err := h.tryToken(url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {h.redirectURI}, "code_verifier": {f.verifier}, "resource": {h.relay}})
	if err == nil && r.header.Get("Cache-Control") != "no-store" {
		err = fmt.Errorf("token response Cache-Control %q", r.header.Get("Cache-Control"))
	}
	return r, err
}

func (h *host) refresh(token string) (int, map[string]any) {
	h.t.Helper()
	r, err := h.tryRefresh(token)
	h.must(err)
	return r.status, r.body
}

func (h *host) tryRefresh(token string) (tokenReply, error) {
	return h.tryToken(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "resource": {h.relay}})
}

func decode(t testing.TB, resp *http.Response, want int, v any) {
	t.Helper()
	if err := decodeAs(resp, want, v); err != nil {
		t.Fatal(err)
	}
}

// decodeAs reads a JSON answer of status want into v.
func decodeAs(resp *http.Response, want int, v any) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d\n%s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %v\n%s", resp.Request.URL.Path, err, body)
	}
	return nil
}

func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ask runs `tabrelay tab approve|decline|connections|forget` for browser b.
func (b *browser) ask(relayURL string, args ...string) (string, error) {
	b.t.Helper()
	full := append([]string{"tab", args[0], "--relay", relayURL, "--origin", origin, "--secret-file", b.secretFile}, args[1:]...)
	out, err := exec.Command(binary, full...).CombinedOutput()
	return string(out), err
}
