package tests

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tabrelay/tabrelay/protocol"
	"github.com/tabrelay/tabrelay/tabsocket"
)

// The hostile-input battery (issue 15): one table of cases per route, each
// sent over real HTTP to a node that serves every route. Each case says
// the status and the error's shape and text; after each one the node must
// still serve, and after each table its goroutines and heap are back to
// what they were before it.

// hostile is one request nobody well-meaning sends.
type hostile struct {
	name   string
	method string
	path   string
	header map[string]string
	body   string
	status int
	shape  func(t *testing.T, resp *http.Response, body []byte)
}

// rpcErr is a JSON-RPC error answer with code and a message holding text.
func rpcErr(code int, text string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || len(m.ID) == 0 {
			t.Fatalf("not a JSON-RPC error: %.300s", body)
		}
		if m.Error.Code != code || !strings.Contains(m.Error.Message, text) {
			t.Fatalf("error %d %q, want %d saying %q", m.Error.Code, m.Error.Message, code, text)
		}
	}
}

// oauthErrOf is an RFC 6749 error object with code, a description holding
// text, and Cache-Control: no-store.
func oauthErrOf(code, text string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		var m struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.Error != code || !strings.Contains(m.Description, text) {
			t.Fatalf("error %.300s, want %s saying %q", body, code, text)
		}
		if resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("an OAuth error without Cache-Control: no-store")
		}
	}
}

// page is an HTML page (never a redirect) saying text, under a
// Content-Security-Policy.
func page(text string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("not a page under a CSP: %q %q", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
		}
		if !strings.Contains(string(body), text) {
			t.Fatalf("the page does not say %q: %.400s", text, body)
		}
	}
}

// plain is a text answer saying text.
func plain(text string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		if !strings.Contains(string(body), text) {
			t.Fatalf("the answer does not say %q: %.300s", text, body)
		}
	}
}

// use is what a table leaves behind when it is done: goroutines and heap.
type use struct {
	goroutines int
	heap       uint64
}

func measureUse() use {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return use{goroutines: runtime.NumGoroutine(), heap: m.HeapInuse}
}

// backTo waits until goroutines are at most base's and the heap within
// 16 MiB of it (the tables send bodies of several MiB: they must not stay).
func backTo(t *testing.T, base use) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		now := measureUse()
		if now.goroutines <= base.goroutines && now.heap <= base.heap+16<<20 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("not back to the baseline: %d goroutines (before: %d), heap %d MiB (before: %d MiB)\n%s",
				now.goroutines, base.goroutines, now.heap>>20, base.heap>>20, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hostileClient sends each request on a connection of its own, closed
// after it, so that no idle connection counts against the baseline.
var hostileClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (r *relay) stillServing(t *testing.T) {
	t.Helper()
	resp, err := hostileClient.Get(r.url + "/health")
	if err != nil {
		t.Fatalf("the node stopped serving: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("health %d after a hostile request", resp.StatusCode)
	}
}

// battery sends each case to r and checks it, then the node.
func (r *relay) battery(t *testing.T, cases []hostile) {
	t.Helper()
	base := measureUse()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, r.url+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.header {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := hostileClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", c.method, c.path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("%d, want %d: %.300s", resp.StatusCode, c.status, body)
			}
			if resp.StatusCode >= 300 && resp.StatusCode < 400 {
				t.Fatalf("a redirect to %q", resp.Header.Get("Location"))
			}
			if c.shape != nil {
				c.shape(t, resp, body)
			}
			r.stillServing(t)
		})
	}
	backTo(t, base)
}

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

