package tests

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
)

// pairedBrowser is a browser with one focused tab (tabArgs added to its
// command line) connected to r.
func pairedBrowser(t testing.TB, r *relay, tabArgs ...string) (*browser, string) {
	t.Helper()
	b := newBrowser(t)
	b.startTab(r.url, "a", append([]string{"--focus"}, tabArgs...)...)
	b.waitSecret()
	pairing := b.pairing(r.key)
	r.waitTabs(pairing, 1)
	return b, pairing
}

// connect runs the whole flow: register, authorize, approve in the tab,
// follow the waiting page, exchange the code. It returns the token answer.
func connect(t testing.TB, r *relay, b *browser, h *host, scope ...string) (*flow, map[string]any) {
	t.Helper()
	if h.clientID == "" {
		h.register()
	}
	f := h.authorize()
	if st := h.status(f); st["state"] != "pending" {
		t.Fatalf("status before approval: %v", st)
	}
	args := []string{"approve", f.code} // the README's order: flags after the code work too
	for _, s := range scope {
		args = append(args, "--scope", s)
	}
	if out, err := b.ask(r.url, args...); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	st := h.status(f)
	if st["state"] != "approved" {
		t.Fatalf("status after approval: %v", st)
	}
	status, tokens := h.exchange(f, h.codeFrom(f, st["redirect"]))
	if status != http.StatusOK || tokens["token_type"] != "Bearer" || tokens["expires_in"] != 3600.0 {
		t.Fatalf("token: %d %v", status, tokens)
	}
	return f, tokens
}

func TestConnectRefreshAndRefreshAgain(t *testing.T) {
	r := startRelay(t, nil)
	b, pairing := pairedBrowser(t, r)
	h := newHost(t, r.url)
	f, tokens := connect(t, r, b, h, "counter:get,increment", "whoami")
	if !strings.Contains(f.page, "E2E Host") || !strings.Contains(f.page, "127.0.0.1:33418") {
		t.Fatal("the waiting page does not show the client's name and redirect host")
	}
	grant, err := r.node.OAuth().Verify(context.Background(), tokens["access_token"].(string))
	if err != nil || grant.PairingID != pairing || grant.ClientName != "E2E Host" {
		t.Fatalf("verify: %+v %v", grant, err)
	}
	status, second := h.refresh(tokens["refresh_token"].(string))
	if status != http.StatusOK || second["refresh_token"] == tokens["refresh_token"] {
		t.Fatalf("refresh: %d %v", status, second)
	}
	status, third := h.refresh(second["refresh_token"].(string))
	if status != http.StatusOK {
		t.Fatalf("refresh again: %d %v", status, third)
	}
	if _, err := r.node.OAuth().Verify(context.Background(), third["access_token"].(string)); err != nil {
		t.Fatalf("the newest access token: %v", err)
	}
	out, err := b.ask(r.url, "connections")
	if err != nil || !strings.Contains(out, `"E2E Host"`) || !strings.Contains(out, `"increment"`) {
		t.Fatalf("connections: %v\n%s", err, out)
	}
	secret, _ := os.ReadFile(b.secretFile)
	r.assertNoSecretsLogged(tokens, second, third, f, strings.TrimSpace(string(secret)))
}

func TestDeclinedAndExpiredCodesDenyAccess(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	h.register()

	f := h.authorize()
	if out, err := b.ask(r.url, "decline", f.code); err != nil {
		t.Fatalf("decline: %v\n%s", err, out)
	}
	st := h.status(f)
	if st["state"] != "declined" || !strings.Contains(st["redirect"], "error=access_denied") || !strings.Contains(st["redirect"], "iss=") {
		t.Fatalf("declined status %v", st)
	}
	if out, err := b.ask(r.url, "approve", f.code); err == nil || !strings.Contains(out, "code-used") {
		t.Fatalf("a declined code was approved: %v %s", err, out)
	}

	f = h.authorize()
	r.clock.Advance(10*time.Minute + time.Second)
	st = h.status(f)
	if st["state"] != "expired" || !strings.Contains(st["redirect"], "error=access_denied") {
		t.Fatalf("expired status %v", st)
	}
	if out, err := b.ask(r.url, "approve", f.code); err == nil || !strings.Contains(out, "code-expired") {
		t.Fatalf("an expired code was approved: %v %s", err, out)
	}
}

func TestWrongCodesAreLimited(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	h.register()
	f := h.authorize()
	for i := 0; i < 10; i++ {
		if out, err := b.ask(r.url, "approve", "ZZZZ-ZZZZ"); err == nil || !strings.Contains(out, "wrong-code") {
			t.Fatalf("wrong code %d: %v %s", i, err, out)
		}
	}
	// The right code now waits too: the pairing is limited.
	if out, err := b.ask(r.url, "approve", f.code); err == nil || !strings.Contains(out, "limited") {
		t.Fatalf("after 10 wrong codes: %v %s", err, out)
	}
	r.clock.Advance(2 * time.Minute)
	if out, err := b.ask(r.url, "approve", strings.ToLower(f.code)); err != nil {
		t.Fatalf("once the limit refilled, the right code (typed in lower case): %v %s", err, out)
	}
}

