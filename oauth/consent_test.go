package oauth_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tabrelay/tabrelay/internal/clock"
	"github.com/tabrelay/tabrelay/internal/redistest"

	"github.com/tabrelay/tabrelay/oauth"
	"github.com/tabrelay/tabrelay/protocol"
)

// Consent phishing (issue 23 §1, SPEC §5): whoever holds the waiting page
// gets the connection, so a link approval counts only once the approving
// browser proved, on the relay's confirm page, that it holds the waiting
// page's cookie.

// confirmAs posts the confirm page's handle as browser c would, from the
// relay's origin (origin "" sends none).
func (h *harness) confirmAs(c *http.Client, confirm, origin string) (int, map[string]string) {
	h.tb.Helper()
	page, handle, ok := strings.Cut(confirm, "#")
	if !ok || handle == "" || !strings.HasPrefix(page, h.srv.URL+"/authorize/status/") {
		h.tb.Fatalf("the confirm URL %q is not the relay's page with a handle in its fragment", confirm)
	}
	req, _ := http.NewRequest(http.MethodPost, page, strings.NewReader(url.Values{"handle": {handle}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, body := h.do(c, req)
	var out map[string]string
	if err := json.Unmarshal(body, &out); err != nil {
		h.tb.Fatalf("confirm: %d, not JSON: %s", resp.StatusCode, body)
	}
	return resp.StatusCode, out
}

func (h *harness) approveLink(w *waiting) string {
	h.tb.Helper()
	info, confirm, err := h.as.ApproveVia(context.Background(), testPairing, testAddr, w.code, whoami, protocol.ViaLink)
	if err != nil || confirm == "" || info.ID != "" {
		h.tb.Fatalf("a link approval = %+v, %q, %v; want a confirm page and no connection yet", info, confirm, err)
	}
	return confirm
}

func TestLinkApprovalNeedsTheWaitingPagesBrowser(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { linkApprovals(t, newHarness(t)) })
	t.Run("redis", func(t *testing.T) {
		key := make([]byte, 32)
		rand.Read(key)
		clk := clock.NewFake(time.Now())
		h := redisHarness(t, redistest.Start(t).Client(), "consent:", key, clk)
		h.clock = clk // the server's
		linkApprovals(t, h)
	})
}

func linkApprovals(t *testing.T, h *harness) {
	ctx := context.Background()
	client := h.register("Phish Client", testCB)

	t.Run("another browser's approval is declined and no code reaches the waiting page", func(t *testing.T) {
		w := h.startConnect(client, testCB) // the attacker's browser holds the page
		confirm := h.approveLink(w)
		if _, st := h.status(w.browser, w); st["state"] != oauth.RequestPending || st["redirect"] != "" {
			t.Fatalf("the waiting page before the proof: %v, want pending", st)
		}
		// GET of the page (a link scanner, a prefetch) changes nothing.
		page, _, _ := strings.Cut(confirm, "#")
		if resp, body := h.get(h.browser(), page); resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			!strings.Contains(string(body), "Checking that this request was started in this browser") {
			t.Fatalf("the confirm page: %d %v", resp.StatusCode, resp.Header)
		}
		person := h.browser() // the person's browser never opened the waiting page
		code, out := h.confirmAs(person, confirm, h.srv.URL)
		if code != http.StatusOK || out["state"] != oauth.RequestDeclined || out["reason"] != oauth.DeclinedOtherBrowser ||
			!strings.Contains(out["message"], "started in another browser") || !strings.Contains(out["message"], "trick you") {
			t.Fatalf("the person's confirm: %d %v", code, out)
		}
		_, st := h.status(w.browser, w)
		if st["state"] != oauth.RequestDeclined || !strings.Contains(st["redirect"], "error=access_denied") || strings.Contains(st["redirect"], "code=") {
			t.Fatalf("the attacker's waiting page after the refused proof: %v", st)
		}
		info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
		if err != nil || info.State != oauth.RequestDeclined || info.Reason != oauth.DeclinedOtherBrowser {
			t.Fatalf("the panel's look at its declined request: %+v %v", info, err)
		}
		// Declined for good: the same handle with the cookie cannot revive it.
		if _, out := h.confirmAs(w.browser, confirm, h.srv.URL); out["state"] != oauth.RequestDeclined {
			t.Fatalf("the attacker's own confirm afterwards: %v, want it to stay declined", out)
		}
		if conns, _ := h.as.Connections(ctx, testPairing); len(conns) != 0 {
			t.Fatalf("connections after a refused proof: %v", conns)
		}
		if n := testutil.ToFloat64(h.metrics.Decisions.WithLabelValues("declined_other_browser")); n != 1 {
			t.Fatalf("declined_other_browser counted %v, want 1", n)
		}
	})

	t.Run("the same browser's approval connects", func(t *testing.T) {
		w := h.startConnect(client, testCB)
		confirm := h.approveLink(w)
		info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
		if err != nil || info.State != oauth.RequestConfirming {
			t.Fatalf("ConnectInfo while the proof is awaited: %+v %v", info, err)
		}
		if _, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami); requestErrCode(err) != protocol.ErrCodeCodeUsed {
			t.Fatalf("a second approval while the proof is awaited: %v, want code-used", err)
		}
		code, out := h.confirmAs(w.browser, confirm, h.srv.URL)
		if code != http.StatusOK || out["state"] != oauth.RequestApproved || out["message"] != "Connected — you can close this window." {
			t.Fatalf("the confirm of the waiting page's browser: %d %v", code, out)
		}
		_, st := h.status(w.browser, w)
		u, _ := url.Parse(st["redirect"])
		if st["state"] != oauth.RequestApproved || u == nil || u.Query().Get("code") == "" {
			t.Fatalf("the waiting page after the proof: %v", st)
		}
		h.tokenOK(w.exchangeForm(u.Query().Get("code"), h.srv.URL))
		conns, _ := h.as.Connections(ctx, testPairing)
		if len(conns) != 1 {
			t.Fatalf("connections after the proof: %v", conns)
		}
		// The panel learns the outcome, with the connection to undo.
		info, err = h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
		if err != nil || info.State != oauth.RequestApproved || info.Connection == nil || info.Connection.ID != conns[0].ID {
			t.Fatalf("ConnectInfo after the proof: %+v %v", info, err)
		}
	})

	t.Run("a proof after the code expired connects nothing", func(t *testing.T) {
		w := h.startConnect(client, testCB)
		confirm := h.approveLink(w)
		h.clock.Advance(oauth.ConnectCodeTTL + time.Second)
		if _, out := h.confirmAs(w.browser, confirm, h.srv.URL); out["state"] != oauth.RequestExpired || !strings.Contains(out["message"], "10 minutes are over") {
			t.Fatalf("a late proof: %v", out)
		}
		if info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code); err != nil || info.State != oauth.RequestExpired {
			t.Fatalf("ConnectInfo of a link approval that expired: %+v %v", info, err)
		}
		if _, st := h.status(w.browser, w); st["state"] != oauth.RequestExpired || !strings.Contains(st["redirect"], "error=access_denied") {
			t.Fatalf("the waiting page of a link approval that expired: %v", st)
		}
	})

	t.Run("only the relay's own page may post the proof", func(t *testing.T) {
		w := h.startConnect(client, testCB)
		confirm := h.approveLink(w)
		for _, origin := range []string{"", "https://evil.example"} {
			if code, out := h.confirmAs(h.browser(), confirm, origin); code != http.StatusForbidden || out["state"] != "refused" {
				t.Fatalf("a post with Origin %q: %d %v", origin, code, out)
			}
		}
		page, _, _ := strings.Cut(confirm, "#")
		if code, out := h.confirmAs(w.browser, page+"#not-the-handle", h.srv.URL); code != http.StatusNotFound || out["state"] != "unknown" {
			t.Fatalf("a wrong handle: %d %v", code, out)
		}
		if info, _ := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code); info.State != oauth.RequestConfirming {
			t.Fatalf("after refused posts the request is %q, want still confirming", info.State)
		}
	})
}