func TestHostileMCPRequests(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h, "counter:get")
	good := tokens["access_token"].(string)
	auth := func(extra ...string) map[string]string {
		m := map[string]string{"Authorization": "Bearer " + good, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}

	// Tokens gone bad in each way.
	revoked := newHost(t, r.url)
	_, rt := connect(t, r, b, revoked, "counter:get")
	if resp, _ := hostileClient.PostForm(r.url+"/revoke", url.Values{"token": {rt["access_token"].(string)}}); resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatal("revoke failed")
	}
	other := startRelay(t, nil)
	ob, _ := pairedBrowser(t, other)
	_, ot := connect(t, other, ob, newHost(t, other.url), "counter:get")
	expiring := newHost(t, r.url)
	_, et := connect(t, r, b, expiring, "counter:get")

	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"}}}`
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	invalidToken := rpcless(http.StatusUnauthorized)
	cases := []hostile{
		{"no token", "POST", "/", map[string]string{"Content-Type": "application/json"}, list, 401, invalidToken},
		{"a made-up token", "POST", "/", auth("Authorization", "Bearer tra_"+randomString()), list, 401, invalidToken},
		{"a token of another scheme", "POST", "/", auth("Authorization", "Basic "+good), list, 401, invalidToken},
		{"a refresh token as bearer", "POST", "/", auth("Authorization", "Bearer "+tokens["refresh_token"].(string)), list, 401, invalidToken},
		{"a revoked token", "POST", "/", auth("Authorization", "Bearer "+rt["access_token"].(string)), list, 401, invalidToken},
		{"another relay's token", "POST", "/", auth("Authorization", "Bearer "+ot["access_token"].(string)), list, 401, invalidToken},
		{"another Host", "POST", "/", auth("Host", "evil.example"), list, 403, plain("serves MCP at the Host")},
		{"an Origin not allowed", "POST", "/", auth("Origin", "https://evil.example"), list, 403, plain("This Origin may not call the relay.")},
		{"GET", "GET", "/", auth(), "", 405, plain("POST only")},
		{"DELETE", "DELETE", "/", auth(), "", 405, plain("POST only")},
		{"not JSON", "POST", "/", auth(), "not json", 400, rpcErr(-32700, "not JSON")},
		{"truncated", "POST", "/", auth(), call[:40], 400, rpcErr(-32700, "not JSON")},
		{"nested 100,000 deep", "POST", "/", auth(), nested(100_000), 400, rpcErr(-32700, "not JSON")},
		{"nested params 5,000 deep", "POST", "/", auth(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":` + nested(5000) + `}}`, 200, nil},
		{"a batch", "POST", "/", auth(), "[" + list + "," + list + "]", 400, rpcErr(-32600, "batches are not served")},
		{"an empty batch", "POST", "/", auth(), "[]", 400, rpcErr(-32600, "batches are not served")},
		{"jsonrpc 1.0", "POST", "/", auth(), `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, 400, rpcErr(-32600, "Not a JSON-RPC 2.0 request.")},
		{"id an object", "POST", "/", auth(), `{"jsonrpc":"2.0","id":{},"method":"tools/list"}`, 400, rpcErr(-32600, "Not a JSON-RPC 2.0 request.")},
		{"method a number", "POST", "/", auth(), `{"jsonrpc":"2.0","id":1,"method":7}`, 400, rpcErr(-32600, "Not a JSON-RPC 2.0 request.")},
		{"params a string", "POST", "/", auth(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"counter"}`, 400, rpcErr(-32602, "")},
		{"arguments an array", "POST", "/", auth(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":[1]}}`, 200, rpcErr(-32602, "arguments must be an object")},
		{"an unknown method", "POST", "/", auth(), `{"jsonrpc":"2.0","id":1,"method":"admin/setScope"}`, 200, rpcErr(-32601, "Method not found")},
		{"an unknown method, stateless era", "POST", "/", auth("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "admin/setScope"),
			`{"jsonrpc":"2.0","id":1,"method":"admin/setScope","params":{"_meta":` + meta + `}}`, 404, rpcErr(-32601, "Method not found")},
		{"a body over 4 MiB", "POST", "/", auth(), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 4<<20) + `"}}`, 413, rpcErr(-32600, "larger than the relay's limit")},
		{"a header over 1 MiB", "POST", "/", auth("X-Pad", strings.Repeat("a", 1<<20+8<<10)), list, 431, nil},
		{"text/plain", "POST", "/", auth("Content-Type", "text/plain"), list, 200, nil},
		{"Mcp-Method disagreeing with the body", "POST", "/", auth("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"counter","arguments":{"action":"get"},"_meta":` + meta + `}}`, 400, rpcErr(-32020, "The Mcp-Method header must equal the request's method.")},
		{"_meta without capabilities", "POST", "/", auth("MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"),
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, rpcErr(-32602, "_meta must carry")},
	}
	r.battery(t, cases)

	// An access token past its hour (the clock moved for the case alone).
	r.clock.Advance(time.Hour + time.Second)
	r.battery(t, []hostile{{"an expired token", "POST", "/", auth("Authorization", "Bearer "+et["access_token"].(string)), list, 401, invalidToken}})
}

// rpcless is the 401 of the MCP route: an OAuth error object and a
// WWW-Authenticate challenge naming the resource metadata.
func rpcless(status int) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, body []byte) {
		t.Helper()
		if ch := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer resource_metadata=") {
			t.Fatalf("WWW-Authenticate %q", ch)
		}
		oauthErrOf("invalid_token", "valid bearer token")(t, resp, body)
	}
}

func form(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v.Encode()
}

var formType = map[string]string{"Content-Type": "application/x-www-form-urlencoded"}

func TestHostileTokenRequests(t *testing.T) {
	r := startRelay(t, nil)
	h, f, code := approvedCode(t, r)
	_, otherFlow, otherCode := approvedCode(t, r)
	cases := []hostile{
		{"no client_id", "POST", "/token", formType, form("grant_type", "authorization_code", "code", code), 401, oauthErrOf("invalid_client", "client_id is required")},
		{"an unknown grant", "POST", "/token", formType, form("grant_type", "password", "client_id", h.clientID), 400, oauthErrOf("unsupported_grant_type", "grant_type must be")},
		{"another resource", "POST", "/token", formType, form("grant_type", "authorization_code", "client_id", h.clientID, "code", code, "resource", "https://evil.example"), 400, oauthErrOf("invalid_target", "resource must be this relay")},
		{"a wrong verifier", "POST", "/token", formType, form("grant_type", "authorization_code", "client_id", h.clientID, "code", otherCode,
			"redirect_uri", h.redirectURI, "code_verifier", f.verifier), 400, oauthErrOf("invalid_grant", "")},
		{"another redirect_uri", "POST", "/token", formType, form("grant_type", "authorization_code", "client_id", h.clientID, "code", otherCode,
			"redirect_uri", "http://127.0.0.1:9/elsewhere", "code_verifier", otherFlow.verifier), 400, oauthErrOf("invalid_grant", "")},
		{"a made-up code", "POST", "/token", formType, form("grant_type", "authorization_code", "client_id", h.clientID, "code", "tac_"+randomString(),
			"redirect_uri", h.redirectURI, "code_verifier", f.verifier), 400, oauthErrOf("invalid_grant", "")},
		{"a made-up refresh token", "POST", "/token", formType, form("grant_type", "refresh_token", "client_id", h.clientID, "refresh_token", "trr_"+randomString()), 400, oauthErrOf("invalid_grant", "")},
		{"a malformed form", "POST", "/token", formType, "client_id=%zz", 400, oauthErrOf("invalid_request", "form")},
		{"a form over 16 KiB", "POST", "/token", formType, form("client_id", h.clientID, "pad", strings.Repeat("a", 16<<10)), 400, oauthErrOf("invalid_request", "at most 16 KiB")},
		{"JSON instead of a form", "POST", "/token", map[string]string{"Content-Type": "application/json"}, `{"grant_type":"authorization_code","client_id":"` + h.clientID + `"}`, 401, oauthErrOf("invalid_client", "")},
		{"GET", "GET", "/token?" + form("grant_type", "authorization_code", "client_id", h.clientID, "code", code), nil, "", 405, nil},
	}
	r.battery(t, cases)

	// Replays: the code once used, then again; the rotated refresh token
	// after its grace.
	status, tokens := h.exchange(f, code)
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, tokens)
	}
	_, second := h.refresh(tokens["refresh_token"].(string))
	if second["refresh_token"] == nil {
		t.Fatalf("refresh: %v", second)
	}
	r.clock.Advance(61 * time.Second)
	r.battery(t, []hostile{
		{"a code used again", "POST", "/token", formType, form("grant_type", "authorization_code", "client_id", h.clientID, "code", code,
			"redirect_uri", h.redirectURI, "code_verifier", f.verifier), 400, oauthErrOf("invalid_grant", "")},
		{"a rotated refresh token after its grace", "POST", "/token", formType, form("grant_type", "refresh_token", "client_id", h.clientID,
			"refresh_token", tokens["refresh_token"].(string)), 400, oauthErrOf("invalid_grant", "")},
		{"its successor, revoked with the family", "POST", "/token", formType, form("grant_type", "refresh_token", "client_id", h.clientID,
			"refresh_token", second["refresh_token"].(string)), 400, oauthErrOf("invalid_grant", "")},
	})
}