// approvedCode registers a host, has the person approve its request and
// returns the authorization code the waiting page hands on.
func approvedCode(t *testing.T, r *relay) (*host, *flow, string) {
	t.Helper()
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	h.register()
	f := h.authorize()
	if out, err := b.ask(r.url, "approve", f.code); err != nil {
		t.Fatalf("approve: %v %s", err, out)
	}
	return h, f, h.codeFrom(f, h.status(f)["redirect"])
}

func TestCodeReuseRevokesWhatTheCodeIssued(t *testing.T) {
	r := startRelay(t, nil)
	h, f, code := approvedCode(t, r)
	status, tokens := h.exchange(f, code)
	if status != http.StatusOK {
		t.Fatalf("first use: %d %v", status, tokens)
	}
	status, again := h.exchange(f, code)
	if status != http.StatusBadRequest || again["error"] != "invalid_grant" {
		t.Fatalf("second use: %d %v", status, again)
	}
	if _, err := r.node.OAuth().Verify(context.Background(), tokens["access_token"].(string)); err == nil {
		t.Fatal("the first use's access token still works")
	}
	if status, _ := h.refresh(tokens["refresh_token"].(string)); status != http.StatusBadRequest {
		t.Fatalf("the first use's refresh token: %d", status)
	}
}

func TestRefreshReuse(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h)
	old := tokens["refresh_token"].(string)
	_, next := h.refresh(old)

	// Within the grace the old token still refreshes: the client lost the
	// answer. Its never-seen successor dies.
	status, retry := h.refresh(old)
	if status != http.StatusOK {
		t.Fatalf("retry within the grace: %d %v", status, retry)
	}
	r.clock.Advance(61 * time.Second)
	status, reuse := h.refresh(old)
	if status != http.StatusBadRequest || reuse["error"] != "invalid_grant" {
		t.Fatalf("reuse after the grace: %d %v", status, reuse)
	}
	for _, tok := range []map[string]any{next, retry} {
		if status, _ := h.refresh(tok["refresh_token"].(string)); status != http.StatusBadRequest {
			t.Fatal("a member of the revoked family still refreshes")
		}
		if _, err := r.node.OAuth().Verify(context.Background(), tok["access_token"].(string)); err == nil {
			t.Fatal("an access token of the revoked family still works")
		}
	}
}

