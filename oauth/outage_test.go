package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/oauth"
	redisstore "github.com/tabrelay/tabrelay/store/redis"
)

// unavailable checks the shape of a 503 from the OAuth routes: Retry-After,
// and an RFC 6749 error with a sentence (or, for a page, the sentence).
func unavailable(t *testing.T, what string, resp *http.Response, body []byte) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s while the store is away: %d, Retry-After %q: %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		return
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if !strings.Contains(string(body), "in a few seconds.") {
			t.Errorf("%s while the store is away: a page without the sentence: %s", what, body)
		}
		return
	}
	var e struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if !isJSON(resp.Header) || json.Unmarshal(body, &e) != nil || e.Error != "temporarily_unavailable" || !strings.HasSuffix(e.ErrorDescription, ".") {
		t.Errorf("%s while the store is away: not an OAuth error with a sentence: %s", what, body)
	}
}

// TestRedisStoppedEveryOAuth503IsDocumented (issue 17, item 6): the first
// requests after Redis stopped, before any node noticed, are answered 503
// with Retry-After and an OAuth error (the person's pages: a page), not
// a bare 503, a 404 that ends the waiting page, or "not registered"; and
// once Redis is back, the tokens and the code issued before still work.
func TestRedisStoppedEveryOAuth503IsDocumented(t *testing.T) {
	srv := redistest.StartPersistent(t)
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, DialerRetries: 1}) // as tabrelay serve sets it
	t.Cleanup(func() { client.Close() })
	h := newHarness(t, func(c *oauth.Config) {
		c.Store = redisstore.New(client, "t:")
		c.Clock = clock.NewFake(time.Now()) // Redis expires keys by the real clock
	})
	clientID := h.register("Outage", testCB)
	tok := h.connect(clientID)
	approved := h.startConnect(clientID, testCB)
	code := h.authCode(approved)
	pending := h.startConnect(clientID, testCB)

	srv.Stop()
	resp, body := h.postForm("/token", refreshForm(clientID, tok.RefreshToken, h.srv.URL))
	unavailable(t, "a refresh", resp, body)
	resp, body = h.postForm("/token", approved.exchangeForm(code, h.srv.URL))
	unavailable(t, "a code exchange", resp, body)
	reg, _ := json.Marshal(map[string]any{"client_name": "Later", "redirect_uris": []string{testCB}})
	resp, body = h.post("/register", "application/json", reg)
	unavailable(t, "a registration", resp, body)
	_, challenge := pkce()
	resp, body = h.get(h.browser(), authorizeURL(h.srv.URL, clientID, testCB, challenge, randomState()))
	unavailable(t, "an authorization request", resp, body)
	resp, body = h.get(pending.browser, pending.statusURL)
	unavailable(t, "the waiting page's status", resp, body)

	srv.Restart()
	for deadline := time.Now().Add(10 * time.Second); client.Ping(context.Background()).Err() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store's client did not reach Redis again")
		}
	}
	h.tokenOK(refreshForm(clientID, tok.RefreshToken, h.srv.URL))
	h.tokenOK(approved.exchangeForm(code, h.srv.URL))
	if st, out := h.status(pending.browser, pending); st != http.StatusOK || out["state"] != oauth.RequestPending {
		t.Errorf("the waiting page's status after the outage: %d %v", st, out)
	}
}

// connectionsDown is a store whose connection updates fail while down.
type connectionsDown struct {
	oauth.Store
	down atomic.Bool
}

func (s *connectionsDown) UpdateConnection(ctx context.Context, id string, fn func(*oauth.Connection) error) (oauth.Connection, error) {
	if s.down.Load() {
		return oauth.Connection{}, errors.New("connection refused")
	}
	return s.Store.UpdateConnection(ctx, id, fn)
}

// TestARefreshCutByTheStoreKeepsTheToken: a refresh whose family rotated
// but whose connection could not be updated is a 503, not invalid_grant
// (which makes a host drop its tokens); the same refresh token works once
// the store answers (the rotation's grace).
func TestARefreshCutByTheStoreKeepsTheToken(t *testing.T) {
	var st *connectionsDown
	h := newHarness(t, func(c *oauth.Config) { st = &connectionsDown{Store: c.Store}; c.Store = st })
	clientID := h.register("Cut", testCB)
	tok := h.connect(clientID)
	st.down.Store(true)
	resp, body := h.postForm("/token", refreshForm(clientID, tok.RefreshToken, h.srv.URL))
	unavailable(t, "a refresh cut by the store", resp, body)
	st.down.Store(false)
	if next := h.tokenOK(refreshForm(clientID, tok.RefreshToken, h.srv.URL)); next.RefreshToken == tok.RefreshToken {
		t.Fatal("the refresh after the store came back returned the same refresh token")
	}
}
