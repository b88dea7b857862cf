package tests

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
)

const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	typeAccessToken    = "urn:ietf:params:oauth:token-type:access_token"
)

// tokenExchange asks /token for a sub-agent's token from subject (RFC
// 8693), narrowed to scope when it is not "".
func (h *host) tokenExchange(subject, scope string, more ...string) (int, map[string]any) {
	h.t.Helper()
	form := url.Values{"grant_type": {grantTokenExchange}, "subject_token": {subject},
		"subject_token_type": {typeAccessToken}, "resource": {h.relay}}
	if scope != "" {
		form.Set("scope", scope)
	}
	for i := 0; i+1 < len(more); i += 2 {
		form.Set(more[i], more[i+1])
	}
	status, out, hdr := h.token(form)
	if hdr.Get("Cache-Control") != "no-store" {
		h.t.Fatalf("token exchange answer Cache-Control %q", hdr.Get("Cache-Control"))
	}
	return status, out
}

// child exchanges subject for a sub-agent's token and returns a client of
// it in the parent's era, checking the RFC 8693 answer.
func (h *host) child(parent *mcpClient, scope, wantScope string) *mcpClient {
	h.t.Helper()
	status, out := h.tokenExchange(parent.token, scope)
	if status != http.StatusOK || out["issued_token_type"] != typeAccessToken || out["token_type"] != "Bearer" ||
		out["refresh_token"] != nil || out["scope"] != wantScope {
		h.t.Fatalf("exchange (scope %q): %d %v, want scope %q", scope, status, out, wantScope)
	}
	if in, _ := out["expires_in"].(float64); in <= 0 || in > 3600 {
		h.t.Fatalf("expires_in %v", out["expires_in"])
	}
	return &mcpClient{t: parent.t, url: parent.url, token: out["access_token"].(string), modern: parent.modern}
}

func counterCall(c *mcpClient, action string) rpcReply {
	c.t.Helper()
	return c.send("tools/call", map[string]any{"name": "counter", "arguments": map[string]any{"action": action}}, false, nil)
}

func allowed(t *testing.T, rep rpcReply, what string) {
	t.Helper()
	if rep.status != http.StatusOK || rep.result == nil || rep.result["isError"] == true {
		t.Fatalf("%s was not allowed: %d %v %v", what, rep.status, rep.result, rep.err)
	}
}

func unauthorized(t *testing.T, c *mcpClient, who string) {
	t.Helper()
	if rep := c.send("tools/list", nil, false, nil); rep.status != http.StatusUnauthorized {
		t.Fatalf("%s's token still opens the relay: %d %v", who, rep.status, rep.result)
	}
}

