package oauth_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// A tab sees who waits behind a connect code before the person approves,
// and asking uses nothing up.
func TestConnectInfo(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	client := h.register("Info Client", testCB)

	t.Run("who asks, and what it asked for in the relay's words", func(t *testing.T) {
		// Words of other vocabularies, unknown tools, a tool twice and
		// malformed entries are left out, not refused.
		w := h.startConnectAsking(client, testCB, "openid counter:get,reset offline_access nosuch counter:increment whoami:get whoami tool:")
		info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, strings.ToLower(w.code))
		if err != nil {
			t.Fatal(err)
		}
		want := []protocol.ScopeEntry{{Tool: "counter", Actions: []string{"get", "reset"}}, {Tool: "whoami", Actions: []string{"*"}}}
		if info.Client != "Info Client" || info.ClientKind != protocol.ClientRegistered || info.ClientURL != "" ||
			info.RedirectHost != "client.example" || fmt.Sprint(info.RequestedScope) != fmt.Sprint(want) {
			t.Fatalf("ConnectInfo = %+v", info)
		}
		if got := time.UnixMilli(info.ExpiresAt); got.Sub(h.clock.Now()) != oauth.ConnectCodeTTL {
			t.Fatalf("expires at %v, want the code's %v from now", got, oauth.ConnectCodeTTL)
		}
		// Asking used nothing up: the code approves afterwards.
		if _, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami); err != nil {
			t.Fatalf("Approve after ConnectInfo: %v", err)
		}
		// The browser that approved reads where it stands; another is told it is used.
		if info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code); err != nil || info.State != oauth.RequestApproved {
			t.Fatalf("ConnectInfo of its own approved code = %+v, %v; want state approved", info, err)
		}
		_, err = h.as.ConnectInfo(ctx, "pair_other", testAddr, w.code)
		if got := requestErrCode(err); got != protocol.ErrCodeCodeUsed {
			t.Fatalf("ConnectInfo of another browser's approved code = %v, want %s", err, protocol.ErrCodeCodeUsed)
		}
	})

	t.Run("a host that asked for nothing", func(t *testing.T) {
		w := h.startConnect(client, testCB)
		info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
		if err != nil || info.RequestedScope != nil {
			t.Fatalf("ConnectInfo = %+v, %v; want no requested scope", info, err)
		}
	})

	t.Run("expired", func(t *testing.T) {
		w := h.startConnect(client, testCB)
		h.clock.Advance(oauth.ConnectCodeTTL + time.Second)
		_, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
		if got := requestErrCode(err); got != protocol.ErrCodeCodeExpired {
			t.Fatalf("ConnectInfo after %v = %v, want %s", oauth.ConnectCodeTTL, err, protocol.ErrCodeCodeExpired)
		}
	})

	t.Run("wrong codes count against the approvals' limit", func(t *testing.T) {
		w := h.startConnect(client, testCB)
		for i := range 10 {
			_, err := h.as.ConnectInfo(ctx, "pair_guesser", "192.0.2.9", "ZZZZ-ZZZZ")
			if got := requestErrCode(err); got != protocol.ErrCodeWrongCode {
				t.Fatalf("wrong code %d: %v, want %s", i+1, err, protocol.ErrCodeWrongCode)
			}
		}
		for _, ask := range []func() error{
			func() error { _, err := h.as.ConnectInfo(ctx, "pair_guesser", "192.0.2.9", w.code); return err },
			func() error { _, err := h.as.Approve(ctx, "pair_guesser", "192.0.2.9", w.code, whoami); return err },
		} {
			if got := requestErrCode(ask()); got != protocol.ErrCodeLimited {
				t.Fatalf("the right code after 10 wrong ones: %s, want %s", got, protocol.ErrCodeLimited)
			}
		}
	})
}
