package oauth_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tabrelay/tabrelay/oauth"
)

var backLink = regexp.MustCompile(`<a id="back" href="([^"]*)"`)

// uriOfLen is an https redirect URI of exactly n bytes.
func uriOfLen(n int) string {
	const base = "https://client.example/cb?p="
	return base + strings.Repeat("a", n-len(base))
}

// recordingStore remembers the connect requests stored through it.
type recordingStore struct {
	oauth.Store
	mu   sync.Mutex
	reqs []oauth.ConnectRequest
}

func (s *recordingStore) PutConnectRequest(ctx context.Context, r oauth.ConnectRequest) error {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
	return s.Store.PutConnectRequest(ctx, r)
}

func (s *recordingStore) stored() []oauth.ConnectRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]oauth.ConnectRequest(nil), s.reqs...)
}

// TestAuthorizeBoundsWhatItStores: what an authorization request brings
// into the connect request it stores is bounded (the README's limits):
// state at 2 KiB and redirect_uri at 2 KiB (a loopback one may change
// its port, so a registered one alone does not bound it), client_id at
// 2 KiB, and a scope word's actions each once. Over a limit the request
// is refused as the README says and nothing is stored: a page that links
// back with invalid_request once client and redirect URI are trusted, a
// page without a link before.
func TestAuthorizeBoundsWhatItStores(t *testing.T) {
	rec := &recordingStore{}
	h := newHarness(t, func(c *oauth.Config) { rec.Store = c.Store; c.Store = rec })
	client := h.register("Bounds Client", testCB, "http://127.0.0.1/cb")
	_, challenge := pkce()
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, body := h.get(h.browser(), u)
		return resp, string(body)
	}

	t.Run("at the limits", func(t *testing.T) {
		before := len(rec.stored())
		state := strings.Repeat("s", 2048)
		if resp, body := get(authorizeURL(h.srv.URL, client, testCB, challenge, state)); resp.StatusCode != http.StatusOK {
			t.Fatalf("a state of 2048 bytes: %d %s", resp.StatusCode, body)
		}
		loopback := "http://127.0.0.1:" + strings.Repeat("0", 2048-len("http://127.0.0.1:1/cb")) + "1/cb"
		if resp, body := get(authorizeURL(h.srv.URL, client, loopback, challenge, "x")); resp.StatusCode != http.StatusOK {
			t.Fatalf("a loopback redirect URI of 2048 bytes: %d %s", resp.StatusCode, body)
		}
		if got := rec.stored(); len(got) != before+2 || got[before].State != state {
			t.Fatalf("stored %d requests at the limits, want 2", len(got)-before)
		}
	})

	tooLong := []struct {
		name        string
		url         string
		linksBack   bool   // a page that links back with invalid_request
		description string // in the page
	}{
		{"state of 2049 bytes", authorizeURL(h.srv.URL, client, testCB, challenge, strings.Repeat("s", 2049)), true, "state may have at most 2048 bytes"},
		{"state of 900 KiB", authorizeURL(h.srv.URL, client, testCB, challenge, strings.Repeat("s", 900<<10)), true, "state may have at most 2048 bytes"},
		{"loopback redirect URI of 2049 bytes", authorizeURL(h.srv.URL, client,
			"http://127.0.0.1:"+strings.Repeat("0", 2049-len("http://127.0.0.1:1/cb"))+"1/cb", challenge, "x"), false, "longer than 2048 bytes"},
		{"loopback redirect URI of 900 KiB", authorizeURL(h.srv.URL, client,
			"http://127.0.0.1:"+strings.Repeat("0", 900<<10)+"1/cb", challenge, "x"), false, "longer than 2048 bytes"},
		{"client_id of 2049 bytes", authorizeURL(h.srv.URL, "https://client.example/"+strings.Repeat("c", 2049-len("https://client.example/")),
			testCB, challenge, "x"), false, "longer than 2048 bytes"},
	}
	for _, c := range tooLong {
		t.Run(c.name, func(t *testing.T) {
			before := len(rec.stored())
			resp, body := get(c.url)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, c.description) {
				t.Fatalf("%d, want 400 saying %q; %.300s", resp.StatusCode, c.description, body)
			}
			m := backLink.FindStringSubmatch(body)
			switch {
			case c.linksBack && m == nil:
				t.Fatalf("no link back: %.300s", body)
			case !c.linksBack && m != nil:
				t.Fatalf("a link back to a redirect URI the relay did not accept: %.300s", m[1])
			case c.linksBack:
				back := mustURL(t, html.UnescapeString(m[1]))
				if q := back.Query(); !strings.HasPrefix(back.String(), testCB+"?") || q.Get("error") != "invalid_request" || q.Get("iss") != h.srv.URL {
					t.Fatalf("the link back: %.300s", back)
				}
			}
			if n := len(rec.stored()) - before; n != 0 {
				t.Fatalf("%d connect requests stored", n)
			}
		})
	}

	t.Run("a scope word's actions once each", func(t *testing.T) {
		before := len(rec.stored())
		u := authorizeURL(h.srv.URL, client, testCB, challenge, "x") + "&" +
			url.Values{"scope": {"counter:" + strings.Repeat("get,", 50_000) + "get"}}.Encode()
		if resp, body := get(u); resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %.300s", resp.StatusCode, body)
		}
		got := rec.stored()
		if len(got) != before+1 {
			t.Fatalf("stored %d requests, want 1", len(got)-before)
		}
		scope := got[before].RequestedScope
		if len(scope) != 1 || scope[0].Tool != "counter" || strings.Join(scope[0].Actions, ",") != "get" {
			t.Fatalf("stored requested scope %.200v, want counter:get", scope)
		}
	})
}