func TestTypedCodeProvenance(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	client := h.register("Typed Client", testCB)
	w := &waiting{browser: h.browser()}
	_, challenge := pkce()
	req, _ := http.NewRequest(http.MethodGet, authorizeURL(h.srv.URL, client, testCB, challenge, "s"), nil)
	req.Header.Set("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36")
	_, body := h.do(w.browser, req)
	w.code = codeAttr.FindStringSubmatch(string(body))[1]

	info, err := h.as.ConnectInfo(ctx, testPairing, "127.0.0.1", w.code) // the waiting page's address
	if err != nil || info.Device != "Chrome on Windows" || !info.SameAddress || !info.CrossDevice ||
		info.StartedAt != testStart.UnixMilli() || info.State != oauth.RequestPending {
		t.Fatalf("ConnectInfo from the waiting page's address: %+v %v", info, err)
	}
	if info, _ := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code); info.SameAddress {
		t.Fatal("another address is said to be the waiting page's")
	}
	if raw, _ := json.Marshal(info); strings.Contains(string(raw), "127.0.0.1") {
		t.Fatalf("the tab is sent an address: %s", raw)
	}
}

func TestCrossDeviceOff(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, func(c *oauth.Config) { c.NoCrossDevice = true })
	client := h.register("Link Only Client", testCB)
	w := h.startConnect(client, testCB)
	if strings.Contains(w.page, `class="code"`) || !strings.Contains(w.page, "only from the browser that shows this page") {
		t.Fatal("the waiting page still asks for a typed code while typed codes are off")
	}
	info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
	if err != nil || info.CrossDevice {
		t.Fatalf("ConnectInfo: %+v %v, want crossDevice false", info, err)
	}
	_, err = h.as.Approve(ctx, testPairing, testAddr, w.code, whoami)
	var rerr *protocol.RelayError
	if requestErrCode(err) != protocol.ErrCodeCrossDevice || !errors.As(err, &rerr) || !strings.Contains(rerr.Message, "approval link") {
		t.Fatalf("a typed code with cross-device off: %v", err)
	}
	// The link, in the waiting page's browser, still connects.
	confirm := h.approveLink(w)
	if _, out := h.confirmAs(w.browser, confirm, h.srv.URL); out["state"] != oauth.RequestApproved {
		t.Fatalf("a link approval with cross-device off: %v", out)
	}
}

// Redirect hosts are shown in ASCII, a mixed-script one flagged.
func TestLookalikeRedirectHost(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	cb := "https://cl\u0430ude.ai/api/mcp/auth_callback" // a Cyrillic а
	client := h.register("Lookalike", cb)
	w := h.startConnect(client, cb)
	if !strings.Contains(w.page, "xn--clude-5ve.ai") || strings.Contains(w.page, "cl\u0430ude") {
		t.Fatal("the waiting page does not show the host in ASCII")
	}
	info, err := h.as.ConnectInfo(ctx, testPairing, testAddr, w.code)
	if err != nil || info.RedirectHost != "xn--clude-5ve.ai" || !info.RedirectHostMixedScript {
		t.Fatalf("ConnectInfo: %+v %v", info, err)
	}
	conn, err := h.as.Approve(ctx, testPairing, testAddr, w.code, whoami)
	if err != nil || conn.Host != "xn--clude-5ve.ai" {
		t.Fatalf("the connection's host: %+v %v", conn, err)
	}
}
