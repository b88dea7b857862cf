package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/oauth"
)

// metadata is a valid registration, changed by edits.
func metadata(edits ...func(map[string]any)) string {
	m := map[string]any{"client_name": "Test Client", "redirect_uris": []string{testCB}, "application_type": "web"}
	for _, e := range edits {
		e(m)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func set(k string, v any) func(map[string]any)   { return func(m map[string]any) { m[k] = v } }
func del(k string) func(map[string]any)          { return func(m map[string]any) { delete(m, k) } }
func redirects(u ...string) func(map[string]any) { return set("redirect_uris", u) }

func TestRegister(t *testing.T) {
	tooMany := make([]string, 21)
	for i := range tooMany {
		tooMany[i] = testCB
	}
	cases := []struct {
		name     string
		body     string
		status   int
		err      string // the OAuth error of a refusal
		wantName string // of an acceptance, when not "Test Client"
	}{
		{name: "https", body: metadata(), status: 201},
		{name: "loopback IPv4 with port", body: metadata(redirects("http://127.0.0.1:33418/callback")), status: 201},
		{name: "localhost", body: metadata(redirects("http://localhost/callback")), status: 201},
		{name: "loopback IPv6", body: metadata(redirects("http://[::1]/callback")), status: 201},
		{name: "several", body: metadata(redirects(testCB, "http://127.0.0.1/cb", "https://claude.ai/api/mcp/auth_callback")), status: 201},
		{name: "public client explicitly", body: metadata(set("token_endpoint_auth_method", "none"),
			set("grant_types", []string{"authorization_code", "refresh_token"}), set("response_types", []string{"code"})), status: 201},
		{name: "name of 64 runes", body: metadata(set("client_name", strings.Repeat("é", 64))), status: 201, wantName: strings.Repeat("é", 64)},
		{name: "name with a dash and a tick", body: metadata(set("client_name", "Claude — verified ✔")), status: 201, wantName: "Claude — verified ✔"},
		{name: "name is trimmed", body: metadata(set("client_name", "  Spaced  ")), status: 201, wantName: "Spaced"},

		{name: "no client_name", body: metadata(del("client_name")), status: 400, err: "invalid_client_metadata"},
		{name: "blank client_name", body: metadata(set("client_name", " \t ")), status: 400, err: "invalid_client_metadata"},
		{name: "name of 65 runes", body: metadata(set("client_name", strings.Repeat("é", 65))), status: 400, err: "invalid_client_metadata"},
		// Issue 23: format characters (Unicode Cf) hide in a name shown to the person.
		{name: "name with a zero-width space", body: metadata(set("client_name", "Cla\u200bude")), status: 400, err: "invalid_client_metadata"},
		{name: "name with a zero-width joiner", body: metadata(set("client_name", "Claude\u200d")), status: 400, err: "invalid_client_metadata"},
		{name: "name with a soft hyphen", body: metadata(set("client_name", "Clau\u00adde")), status: 400, err: "invalid_client_metadata"},
		{name: "name with a byte order mark", body: metadata(set("client_name", "\ufeffClaude")), status: 400, err: "invalid_client_metadata"},
		{name: "name with a line separator", body: metadata(set("client_name", "Claude\u2028verified")), status: 400, err: "invalid_client_metadata"},
		{name: "no redirect_uris", body: metadata(del("redirect_uris")), status: 400, err: "invalid_redirect_uri"},
		{name: "empty redirect_uris", body: metadata(redirects()), status: 400, err: "invalid_redirect_uri"},
		{name: "21 redirect_uris", body: metadata(redirects(tooMany...)), status: 400, err: "invalid_redirect_uri"},
		{name: "redirect URI of 2048 bytes", body: metadata(redirects(uriOfLen(2048))), status: 201},
		{name: "redirect URI of 2049 bytes", body: metadata(redirects(uriOfLen(2049))), status: 400, err: "invalid_redirect_uri"},
		{name: "http on a public host", body: metadata(redirects("http://example.com/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "http on a name that starts with localhost", body: metadata(redirects("http://localhost.example.com/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "http on a short loopback form", body: metadata(redirects("http://127.1/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "one bad among good", body: metadata(redirects(testCB, "http://example.com/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "javascript", body: metadata(redirects("javascript:alert(1)")), status: 400, err: "invalid_redirect_uri"},
		{name: "data", body: metadata(redirects("data:text/html,<script>alert(1)</script>")), status: 400, err: "invalid_redirect_uri"},
		{name: "file", body: metadata(redirects("file:///etc/passwd")), status: 400, err: "invalid_redirect_uri"},
		// Native apps' private-use schemes are refused: https or loopback only.
		{name: "custom scheme", body: metadata(redirects("custom-scheme://x")), status: 400, err: "invalid_redirect_uri"},
		{name: "relative", body: metadata(redirects("/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "fragment", body: metadata(redirects(testCB + "#frag")), status: 400, err: "invalid_redirect_uri"},
		{name: "empty fragment", body: metadata(redirects(testCB + "#")), status: 400, err: "invalid_redirect_uri"},
		{name: "user info", body: metadata(redirects("https://user:pass@client.example/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "user info on loopback", body: metadata(redirects("http://user@127.0.0.1/cb")), status: 400, err: "invalid_redirect_uri"},
		{name: "client_secret_basic", body: metadata(set("token_endpoint_auth_method", "client_secret_basic")), status: 400, err: "invalid_client_metadata"},
		{name: "response type token", body: metadata(set("response_types", []string{"token"})), status: 400, err: "invalid_client_metadata"},
		{name: "implicit grant", body: metadata(set("grant_types", []string{"implicit"})), status: 400, err: "invalid_client_metadata"},
		{name: "client_credentials grant", body: metadata(set("grant_types", []string{"authorization_code", "client_credentials"})), status: 400, err: "invalid_client_metadata"},
		{name: "redirect_uris not a list", body: metadata(set("redirect_uris", testCB)), status: 400, err: "invalid_client_metadata"},
		{name: "malformed JSON", body: `{"client_name": "Test Client", "redirect_uris": [`, status: 400, err: "invalid_client_metadata"},
		{name: "not an object", body: `["Test Client"]`, status: 400, err: "invalid_client_metadata"},
		{name: "empty body", body: ``, status: 400, err: "invalid_client_metadata"},
		{name: "body over 64 KiB", body: metadata(set("client_uri", "https://client.example/"+strings.Repeat("a", 64<<10))), status: 400, err: "invalid_client_metadata"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t) // each registration counts against the address's limit
			resp, body := h.post("/register", "application/json", []byte(c.body))
			if resp.StatusCode != c.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, c.status)
			}
			if resp.Header.Get("Cache-Control") != "no-store" || !isJSON(resp.Header) {
				t.Errorf("Cache-Control %q, Content-Type %q", resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Type"))
			}
			if c.status != http.StatusCreated {
				if got := oauthErr(t, body); got != c.err {
					t.Errorf("error %s, want %s", body, c.err)
				}
				// RFC 6749 §5.2: the description is printable ASCII
				// without quotes or backslashes, and it echoes
				// nothing the caller sent (a redirect URI included).
				var e struct {
					Description string `json:"error_description"`
				}
				_ = json.Unmarshal(body, &e)
				if strings.ContainsFunc(e.Description, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '"' || r == '\\' }) ||
					strings.Contains(e.Description, "://") || e.Description == "" {
					t.Errorf("error_description %q", e.Description)
				}
				return
			}
			var out struct {
				ClientID   string `json:"client_id"`
				ClientName string `json:"client_name"`
				AuthMethod string `json:"token_endpoint_auth_method"`
				Secret     string `json:"client_secret"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatal(err)
			}
			want := c.wantName
			if want == "" {
				want = "Test Client"
			}
			if out.ClientID == "" || out.AuthMethod != "none" || out.Secret != "" || out.ClientName != want {
				t.Errorf("registration %s, want a client_id, auth method none, no secret, name %q", body, want)
			}
		})
	}
}

func TestRegisterRateLimit(t *testing.T) {
	h := newHarness(t)
	for i := range 20 {
		if resp, body := h.post("/register", "application/json", []byte(metadata())); resp.StatusCode != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := h.post("/register", "application/json", []byte(metadata()))
	if resp.StatusCode != http.StatusTooManyRequests || oauthErr(t, body) != "slow_down" {
		t.Fatalf("21st registration: %d %s, want 429 slow_down", resp.StatusCode, body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	h.clock.Advance(30 * time.Second)
	if resp, body := h.post("/register", "application/json", []byte(metadata())); resp.StatusCode != http.StatusCreated {
		t.Fatalf("registration 30 s later: %d %s", resp.StatusCode, body)
	}
	if resp, _ := h.post("/register", "application/json", []byte(metadata())); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a second registration 30 s later: %d, want 429", resp.StatusCode)
	}

	t.Run("per address behind a proxy", func(t *testing.T) {
		h := newHarness(t, func(c *oauth.Config) { c.TrustProxy = true })
		from := func(addr string) int {
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/register", strings.NewReader(metadata()))
			req.Header.Set("Content-Type", "application/json")
			// The client wrote the first entry; the balancer appended the
			// address it saw, which is the one that counts.
			req.Header.Set("X-Forwarded-For", "10.9.9.9, "+addr)
			resp, _ := h.do(h.client, req)
			return resp.StatusCode
		}
		for range 20 {
			from("198.51.100.1")
		}
		if st := from("198.51.100.1"); st != http.StatusTooManyRequests {
			t.Errorf("21st from one address: %d, want 429", st)
		}
		if st := from("198.51.100.2"); st != http.StatusCreated {
			t.Errorf("first from another address: %d, want 201", st)
		}
	})
}

// TestClientsLiveByTheirTokens (issue 15, defect 6): a registered client
// whose tokens are refreshed stays registered; one nobody got a token for
// goes ClientUnusedTTL after its registration, and one whose tokens stopped
// ClientIdleTTL after the last. A client that went is not registered for
// /authorize any more.
func TestClientsLiveByTheirTokens(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	used, unused := h.register("Used", testCB), h.register("Unused", testCB)
	registered := func(id string) bool {
		t.Helper()
		_, challenge := pkce()
		resp, body := h.get(h.browser(), authorizeURL(h.srv.URL, id, testCB, challenge, randomState()))
		if resp.StatusCode != http.StatusOK && !strings.Contains(string(body), "not registered") {
			t.Fatalf("authorize: %d %s", resp.StatusCode, body)
		}
		return resp.StatusCode == http.StatusOK
	}
	sweep := func() {
		t.Helper()
		if _, err := h.store.Sweep(ctx, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	tok := h.connect(used)
	for range 4 { // four weeks of a host refreshing weekly
		h.clock.Advance(7 * 24 * time.Hour)
		tok = h.tokenOK(refreshForm(used, tok.RefreshToken, h.srv.URL))
		sweep()
	}
	if registered(unused) {
		t.Fatal("a client no token was issued to is still registered four weeks on")
	}
	if !registered(used) {
		t.Fatal("a client whose tokens were refreshed every week went")
	}
	h.clock.Advance(oauth.ClientIdleTTL - time.Hour)
	sweep()
	if !registered(used) {
		t.Fatal("the client went before ClientIdleTTL after its last token")
	}
	h.clock.Advance(2 * time.Hour)
	sweep()
	if registered(used) {
		t.Fatal("the client is still registered ClientIdleTTL after its last token")
	}
}

// TestRedirectMatching drives /authorize: a match shows the waiting page,
// anything else an error page (never a redirect to an unregistered URI).
func TestRedirectMatching(t *testing.T) {
	h := newHarness(t)
	client := h.register("Matching Client", testCB, "http://127.0.0.1:4000/cb?x=1", "http://localhost/cb", "http://[::1]:8080/cb")
	_, challenge := pkce()
	cases := []struct {
		name, uri string
		match     bool
	}{
		{"https exact", testCB, true},
		{"https other path", "https://client.example/cb2", false},
		{"https trailing slash", testCB + "/", false},
		{"https extra query", testCB + "?a=1", false},
		{"https other host", "https://evil.example/cb", false},
		{"https host in upper case", "https://CLIENT.example/cb", false},
		{"https explicit port", "https://client.example:443/cb", false},
		{"https other port", "https://client.example:8443/cb", false},
		{"http for https", "http://client.example/cb", false},
		{"https with fragment", testCB + "#x", false},
		{"loopback same port", "http://127.0.0.1:4000/cb?x=1", true},
		{"loopback other port", "http://127.0.0.1:55123/cb?x=1", true},
		{"loopback no port", "http://127.0.0.1/cb?x=1", true},
		{"loopback other path", "http://127.0.0.1:55123/other?x=1", false},
		{"loopback other query", "http://127.0.0.1:55123/cb?x=2", false},
		{"loopback no query", "http://127.0.0.1:55123/cb", false},
		{"loopback other host", "http://localhost:4000/cb?x=1", false},
		{"loopback https", "https://127.0.0.1:4000/cb?x=1", false},
		{"loopback user info", "http://user@127.0.0.1:55123/cb?x=1", false},
		{"loopback fragment", "http://127.0.0.1:55123/cb?x=1#f", false},
		{"loopback empty fragment", "http://127.0.0.1:55123/cb?x=1#", false},
		{"localhost other port", "http://localhost:61000/cb", true},
		{"IPv6 other port", "http://[::1]:9999/cb", true},
		{"IPv6 as IPv4", "http://127.0.0.1:8080/cb", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.get(h.client, authorizeURL(h.srv.URL, client, c.uri, challenge, "s"))
			switch {
			case c.match && (resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "data-connect-code")):
				t.Errorf("%s: %d, want the waiting page", c.uri, resp.StatusCode)
			case !c.match && resp.StatusCode != http.StatusBadRequest:
				t.Errorf("%s: %d (Location %q), want 400 and no redirect", c.uri, resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
}

// TestRegistrationsCannotFillTheStore (issue 23): a registration keeps at
// most 4 KiB of metadata (twenty redirect URIs of 2 KiB each are refused,
// a host's few URIs pass), a client nobody got a token for goes a day
// after its registration, and the relay as a whole registers 500 clients
// at once, then one per 5 s, whatever addresses they come from; the
// refused are told when to come back.
func TestRegistrationsCannotFillTheStore(t *testing.T) {
	h := newHarness(t, func(c *oauth.Config) { c.TrustProxy = true })
	from := func(addr, body string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/register", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", addr)
		return h.do(h.client, req)
	}
	big := make([]string, 20)
	for i := range big {
		big[i] = uriOfLen(2048)
	}
	if resp, body := from("192.0.2.1", metadata(redirects(big...))); resp.StatusCode != http.StatusBadRequest || oauthErr(t, body) != "invalid_client_metadata" {
		t.Fatalf("twenty redirect URIs of 2 KiB: %d %s, want 400 invalid_client_metadata", resp.StatusCode, body)
	}
	if resp, body := from("192.0.2.1", metadata(redirects(uriOfLen(2048), uriOfLen(2048)))); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("two redirect URIs of 2 KiB (over 4 KiB together): %d %s, want 400", resp.StatusCode, body)
	}
	vscode := metadata(set("client_name", "Visual Studio Code"), redirects("http://127.0.0.1:33418/", "https://vscode.dev/redirect",
		"http://127.0.0.1/", "http://localhost/", "https://insiders.vscode.dev/redirect"))
	if resp, body := from("192.0.2.1", vscode); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a host's five redirect URIs: %d %s", resp.StatusCode, body)
	}

	// An unused client goes a day after its registration.
	unused := h.register("Unused", testCB)
	h.clock.Advance(oauth.ClientUnusedTTL - time.Minute)
	if _, err := h.store.Sweep(context.Background(), h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Client(context.Background(), unused); err != nil {
		t.Fatalf("the client before its day: %v", err)
	}
	h.clock.Advance(2 * time.Minute)
	if _, err := h.store.Sweep(context.Background(), h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Client(context.Background(), unused); err == nil {
		t.Fatalf("a client nobody got a token for is kept past %v", oauth.ClientUnusedTTL)
	}
	if oauth.ClientUnusedTTL > 24*time.Hour {
		t.Fatalf("ClientUnusedTTL is %v", oauth.ClientUnusedTTL)
	}

	// The relay's budget: 500 at once from ever new addresses (the clock
	// moved a day on: it is full), then one per 5 s.
	for i := range 500 {
		if resp, body := from(fmt.Sprintf("198.51.%d.%d", i/250, i%250), metadata()); resp.StatusCode != http.StatusCreated {
			t.Fatalf("registration %d from a new address: %d %s", i+1, resp.StatusCode, body)
		}
	}
	resp, body := from("203.0.113.9", metadata())
	if resp.StatusCode != http.StatusTooManyRequests || oauthErr(t, body) != "slow_down" || resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("the 501st, from a new address: %d %q %s, want 429 slow_down with Retry-After: 5", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	h.clock.Advance(5 * time.Second)
	if resp, body := from("203.0.113.9", metadata()); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a registration 5 s later: %d %s", resp.StatusCode, body)
	}
	if got := testutil.ToFloat64(h.metrics.Limited.WithLabelValues("register_relay")); got != 1 {
		t.Fatalf("tabrelay_oauth_limited_total{limit=register_relay} = %v, want 1", got)
	}
}