func TestHostileRegistrationsAndRevocations(t *testing.T) {
	r := startRelay(t, nil)
	jsonType := map[string]string{"Content-Type": "application/json"}
	r.battery(t, []hostile{
		{"not JSON", "POST", "/register", jsonType, "client_name=x", 400, oauthErrOf("invalid_client_metadata", "not one JSON object")},
		{"two objects", "POST", "/register", jsonType, `{"client_name":"x","redirect_uris":["https://a.example/cb"]}{}`, 400, oauthErrOf("invalid_client_metadata", "not one JSON object")},
		// Deeper than any decoder goes, within the 64 KiB limit: a body over
		// it is cut off unread, and the client's write may be reset.
		{"nested 20,000 deep", "POST", "/register", jsonType, strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000), 400, oauthErrOf("invalid_client_metadata", "not one JSON object")},
		{"redirect_uris a string", "POST", "/register", jsonType, `{"client_name":"x","redirect_uris":"https://a.example/cb"}`, 400, oauthErrOf("invalid_client_metadata", "")},
		{"a javascript: redirect", "POST", "/register", jsonType, `{"client_name":"x","redirect_uris":["javascript:alert(1)"]}`, 400, oauthErrOf("invalid_redirect_uri", "redirect URI number 1 is not an absolute URL")},
		{"http on a public host", "POST", "/register", jsonType, `{"client_name":"x","redirect_uris":["https://a.example/cb","http://evil.example/cb"]}`, 400, oauthErrOf("invalid_redirect_uri", "redirect URI number 2 must be https")},
		{"a direction override in the name", "POST", "/register", jsonType, `{"client_name":"Claude\u202e","redirect_uris":["https://a.example/cb"]}`, 400, oauthErrOf("invalid_client_metadata", "direction override")},
		{"a zero-width space in the name", "POST", "/register", jsonType, `{"client_name":"Cla\u200bude","redirect_uris":["https://a.example/cb"]}`, 400, oauthErrOf("invalid_client_metadata", "invisible formatting characters")},
		{"a body over 64 KiB", "POST", "/register", jsonType, `{"client_name":"x","redirect_uris":["https://a.example/cb"],"pad":"` + strings.Repeat("a", 64<<10) + `"}`, 400, oauthErrOf("invalid_client_metadata", "at most 64 KiB")},
		{"a client secret method", "POST", "/register", jsonType, `{"client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, 400, oauthErrOf("invalid_client_metadata", "must be none")},

		{"revoke without a token", "POST", "/revoke", formType, form("client_id", "x"), 400, oauthErrOf("invalid_request", "token is required")},
		{"revoke a made-up token", "POST", "/revoke", formType, form("token", "trr_"+randomString()), 200, nil},
		{"revoke with a malformed form", "POST", "/revoke", formType, "token=%zz", 400, oauthErrOf("invalid_request", "token is required")},
		{"revoke with a form over 16 KiB", "POST", "/revoke", formType, form("token", strings.Repeat("a", 16<<10)), 400, oauthErrOf("invalid_request", "token is required")},
	})
}

func TestHostileAuthorizationRequests(t *testing.T) {
	r := startRelay(t, nil)
	h := newHost(t, r.url)
	h.register()
	_, challenge := pkceOf()
	q := func(edit ...string) string {
		v := url.Values{"response_type": {"code"}, "client_id": {h.clientID}, "redirect_uri": {h.redirectURI},
			"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "state": {"s"}, "resource": {r.url}}
		for i := 0; i+1 < len(edit); i += 2 {
			if edit[i+1] == "" {
				v.Del(edit[i])
				continue
			}
			v.Set(edit[i], edit[i+1])
		}
		return "/authorize?" + v.Encode()
	}
	unfetched := page("its metadata document could not be fetched")
	cases := []hostile{
		{"no client_id", "GET", q("client_id", ""), nil, "", 400, page("names no client")},
		{"an unknown client", "GET", q("client_id", "client_"+randomString()), nil, "", 400, page("not registered")},
		{"a redirect_uri not registered", "GET", q("redirect_uri", "https://evil.example/cb"), nil, "", 400, page("not one the application registered")},
		{"a redirect_uri on another path", "GET", q("redirect_uri", strings.Replace(h.redirectURI, "/callback", "/other", 1)), nil, "", 400, page("not one the application registered")},
		{"no PKCE", "GET", q("code_challenge", ""), nil, "", 400, page("PKCE with code_challenge_method S256 is required")},
		{"PKCE plain", "GET", q("code_challenge_method", "plain"), nil, "", 400, page("PKCE with code_challenge_method S256 is required")},
		{"a short challenge", "GET", q("code_challenge", "abc"), nil, "", 400, page("code_challenge must be")},
		{"response_type token", "GET", q("response_type", "token"), nil, "", 400, page("response_type must be code")},
		{"another resource", "GET", q("resource", "https://evil.example"), nil, "", 400, page("resource must be this relay")},
		{"a state over 2 KiB", "GET", q("state", strings.Repeat("s", 2049)), nil, "", 400, page("state may have at most 2048 bytes")},
		{"a metadata document on loopback", "GET", q("client_id", "https://127.0.0.1/client.json"), nil, "", 400, unfetched},
		{"a metadata document on a private address", "GET", q("client_id", "https://10.0.0.1/client.json"), nil, "", 400, unfetched},
		{"a metadata document on a link-local address", "GET", q("client_id", "https://169.254.169.254/latest/meta-data"), nil, "", 400, unfetched},
		{"a metadata document on IPv6 loopback", "GET", q("client_id", "https://[::1]/client.json"), nil, "", 400, unfetched},
		{"a metadata document on localhost", "GET", q("client_id", "https://localhost/client.json"), nil, "", 400, unfetched},
		{"a metadata document over http", "GET", q("client_id", "http://client.example/client.json"), nil, "", 400, page("not registered")},
		{"a status of no request", "GET", "/authorize/status/req_" + randomString(), nil, "", 404, nil},
	}
	r.battery(t, cases)
}

func pkceOf() (string, string) {
	verifier := randomString()
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// TestHostileTabSockets: sockets that never prove themselves, prove
// themselves wrongly, or break the protocol once proven end with the code
// that says why, and leave nothing behind.
func TestHostileTabSockets(t *testing.T) {
	r := startRelay(t, nil)
	ws := "ws" + strings.TrimPrefix(r.url, "http") + "/tab"
	dial := func(t *testing.T, originHeader string) (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		return websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {originHeader}},
			HTTPClient: hostileClient})
	}
	secret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	hello := func(s string) []byte {
		return fmt.Appendf(nil, `{"type":"hello","protocol":%d,"secret":%q,"tabId":"hostile"}`, protocol.Version, s)
	}
	text := func(s string) step { return step{websocket.MessageText, []byte(s)} }
	cases := []struct {
		name  string
		steps []step
		close protocol.CloseCode
	}{
		// The sockets' timers are the node's real ones: this case waits 10 s.
		{"no hello within 10 s", nil, protocol.CloseNoHello},
		{"a hello of another protocol", []step{text(`{"type":"hello","protocol":99,"secret":"x","tabId":"t"}`)}, protocol.CloseUnsupportedProtocol},
		{"a malformed secret", []step{{websocket.MessageText, hello("not-a-secret")}}, protocol.CloseBadSecret},
		{"something else first", []step{text(`{"type":"focus","at":1}`)}, protocol.CloseBadMessage},
		{"a binary hello", []step{{websocket.MessageBinary, hello(secret())}}, protocol.CloseBadMessage},
		{"a hello over 4 KiB", []step{text(`{"type":"hello","pad":"` + strings.Repeat("a", 5<<10) + `"}`)}, protocol.CloseTooBig},
		{"a binary frame once proven", []step{{websocket.MessageText, hello(secret())}, {websocket.MessageBinary, []byte(`{"type":"pong"}`)}}, protocol.CloseBadMessage},
		{"not JSON once proven", []step{{websocket.MessageText, hello(secret())}, text(`{"type":`)}, protocol.CloseBadMessage},
		{"a second hello", []step{{websocket.MessageText, hello(secret())}, {websocket.MessageText, hello(secret())}}, protocol.CloseBadMessage},
		{"a frame over 16 MiB", []step{{websocket.MessageText, hello(secret())}, text(`{"type":"pong","pad":"` + strings.Repeat("a", protocol.MaxMessageBytes) + `"}`)}, protocol.CloseTooBig},
		{"a flood", append([]step{{websocket.MessageText, hello(secret())}}, flood(500)...), protocol.CloseTooFast},
	}
	base := measureUse()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, _, err := dial(t, origin)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			conn.SetReadLimit(protocol.MaxMessageBytes + 1<<20)
			for _, s := range c.steps {
				ctx, cancel := context.WithTimeout(context.Background(), patience)
				_ = conn.Write(ctx, s.typ, s.data) // a write after the close fails: the read says why
				cancel()
			}
			code := readClose(conn)
			if code != websocket.StatusCode(c.close) {
				t.Fatalf("closed with %d, want %d (%s)", code, c.close, c.close.Reason())
			}
			r.stillServing(t)
		})
	}
	t.Run("an Origin not allowed", func(t *testing.T) {
		_, resp, err := dial(t, "https://evil.example")
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("dial from another origin: %v %v", resp, err)
		}
	})
	t.Run("results and answers for call ids never sent", func(t *testing.T) {
		conn, _, err := dial(t, origin)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		for _, m := range [][]byte{hello(secret()),
			[]byte(`{"type":"result","id":"call_never_sent","result":{"data":{"x":1}}}`),
			[]byte(`{"type":"asking","id":"call_never_sent"}`), []byte(`{"type":"answered","id":"call_never_sent"}`),
			[]byte(`{"type":"progress","id":"call_never_sent","progress":1}`),
			[]byte(`{"type":"log","id":"call_never_sent","level":"info","data":"x"}`),
			[]byte(`{"type":"x-probe","ref":"p"}`)} {
			if err := conn.Write(ctx, websocket.MessageText, m); err != nil {
				t.Fatal(err)
			}
		}
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("the socket ended: %v", err)
			}
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			if m["ref"] == "p" && m["code"] == protocol.ErrCodeUnsupported {
				break // answered in order: everything before it was taken and dropped
			}
		}
		conn.Close(websocket.StatusNormalClosure, "")
	})
	backTo(t, base)
}

// step is one frame a hostile tab sends.
type step struct {
	typ  websocket.MessageType
	data []byte
}

// flood is n pongs, sent as fast as the socket takes them.
func flood(n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{websocket.MessageText, []byte(`{"type":"pong"}`)}
	}
	return out
}

// readClose reads until the socket ends and returns its close code (-1:
// it ended without a close frame, or not within the hello deadline and
// patience).
func readClose(c *websocket.Conn) websocket.StatusCode {
	ctx, cancel := context.WithTimeout(context.Background(), tabsocket.DefaultHelloTimeout+patience)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

// TestSlowHTTPClientsAreCutOff: a client that sends half a request line
// and stops is disconnected by the server's read-header timeout. The
// timeouts are the node's own (real time); the test waits for them.
func TestSlowHTTPClientsAreCutOff(t *testing.T) {
	t.Parallel() // it waits out the server's timer: see browser_test.go
	r := startRelay(t, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\n", strings.TrimPrefix(r.url, "http://"))
	c.SetReadDeadline(time.Now().Add(patience + 10*time.Second))
	_, err = bufio.NewReader(c).ReadByte()
	if err == nil {
		t.Fatal("the server answered half a request")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server held a connection that never finished its headers")
	}
	r.stillServing(t)
}

// TestHostileConnectCodeGuessing: a tab that guesses connect codes gets
// ten wrong answers, then "limited" even for the right code; another
// browser from the same address is limited at once (the limit is per
// address, in the store: on a cluster, for every node together, as
// TestInProcessWrongCodesCountOnEveryNode shows).
func TestHostileConnectCodeGuessing(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	h.register()
	f := h.authorize()
	other, _ := pairedBrowser(t, r)
	base := measureUse()
	for i := range 10 {
		if out, err := b.ask(r.url, "approve", wrongCode()); err == nil || !strings.Contains(out, "wrong-code") {
			t.Fatalf("guess %d: %v %s", i+1, err, out)
		}
	}
	if out, err := b.ask(r.url, "approve", f.code); err == nil || !strings.Contains(out, "limited") {
		t.Fatalf("the right code after ten guesses: %v %s", err, out)
	}
	if out, err := other.ask(r.url, "connect-info", f.code); err == nil || !strings.Contains(out, "limited") {
		t.Fatalf("another browser of the same address: %v %s", err, out)
	}
	if st := h.status(f); st["state"] != "pending" {
		t.Fatalf("the request after the guesses: %v", st)
	}
	r.stillServing(t)
	backTo(t, base)
}
