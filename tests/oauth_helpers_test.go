package tests

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// host is an MCP host as the authorization server sees it: a public client
// with a browser (cookie jar, no automatic redirects).
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
		http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (h *host) register() {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": "E2E Host", "redirect_uris": []string{h.redirectURI},
		"token_endpoint_auth_method": "none", "application_type": "native"})
	resp, err := h.http.Post(h.relay+"/register", "application/json", strings.NewReader(string(body)))
	if err != nil {
		h.t.Fatal(err)
	}
	var out map[string]any
	decode(h.t, resp, http.StatusCreated, &out)
	h.clientID = out["client_id"].(string)
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
	f := &flow{verifier: randomString(), state: randomString()}
	sum := sha256.Sum256([]byte(f.verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {h.clientID}, "redirect_uri": {h.redirectURI},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {f.state}, "resource": {h.relay}}
	resp, err := h.http.Get(h.relay + "/authorize?" + q.Encode())
	if err != nil {
		h.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	f.page = string(body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("authorize: %d\n%s", resp.StatusCode, body)
	}
	m1, m2 := codeAttr.FindStringSubmatch(f.page), statusAttr.FindStringSubmatch(f.page)
	if m1 == nil || m2 == nil {
		h.t.Fatalf("the waiting page has no code or status URL:\n%s", f.page)
	}
	f.code, f.statusURL = m1[1], m2[1]
	return f
}

// status polls the waiting page's status URL once.
func (h *host) status(f *flow) map[string]string {
	h.t.Helper()
	resp, err := h.http.Get(f.statusURL)
	if err != nil {
		h.t.Fatal(err)
	}
	var out map[string]string
	decode(h.t, resp, http.StatusOK, &out)
	return out
}

// codeFrom reads the authorization response the status sends the browser
// to, checking state and iss.
func (h *host) codeFrom(f *flow, redirect string) string {
	h.t.Helper()
	u, err := url.Parse(redirect)
	if err != nil || !strings.HasPrefix(redirect, h.redirectURI+"?") {
		h.t.Fatalf("redirect %q", redirect)
	}
	q := u.Query()
	if q.Get("state") != f.state || q.Get("iss") != h.relay || q.Get("code") == "" {
		h.t.Fatalf("authorization response %v (want state %s, iss %s)", q, f.state, h.relay)
	}
	return q.Get("code")
}

// token posts to /token and returns the status and the decoded answer.
func (h *host) token(form url.Values) (int, map[string]any, http.Header) {
	h.t.Helper()
	form.Set("client_id", h.clientID)
	resp, err := h.http.PostForm(h.relay+"/token", form)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header
}

func (h *host) exchange(f *flow, code string) (int, map[string]any) {
	status, out, hdr := h.token(url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {h.redirectURI}, "code_verifier": {f.verifier}, "resource": {h.relay}})
	if hdr.Get("Cache-Control") != "no-store" {
		h.t.Fatalf("token response Cache-Control %q", hdr.Get("Cache-Control"))
	}
	return status, out
}

func (h *host) refresh(token string) (int, map[string]any) {
	status, out, _ := h.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "resource": {h.relay}})
	return status, out
}

func decode(t testing.TB, resp *http.Response, want int, v any) {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d\n%s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v\n%s", resp.Request.URL.Path, err, body)
	}
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
