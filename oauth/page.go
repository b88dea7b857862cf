package oauth

import (
	"html/template"
	"net/http"

	"github.com/tabrelay/tabrelay/protocol"
)

// waitingData is what the waiting page shows.
type waitingData struct {
	App, Client, Host, Code string
	StatusURL, ApproveURL   string
	Minutes                 int
	Nonce                   string
	// LinkOnly: typed codes are off (Config.NoCrossDevice); the page
	// asks for its link, opened in this browser.
	LinkOnly bool
}

// The waiting page: plain HTML, no external assets, its one script and
// style allowed by a nonce (SPEC §5). Scripts and tests read the code from
// data-connect-code and poll data-status-url.
var waitingTemplate = template.Must(template.New("waiting").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Approve {{.Client}} in {{.App}}</title>
<style nonce="{{.Nonce}}">
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
.code{font:600 2.2rem/1.2 ui-monospace,monospace;letter-spacing:.12em;padding:.6rem 1rem;border:2px solid #444;border-radius:.4rem;display:inline-block;margin:.5rem 0}
.muted{color:#555;font-size:.9rem}
</style></head>
<body id="waiting" data-connect-code="{{.Code}}" data-status-url="{{.StatusURL}}">
<h1>Approve this connection in {{.App}}</h1>
<p><strong>{{.Client}}</strong> (returning to <strong>{{.Host}}</strong>) asks to use {{.App}} in your browser.</p>
{{if .LinkOnly}}<p>Approve it in {{.App}}, in this browser: this relay connects an agent only from the browser that shows this page.</p>
{{else if .ApproveURL}}<p>Approve it in {{.App}} with the link below, in this browser. On another device, open {{.App}} there and enter this code:</p>
<p class="code">{{.Code}}</p>
{{else}}<p>In the browser where you use {{.App}}, open it and enter this code:</p>
<p class="code">{{.Code}}</p>
{{end}}{{if .ApproveURL}}<p><a href="{{.ApproveURL}}" target="_blank" rel="noopener noreferrer">Open {{.App}} to approve</a></p>{{end}}
<p id="state" class="muted" role="status">Waiting for your decision. This page goes on by itself; the code expires in {{.Minutes}} minutes.</p>
<p class="muted">If you did not start this, close this page: nothing is connected until you approve the code in {{.App}}.</p>
<script nonce="{{.Nonce}}">
(function () {
  var body = document.getElementById("waiting"), state = document.getElementById("state");
  var url = body.getAttribute("data-status-url");
  function poll() {
    fetch(url, {credentials: "same-origin", cache: "no-store"}).then(function (r) {
      if (r.status === 503) { throw r; } // the store is away for a moment: ask again
      return r.json();
    }).then(function (s) {
      if (s.redirect) { state.textContent = s.state === "approved" ? "Approved. Returning…" : "Not approved. Returning…"; window.location.replace(s.redirect); return; }
      if (s.state === "pending") { setTimeout(poll, 1500); return; }
      state.textContent = s.error || "This request has ended. Start again from the application.";
    }).catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 1000);
})();
</script>
<noscript><p>This page needs JavaScript to go on once you approved.</p></noscript>
</body></html>
`))

var backTemplate = template.Must(template.New("back").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>Cannot connect</title></head>
<body><h1>This connection cannot go on</h1><p>The request was not valid: {{.Desc}}.</p>
<p>Nothing was connected. <a id="back" href="{{.Link}}" rel="noreferrer">Return to {{.Host}}</a> to tell the application.</p></body></html>
`))

var errorTemplate = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>Cannot connect</title></head>
<body><h1>This connection cannot go on</h1><p>{{.}}</p>
<p>Nothing was connected. Start again from the application that sent you here.</p></body></html>
`))

// pageHeaders forbid framing, outside assets and caching.
func pageHeaders(w http.ResponseWriter, nonce string) {
	csp := "default-src 'none'; connect-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'"
	if nonce != "" {
		csp += "; script-src 'nonce-" + nonce + "'; style-src 'nonce-" + nonce + "'"
	}
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
}

func (s *Server) waitingPage(w http.ResponseWriter, d waitingData) {
	d.Nonce = nonce()
	pageHeaders(w, d.Nonce)
	w.WriteHeader(http.StatusOK)
	if err := waitingTemplate.Execute(w, d); err != nil {
		s.cfg.Logger.Error("waiting page", "err", err)
	}
}

// errorPage is the person's page of an error: e's sentence at its status.
func (s *Server) errorPage(w http.ResponseWriter, e *protocol.RelayError) {
	pageHeaders(w, "")
	w.WriteHeader(e.Status)
	_ = errorTemplate.Execute(w, e.Message)
}

// unavailablePage is the person's page of a 503: the sentence, and
// Retry-After as every 503 has.
func (s *Server) unavailablePage(w http.ResponseWriter, msg string) {
	w.Header().Set("Retry-After", retryAfter)
	s.errorPage(w, protocol.ErrUnavailable.With(msg))
}