// TestTokenExchangeChildNeverExceedsItsParentAndDiesWithIt: sub-agents'
// tokens, with and without a narrower scope, through real MCP requests of
// both eras; the parent narrowed, then forgotten, ends them at once.
func TestTokenExchangeChildNeverExceedsItsParentAndDiesWithIt(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	var secrets []any
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "handshake era", true: "stateless era"}[modern], func(t *testing.T) {
			h, parent, parentConn := scopedHost(t, r, b, modern, "counter:get,increment", "whoami")

			// No scope asked: exactly the parent's.
			whole := h.child(parent, "", "counter:get,increment whoami")
			if got, want := toolNames(t, whole), toolNames(t, parent); !slices.Equal(got, want) || !slices.Equal(got, []string{"counter", "whoami"}) {
				t.Fatalf("the unscoped child lists %v, its parent %v", got, want)
			}
			rep := counterCall(whole, "get")
			allowed(t, rep, "counter get as the unscoped child")
			if text := rep.result["content"].([]any)[0].(map[string]any)["text"].(string); !strings.Contains(text, `"counter"`) {
				t.Fatalf("counter get: %q", text)
			}

			// A narrower scope, partly outside the parent's: the intersection.
			narrow := h.child(parent, "counter:get notes", "counter:get")
			if got := toolNames(t, narrow); !slices.Equal(got, []string{"counter"}) {
				t.Fatalf("the narrowed child lists %v", got)
			}
			allowed(t, counterCall(narrow, "get"), "counter get as the narrowed child")
			refused(t, counterCall(narrow, "increment"), "counter")
			refused(t, narrow.send("tools/call", map[string]any{"name": "notes", "arguments": map[string]any{"action": "list"}}, false, nil), "notes")
			refused(t, narrow.send("tools/call", map[string]any{"name": "whoami"}, true, nil), "whoami")
			allowed(t, counterCall(parent, "increment"), "counter increment as the parent")

			// Asking only for more than the parent has: nothing.
			none := h.child(parent, "notes", "")
			if got := toolNames(t, none); len(got) != 0 {
				t.Fatalf("the child asking beyond its parent lists %v", got)
			}
			refused(t, counterCall(none, "get"), "counter")
			refused(t, none.send("tools/call", map[string]any{"name": "whoami"}, false, nil), "whoami")
			refused(t, none.send("tools/call", map[string]any{"name": "notes", "arguments": map[string]any{"action": "list"}}, false, nil), "notes")

			// A grandchild, from the unscoped child's token.
			grand := h.child(whole, "counter", "counter:get,increment")
			allowed(t, counterCall(grand, "increment"), "counter increment as the grandchild")

			// The person narrows the parent in their tab: every child follows
			// on its next call.
			if out, err := b.ask(r.url, "set-scope", "--scope", "whoami", parentConn); err != nil {
				t.Fatalf("set-scope: %v %s", err, out)
			}
			refused(t, counterCall(whole, "get"), "counter")
			refused(t, counterCall(narrow, "get"), "counter")
			refused(t, counterCall(grand, "get"), "counter")
			allowed(t, whole.send("tools/call", map[string]any{"name": "whoami"}, false, nil), "whoami as the unscoped child")
			if got := toolNames(t, whole); !slices.Equal(got, []string{"whoami"}) {
				t.Fatalf("the unscoped child after the narrowing lists %v", got)
			}
			if got := toolNames(t, narrow); len(got) != 0 {
				t.Fatalf("the narrowed child after the narrowing lists %v", got)
			}
			if _, out := h.tokenExchange(parent.token, "counter:get"); out["scope"] != "" {
				t.Fatalf("a child minted after the narrowing: %v", out)
			}

			// The person forgets the parent: every token derived from it
			// stops at once, and none can be exchanged again.
			if out, err := b.ask(r.url, "forget", parentConn); err != nil {
				t.Fatalf("forget: %v %s", err, out)
			}
			for who, c := range map[string]*mcpClient{"parent": parent, "unscoped child": whole, "narrowed child": narrow, "grandchild": grand} {
				unauthorized(t, c, who)
				secrets = append(secrets, c.token)
			}
			if status, out := h.tokenExchange(whole.token, ""); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
				t.Fatalf("exchanging a dead child's token: %d %v", status, out)
			}
		})
	}
	r.assertNoSecretsLogged(secrets...)
}

// TestTokenExchangeRefusals: what the grant refuses, in RFC 6749 words.
func TestTokenExchangeRefusals(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h, parent, _ := scopedHost(t, r, b, false, "counter:get,increment", "whoami")
	other := newHost(t, r.url)
	other.register()
	cases := []struct {
		name    string
		h       *host
		subject string
		scope   string
		more    []string
		status  int
		code    string
	}{
		{"unknown tool", h, parent.token, "counter:get no_such_tool", nil, 400, "invalid_scope"},
		{"unknown action", h, parent.token, "counter:explode", nil, 400, "invalid_scope"},
		{"a tool twice", h, parent.token, "counter:get counter:increment", nil, 400, "invalid_scope"},
		{"an empty action", h, parent.token, "counter:get,", nil, 400, "invalid_scope"},
		{"no tool", h, parent.token, ":get", nil, 400, "invalid_scope"},
		{"wrong subject token", h, "tra_not-a-token", "", nil, 400, "invalid_grant"},
		{"a refresh token as subject", h, "trr_not-an-access-token", "", nil, 400, "invalid_grant"},
		{"another client's subject token", other, parent.token, "", nil, 400, "invalid_grant"},
		{"no subject token", h, "", "", nil, 400, "invalid_request"},
		{"subject token type", h, parent.token, "", []string{"subject_token_type", "urn:ietf:params:oauth:token-type:refresh_token"}, 400, "invalid_request"},
		{"requested token type", h, parent.token, "", []string{"requested_token_type", "urn:ietf:params:oauth:token-type:refresh_token"}, 400, "invalid_request"},
		{"actor token", h, parent.token, "", []string{"actor_token", parent.token, "actor_token_type", typeAccessToken}, 400, "invalid_request"},
		{"another resource", h, parent.token, "", []string{"resource", "https://other.test"}, 400, "invalid_target"},
		{"another audience", h, parent.token, "", []string{"audience", "https://other.test"}, 400, "invalid_target"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tc.h.tokenExchange(tc.subject, tc.scope, tc.more...)
			if status != tc.status || out["error"] != tc.code || out["access_token"] != nil {
				t.Fatalf("%d %v, want %d %s", status, out, tc.status, tc.code)
			}
			if d, _ := out["error_description"].(string); strings.ContainsAny(d, "\"\\") {
				t.Fatalf("error_description %q has characters RFC 6749 §5.2 excludes", d)
			}
		})
	}
	// The refusals made nothing: the parent is still the browser's only
	// connection, and still works.
	if out, _ := b.ask(r.url, "connections"); strings.Count(out, `"id"`) != 1 {
		t.Fatalf("refused exchanges left connections:\n%s", out)
	}
	allowed(t, counterCall(parent, "get"), "the parent after the refusals")

	resp, err := http.Get(r.url + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	decode(t, resp, http.StatusOK, &meta)
	if !slices.Contains(meta["grant_types_supported"].([]any), any(grantTokenExchange)) {
		t.Fatalf("grant_types_supported %v", meta["grant_types_supported"])
	}
}

