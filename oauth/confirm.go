package oauth

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/tabrelay/tabrelay/internal/httpx"
	"github.com/tabrelay/tabrelay/protocol"
)

// The same-browser proof of a link approval (SPEC §5, docs/security.md
// "Consent phishing"). Whoever holds the waiting page gets the
// connection, so a link approval counts only in the browser that opened
// that page: the Connect panel opens the relay's confirm page (a
// top-level window of the relay's origin, opened on the person's click),
// whose script posts the approval's handle back to the relay from the
// relay's own origin, with the waiting page's SameSite=Strict cookie. The
// cookie there releases the code to the waiting page; no cookie, or
// another request's, declines the request for good.

// DeclinedOtherBrowser is the DeclineReason of a link approval whose
// browser did not hold the waiting page's cookie.
const DeclinedOtherBrowser = "other-browser"

// The sentences of the confirm page's outcomes.
const (
	confirmedSentence    = "Connected — you can close this window."
	otherBrowserSentence = "This request was started in another browser, so it was not connected: if you did not start it just now, someone may be trying to trick you into connecting their agent to your account."
	confirmGoneSentence  = "This confirmation is unknown or over. Start again from the agent's application."
	confirmLateSentence  = "This request's 10 minutes are over, so nothing was connected. Start again from the agent's application."
	maxConfirmBody       = 1 << 10
)

var confirmTemplate = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Connecting in {{.App}}</title>
<style nonce="{{.Nonce}}">
body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
</style></head>
<body id="confirm">
<h1>Connecting an agent to {{.App}}</h1>
<p id="state" role="status">Checking that this request was started in this browser…</p>
<script nonce="{{.Nonce}}">
(function () {
  var body = document.getElementById("confirm"), state = document.getElementById("state");
  var handle = location.hash.slice(1);
  try { history.replaceState(null, "", location.pathname); } catch (e) {}
  function show(s, words) { body.setAttribute("data-state", s); state.textContent = words; }
  if (!handle) { show("unknown", "This window was opened without its confirmation. Close it, and approve again in {{.App}}."); return; }
  fetch(location.pathname, { method: "POST", credentials: "same-origin", cache: "no-store",
    headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "handle=" + encodeURIComponent(handle) })
    .then(function (r) { return r.json(); })
    .then(function (s) {
      show(s.state || "unknown", s.message || "The relay gave no answer. Close this window, and look in {{.App}}.");
      if (s.state === "approved") setTimeout(function () { window.close(); }, 1500);
    })
    .catch(function () { show("unreachable", "The relay could not be reached. Close this window, and look in {{.App}}: it says whether the agent is connected."); });
})();
</script>
<noscript><p>This window needs JavaScript to confirm the connection.</p></noscript>
</body></html>
`))

// confirmPage serves the page; it changes nothing (a link scanner that
// fetches it declines nothing): its script posts the handle.
func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request) {
	n := nonce()
	pageHeaders(w, n)
	w.WriteHeader(http.StatusOK)
	if err := confirmTemplate.Execute(w, map[string]string{"App": s.cfg.AppTitle, "Nonce": n}); err != nil {
		s.cfg.Logger.Error("confirm page", "err", err)
	}
}

// confirmAnswer is what the confirm page shows.
type confirmAnswer struct {
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message"`
}

// confirm takes the confirm page's post: the handle of a link approval,
// from the relay's own origin. With the waiting page's cookie the
// connection is made and the code released; without it the request is
// declined.
func (s *Server) confirm(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		httpx.WriteJSON(w, http.StatusForbidden, confirmAnswer{State: "refused", Message: "Only the relay's own confirm page may confirm a connection."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxConfirmBody)
	handle := r.PostFormValue("handle")
	req, err := s.cfg.Store.ConnectRequest(r.Context(), r.PathValue("id"))
	if err != nil && !errors.Is(err, ErrNotFound) {
		s.cfg.Logger.Error("read connect request", "err", err)
		WriteUnavailable(w, "The relay cannot read this connection request right now; reload this window in a few seconds.")
		return
	}
	if err != nil || handle == "" || !s.matches(purposeConfirm, handle, req.ConfirmHash) {
		httpx.WriteJSON(w, http.StatusNotFound, confirmAnswer{State: "unknown", Message: confirmGoneSentence})
		return
	}
	a, err := s.prove(r.Context(), req, s.holdsWaitCookie(r, req))
	if err != nil {
		WriteUnavailable(w, "The relay could not record this just now; reload this window in a few seconds.")
		return
	}
	httpx.WriteJSON(w, http.StatusOK, a)
}

// prove ends the link approval req with the browser's proof, or its lack.
// A request already ended (the page reloaded) is told as it stands.
func (s *Server) prove(ctx context.Context, req ConnectRequest, holds bool) (confirmAnswer, error) {
	if stillAt(&req, RequestConfirming, s.cfg.Clock.Now()) == nil {
		var err error
		if holds {
			_, err = s.grant(ctx, req, req.PairingID, req.ApprovedScope, RequestConfirming)
		} else {
			err = s.declineOtherBrowser(ctx, req)
		}
		if errors.Is(err, protocol.ErrUnavailable) {
			return confirmAnswer{}, err
		}
		// Decided now, or by a reload of the page meanwhile: as it stands.
		if req, err = s.cfg.Store.ConnectRequest(ctx, req.ID); err != nil {
			return confirmAnswer{}, protocol.ErrUnavailable
		}
	}
	switch state, _ := decidedBy(req, req.PairingID, s.cfg.Clock.Now()); state {
	case RequestApproved:
		return confirmAnswer{State: RequestApproved, Message: confirmedSentence}, nil
	case RequestDeclined:
		return confirmAnswer{State: RequestDeclined, Reason: req.DeclineReason, Message: declinedWords(req.DeclineReason)}, nil
	}
	return confirmAnswer{State: RequestExpired, Message: confirmLateSentence}, nil
}

func declinedWords(reason string) string {
	if reason == DeclinedOtherBrowser {
		return otherBrowserSentence
	}
	return "This request was declined, so nothing was connected."
}

// declineOtherBrowser declines a link approval that failed its proof.
func (s *Server) declineOtherBrowser(ctx context.Context, req ConnectRequest) error {
	now := s.cfg.Clock.Now().UTC()
	err := s.mark(ctx, req.ID, RequestConfirming, func(r *ConnectRequest) {
		r.Status, r.DecidedAt, r.DeclineReason, r.ApprovedScope = RequestDeclined, now, DeclinedOtherBrowser, nil
	})
	if err == nil {
		s.cfg.Metrics.Decisions.WithLabelValues("declined_other_browser").Inc()
		s.cfg.Logger.Warn("link approval declined: the approving browser did not open the waiting page",
			"pairing", req.PairingID, "client", req.ClientName)
	}
	return err
}

// holdsWaitCookie reports whether r carries the waiting page's cookie of req.
func (s *Server) holdsWaitCookie(r *http.Request, req ConnectRequest) bool {
	c, err := r.Cookie(waitCookie)
	return err == nil && s.matches(purposeWait, c.Value, req.WaitHash)
}

// sameOrigin accepts a post of the relay's own pages only: its Origin is
// the issuer, and a browser that says where it comes from says
// same-origin. Another site's form (which a Strict cookie never comes
// with) can neither confirm nor decline.
func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	return strings.TrimSuffix(r.Header.Get("Origin"), "/") == strings.TrimSuffix(s.cfg.Issuer, "/")
}
