package oauth_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestVerifyKeepsWhatNothingChanged: a bearer check kept in memory
// answers with the scope as written last, ends with a revocation at once,
// and with VerifiedFor set is read again after it (the bound a node of a
// cluster relies on when another node's hint is lost).
func TestVerifyKeepsWhatNothingChanged(t *testing.T) {
	ctx := context.Background()
	t.Run("a scope written is seen by the next check", func(t *testing.T) {
		h := newHarness(t)
		tok := h.connect(h.register("Scoped", testCB))
		c, err := h.as.Verify(ctx, tok.AccessToken)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.as.WriteScope(ctx, c.ConnectionID, []protocol.ScopeEntry{{Tool: "echo", Actions: []string{"*"}}}, false, "tab"); err != nil {
			t.Fatal(err)
		}
		c, err = h.as.Verify(ctx, tok.AccessToken)
		if err != nil || len(c.Scope) != 1 || c.Scope[0].Tool != "echo" {
			t.Fatalf("after the scope was written: %+v %v", c.Scope, err)
		}
		if _, err := h.as.WriteScope(ctx, c.ConnectionID, nil, false, "tab"); err != nil {
			t.Fatal(err)
		}
		if c, err = h.as.Verify(ctx, tok.AccessToken); err != nil || len(c.Scope) != 0 {
			t.Fatalf("after the scope was emptied: %+v %v", c.Scope, err)
		}
	})
	t.Run("a revocation ends a kept check", func(t *testing.T) {
		h := newHarness(t)
		client := h.register("Revoked", testCB)
		tok := h.connect(client)
		for range 2 { // the second from memory
			if _, err := h.as.Verify(ctx, tok.AccessToken); err != nil {
				t.Fatal(err)
			}
		}
		if resp, body := h.postForm("/revoke", url.Values{"token": {tok.RefreshToken}, "client_id": {client}}); resp.StatusCode != 200 {
			t.Fatalf("revoke: %d %s", resp.StatusCode, body)
		}
		if _, err := h.as.Verify(ctx, tok.AccessToken); !errors.Is(err, oauth.ErrInvalidToken) {
			t.Fatalf("after the revocation: %v", err)
		}
	})
	t.Run("VerifiedFor bounds a check another node's change did not drop", func(t *testing.T) {
		h := newHarness(t, func(c *oauth.Config) { c.VerifiedFor = time.Second })
		tok := h.connect(h.register("Bounded", testCB))
		c, err := h.as.Verify(ctx, tok.AccessToken)
		if err != nil {
			t.Fatal(err)
		}
		// Another node's write: the store changes, no event reaches this one.
		if err := h.store.PutScope(ctx, c.ConnectionID, oauth.Scope{Version: oauth.ScopeVersion,
			Entries: []protocol.ScopeEntry{{Tool: "echo", Actions: []string{"*"}}}}); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(time.Second)
		if c, err = h.as.Verify(ctx, tok.AccessToken); err != nil || len(c.Scope) != 1 {
			t.Fatalf("1 s after another node wrote the scope: %+v %v", c.Scope, err)
		}
	})
}