// TestTokenExchangeDepthIsBounded: a child's token can be exchanged again,
// four derivations deep, not five.
func TestTokenExchangeDepthIsBounded(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h, c, _ := scopedHost(t, r, b, true, "counter:get")
	for depth := 1; depth <= 4; depth++ {
		c = h.child(c, "", "counter:get")
		allowed(t, counterCall(c, "get"), "counter get at depth "+strconv.Itoa(depth))
	}
	if status, out := h.tokenExchange(c.token, ""); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("a fifth derivation: %d %v", status, out)
	}
}

// TestTokenExchangeFollowsTheParentsTokens: a child's token lives no
// longer than the token it came from, and a revoked parent family (refresh
// reuse) ends it.
func TestTokenExchangeFollowsTheParentsTokens(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h, "counter:get")
	parent := &mcpClient{t: t, url: r.url + "/", token: tokens["access_token"].(string)}

	r.clock.Advance(50 * time.Minute)
	status, out := h.tokenExchange(parent.token, "")
	if in, _ := out["expires_in"].(float64); status != http.StatusOK || in > 600 || in < 590 {
		t.Fatalf("a child of a token with 10 minutes left: %d %v", status, out)
	}
	late := &mcpClient{t: t, url: parent.url, token: out["access_token"].(string)}
	allowed(t, counterCall(late, "get"), "counter get as the late child")
	r.clock.Advance(10*time.Minute + time.Second)
	unauthorized(t, late, "a child past its parent token's expiry")

	// A fresh parent token, a child of it, then refresh reuse: the family
	// is revoked, and the child with it.
	old := tokens["refresh_token"].(string)
	status, next := h.refresh(old)
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, next)
	}
	parent.token = next["access_token"].(string)
	kid := h.child(parent, "", "counter:get")
	allowed(t, counterCall(kid, "get"), "counter get as the child")
	r.clock.Advance(61 * time.Second)
	if status, _ := h.refresh(old); status != http.StatusBadRequest {
		t.Fatalf("refresh reuse: %d", status)
	}
	unauthorized(t, parent, "the parent of a revoked family")
	unauthorized(t, kid, "the child of a revoked family")
}

// TestDerivedConnectionsPerParentAreBounded (issue 15 item 13): one access
// token minted a derived connection on every exchange; now a connection
// has at most oauth.MaxDerivedPerConnection live ones, and the exchange
// over it is refused with an OAuth error that says why.
func TestDerivedConnectionsPerParentAreBounded(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h, parent, _ := scopedHost(t, r, b, false, "whoami")
	for i := range oauth.MaxDerivedPerConnection {
		if status, out := h.tokenExchange(parent.token, ""); status != http.StatusOK {
			t.Fatalf("exchange %d: %d %v", i+1, status, out)
		}
	}
	status, out := h.tokenExchange(parent.token, "")
	desc, _ := out["error_description"].(string)
	if status != http.StatusBadRequest || out["error"] != "invalid_request" || !strings.Contains(desc, "16 live derived connections") {
		t.Fatalf("exchange over the cap: %d %v", status, out)
	}
	if out["access_token"] != nil {
		t.Fatal("a token came with the refusal")
	}
}