// TestConcurrentRefreshesLeaveOneLiveMember: presentations of one refresh
// token that race each other are the rotation and its grace retries
// (SPEC §5), and leave exactly one live member; one more than the grace
// allows is reuse, and revokes the family even in a race.
func TestConcurrentRefreshesLeaveOneLiveMember(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	race := func(old string, racers int) []string {
		var mu sync.Mutex
		var got []string
		var wg sync.WaitGroup
		for range racers {
			wg.Go(func() {
				if status, out := h.refresh(old); status == http.StatusOK {
					mu.Lock()
					got = append(got, out["refresh_token"].(string))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return got
	}
	// Trying a member is reuse when it is dead (it would revoke the
	// family), so ask the store instead.
	live := func(got []string) int {
		n := 0
		for _, tok := range got {
			if r.node.OAuth().RefreshIsCurrent(context.Background(), tok) {
				n++
			}
		}
		return n
	}

	_, tokens := connect(t, r, b, h)
	got := race(tokens["refresh_token"].(string), 1+oauth.RefreshRetries)
	if len(got) != 1+oauth.RefreshRetries || live(got) != 1 {
		t.Fatalf("%d racing refreshes: %d succeeded, %d live; want all and exactly 1", 1+oauth.RefreshRetries, len(got), live(got))
	}

	_, tokens = connect(t, r, b, h)
	got = race(tokens["refresh_token"].(string), 100)
	if len(got) == 0 || len(got) > 1+oauth.RefreshRetries {
		t.Fatalf("%d of 100 racing refreshes succeeded; want 1 to %d", len(got), 1+oauth.RefreshRetries)
	}
	if n := live(got); n != 0 {
		t.Fatalf("100 racing refreshes left %d live members; want the family revoked", n)
	}
	if _, err := r.node.OAuth().Verify(context.Background(), tokens["access_token"].(string)); err == nil {
		t.Fatal("the access token of a family revoked for reuse still works")
	}
}

func TestForgetStopsTheTokenAtOnce(t *testing.T) {
	r := startRelay(t, nil)
	b, _ := pairedBrowser(t, r)
	h := newHost(t, r.url)
	_, tokens := connect(t, r, b, h)
	out, _ := b.ask(r.url, "connections")
	var list struct {
		Connections []struct{ ID string } `json:"connections"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Connections) != 1 {
		t.Fatalf("connections %s: %v", out, err)
	}
	if out, err := b.ask(r.url, "forget", list.Connections[0].ID); err != nil {
		t.Fatalf("forget: %v %s", err, out)
	}
	if _, err := r.node.OAuth().Verify(context.Background(), tokens["access_token"].(string)); err == nil {
		t.Fatal("the access token works after Forget")
	}
	if status, _ := h.refresh(tokens["refresh_token"].(string)); status != http.StatusBadRequest {
		t.Fatal("the refresh token works after Forget")
	}
	if out, _ := b.ask(r.url, "connections"); strings.Contains(out, list.Connections[0].ID) {
		t.Fatal("a forgotten connection is still listed")
	}
}

func TestAuthorizeRefusesWhatItCannotTrust(t *testing.T) {
	r := startRelay(t, nil)
	h := newHost(t, r.url)
	h.register()
	get := func(q url.Values) *http.Response {
		resp, err := h.http.Get(r.url + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	base := func() url.Values {
		return url.Values{"response_type": {"code"}, "client_id": {h.clientID}, "redirect_uri": {h.redirectURI},
			"code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"}, "state": {"s1"}}
	}
	page := func(mod func(url.Values)) {
		q := base()
		mod(q)
		if resp := get(q); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Fatalf("%v: %d %q, want an error page", q, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	page(func(q url.Values) { q.Set("client_id", "client_unknown") })
	page(func(q url.Values) { q.Set("redirect_uri", "https://evil.test/callback") })
	// A bad request of a known client gets a page linking back to the
	// client with the error (never a redirect: anyone can register a
	// client, and the relay must not redirect to wherever it points).
	redirect := func(mod func(url.Values), want string) {
		q := base()
		mod(q)
		resp, err := h.http.Get(r.url + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		link := html.UnescapeString(backLink.FindString(string(body)))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.HasPrefix(link, `href="`+h.redirectURI+"?") ||
			!strings.Contains(link, "error="+want) || !strings.Contains(link, "state=s1") || !strings.Contains(link, "iss=") {
			t.Fatalf("%v: %d %q %q, want a page linking back with error %s", q, resp.StatusCode, resp.Header.Get("Location"), link, want)
		}
	}
	redirect(func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request")
	redirect(func(q url.Values) { q.Del("code_challenge") }, "invalid_request")
	redirect(func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type")
	redirect(func(q url.Values) { q.Set("resource", "https://other.test") }, "invalid_target")
	// Loopback redirect URIs match on any port.
	q := base()
	q.Set("redirect_uri", "http://127.0.0.1:50505/callback")
	if resp := get(q); resp.StatusCode != http.StatusOK {
		t.Fatalf("loopback on another port: %d", resp.StatusCode)
	}
}

var backLink = regexp.MustCompile(`href="[^"]*"`)

// assertNoSecretsLogged fails when a token, code or secret of the run
// appears in the relay's log.
func (r *relay) assertNoSecretsLogged(answers ...any) {
	r.t.Helper()
	logs := r.logs.String()
	var secrets []string
	for _, a := range answers {
		switch v := a.(type) {
		case map[string]any:
			for _, k := range []string{"access_token", "refresh_token"} {
				if s, ok := v[k].(string); ok {
					secrets = append(secrets, s)
				}
			}
		case *flow:
			secrets = append(secrets, v.code, v.verifier, strings.ReplaceAll(v.code, "-", ""))
		case string:
			secrets = append(secrets, v)
		}
	}
	// Line by line, naming the line: the failure shows no more of a
	// secret than its first six characters.
	for i, line := range strings.Split(logs, "\n") {
		for _, s := range secrets {
			if s != "" && strings.Contains(line, s) {
				r.t.Errorf("log line %d holds a secret (%.6s…): %.300s", i+1, s, line)
			}
		}
	}
	if len(logs) == 0 {
		r.t.Fatal("no log captured: the check would prove nothing")
	}
}

// TestConcurrentUsesOfACodeRevokeWhatItIssued races ten exchanges of one
// code: one wins, and because the code was used again, what it issued is
// revoked whichever order the store saw them in.
func TestConcurrentUsesOfACodeRevokeWhatItIssued(t *testing.T) {
	r := startRelay(t, nil)
	h, f, code := approvedCode(t, r)
	var mu sync.Mutex
	var won []map[string]any
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if status, out := h.exchange(f, code); status == http.StatusOK {
				mu.Lock()
				won = append(won, out)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d exchanges of one code succeeded", len(won))
	}
	if _, err := r.node.OAuth().Verify(context.Background(), won[0]["access_token"].(string)); err == nil {
		t.Fatal("the code was used ten times, yet what it issued still works")
	}
}
