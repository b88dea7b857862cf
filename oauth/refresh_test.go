package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tabrelay/tabrelay/oauth"
)

// TestRefreshGrace holds /token to the README's rule (SPEC §5): a rotated
// refresh token may be presented again within RefreshGrace, at most
// RefreshRetries times, while its successor is unused; presented after
// the grace, once more than that, or after its successor was used, it
// revokes the family: its refresh and access tokens stop working.
func TestRefreshGrace(t *testing.T) {
	// refresh presents token and returns the status, the tokens and the
	// error code.
	refresh := func(h *harness, client, token string) (int, tokens, string) {
		t.Helper()
		st, body, err := h.refresh(client, token)
		if err != nil {
			t.Fatal(err)
		}
		var out tokens
		if st == http.StatusOK {
			if err := json.Unmarshal(body, &out); err != nil || out.RefreshToken == "" {
				t.Fatalf("a refresh answered 200 with %s", body)
			}
			return st, out, ""
		}
		return st, out, oauthErr(t, body)
	}
	// revoked wants every token of the family dead and one reuse counted.
	// It asks without presenting first: presenting a dead member is reuse
	// itself, which would revoke the family and hide that the
	// presentation under test did not.
	revoked := func(h *harness, client string, members ...tokens) {
		t.Helper()
		if n := testutil.ToFloat64(h.metrics.RefreshReuse); n != 1 {
			t.Errorf("refresh reuse counted %v times, want 1", n)
		}
		for _, tok := range members {
			if _, err := h.as.Verify(context.Background(), tok.AccessToken); err == nil {
				t.Error("an access token of the revoked family still works")
			}
			if h.as.RefreshIsCurrent(context.Background(), tok.RefreshToken) {
				t.Error("the revoked family still has a current refresh token")
			}
		}
		for _, tok := range members {
			if st, _, code := refresh(h, client, tok.RefreshToken); st != http.StatusBadRequest || code != "invalid_grant" {
				t.Errorf("a refresh token of the revoked family: %d %s, want 400 invalid_grant", st, code)
			}
		}
	}

	t.Run("retries within the grace, then one more revokes", func(t *testing.T) {
		h := newHarness(t)
		client := h.register("Grace Client", testCB)
		old := h.connect(client)
		_, first, _ := refresh(h, client, old.RefreshToken)
		var last tokens
		for i := range oauth.RefreshRetries {
			h.clock.Advance(10 * time.Second)
			st, tok, code := refresh(h, client, old.RefreshToken)
			if st != http.StatusOK {
				t.Fatalf("retry %d of the rotated token within the grace: %d %s", i+1, st, code)
			}
			last = tok
		}
		if !h.as.RefreshIsCurrent(context.Background(), last.RefreshToken) {
			t.Fatal("the last retry's refresh token is not the family's current one")
		}
		if n := testutil.ToFloat64(h.metrics.RefreshReuse); n != 0 {
			t.Fatalf("retries within the grace were counted as reuse %v times", n)
		}
		st, _, code := refresh(h, client, old.RefreshToken)
		if st != http.StatusBadRequest || code != "invalid_grant" {
			t.Fatalf("presentation %d of the rotated token: %d %s, want 400 invalid_grant", oauth.RefreshRetries+2, st, code)
		}
		revoked(h, client, last, first)
	})

	t.Run("after the grace revokes", func(t *testing.T) {
		h := newHarness(t)
		client := h.register("Grace Client", testCB)
		old := h.connect(client)
		_, next, _ := refresh(h, client, old.RefreshToken)
		h.clock.Advance(oauth.RefreshGrace + time.Second)
		if st, _, code := refresh(h, client, old.RefreshToken); st != http.StatusBadRequest || code != "invalid_grant" {
			t.Fatalf("the rotated token after the grace: %d %s", st, code)
		}
		revoked(h, client, next)
	})

	t.Run("after its successor was used revokes", func(t *testing.T) {
		h := newHarness(t)
		client := h.register("Grace Client", testCB)
		old := h.connect(client)
		_, next, _ := refresh(h, client, old.RefreshToken)
		_, newest, _ := refresh(h, client, next.RefreshToken)
		if st, _, code := refresh(h, client, old.RefreshToken); st != http.StatusBadRequest || code != "invalid_grant" {
			t.Fatalf("a token two rotations old, within the grace: %d %s", st, code)
		}
		revoked(h, client, newest)
	})
}
