package livecheck

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The person's side, through the SDK elements' data-parts (web/sdk/README.md):
// <tabrelay-connect> to approve, <tabrelay-connections> to forget.

// connectState is what the Connect panel shows.
type connectState struct {
	Present  bool   `json:"present"`
	Asking   bool   `json:"asking"` // who asks is shown, with the scope picker
	Client   string `json:"client"`
	Identity string `json:"identity"` // how far the name can be trusted
	Error    string `json:"error"`
	Result   string `json:"result"`
	Code     string `json:"code"`       // the code field: a link's code waits there for Continue
	Waiting  bool   `json:"confirming"` // a link approval waits for the relay's confirm window
	Boxes    int    `json:"boxes"`
	Ticked   int    `json:"ticked"`
	Panels   bool   `json:"connections"` // the page also has <tabrelay-connections>
}

const connectStateJS = `(() => {
  const el = document.querySelector("tabrelay-connect");
  if (!el) return { present: false };
  const text = (sel) => { const n = el.querySelector(sel); return n ? n.textContent.trim() : ""; };
  const ask = el.querySelector("[data-part=ask]");
  const boxes = [...el.querySelectorAll("[data-part=scope] input[type=checkbox]")];
  return { present: true, asking: !!ask && !ask.hidden, client: text("[data-part=client]"), identity: text("[data-part=identity]"), error: text("[data-part=error]"),
    code: (el.querySelector("[data-part=code]") || {}).value || "", confirming: !!el.querySelector("[data-part=open-confirm]"),
    result: text("[data-part=result]"), boxes: boxes.length, ticked: boxes.filter((b) => b.checked).length,
    connections: !!document.querySelector("tabrelay-connections") };
})()`

// tickAllJS ticks every box the scope picker offers (an action's box is
// fixed while its whole tool is ticked) and says how many it clicked.
const tickAllJS = `(() => {
  const el = document.querySelector("tabrelay-connect");
  let n = 0;
  for (; n < 1000; n++) {
    const b = [...el.querySelectorAll("[data-part=scope] input[type=checkbox]")].find((b) => !b.checked && !b.disabled);
    if (!b) break;
    b.click();
  }
  return n;
})()`

// link is the approval link of f into the app: --app with the code in
// its fragment, or the waiting page's own link.
func (l *live) link(f *flow) (string, error) {
	if l.opts.App != "" {
		base, _, _ := strings.Cut(l.opts.App, "#")
		return base + "#tabrelay-connect=" + url.QueryEscape(f.connectCode), nil
	}
	if f.approveURL == "" {
		return "", errors.New("the waiting page has no link into the app (the relay has no APP_URL): name the app's page with --app")
	}
	return f.approveURL, nil
}

// openAndAsk opens the app at f's approval link in a new tab and waits
// until its Connect panel shows who asks.
func (l *live) openAndAsk(ctx context.Context, f *flow) (*page, connectState, error) {
	var st connectState
	link, err := l.link(f)
	if err != nil {
		return nil, st, err
	}
	if l.browser == nil {
		if l.browser, err = startBrowser(ctx, l.opts.Chromium, l.chromeLog); err != nil {
			return nil, st, err
		}
	}
	from := "the waiting page's link"
	if l.opts.App != "" {
		from = "--app"
	}
	// The person's browser opened the waiting page: it holds its cookie.
	if err := l.browser.holdWaitingPage(ctx, f.statusURL, l.web.client.Jar); err != nil {
		return nil, st, err
	}
	l.rep.debugf("opening the app at %s (%s) in Chromium", originOf(link), from)
	p, err := l.browser.open(ctx, link)
	if err != nil {
		return nil, st, err
	}
	// A browser hides why a socket was refused from the page, so the live
	// check asks the relay itself, as a tab of the page's origin would.
	refused, err := originRefused(ctx, l.relay, p.origin, &http.Client{Transport: l.web.client.Transport})
	if refused {
		return p, st, fmt.Errorf("the page at %s never connected to the relay, so nothing could be approved: the relay refuses tabs from that origin (403 at /tab); add it to the relay's ALLOWED_ORIGINS", p.origin)
	}
	if err != nil {
		l.rep.debugf("the page's origin could not be tried at /tab: %v", err)
	}
	// The panel shows a link's code and looks it up when the person presses Continue.
	st, err = poll(ctx, p, connectStateJS, func(s connectState) bool { return !s.Present || s.Code != "" || s.Asking || s.Error != "" })
	if err == nil && st.Present && !st.Asking && st.Error == "" {
		_, _ = eval[bool](ctx, p, `(document.querySelector("tabrelay-connect [data-part=lookup]").click(), true)`)
		st, err = poll(ctx, p, connectStateJS, func(s connectState) bool { return s.Asking || s.Error != "" })
	}
	switch {
	case err == nil && !st.Present:
		return p, st, fmt.Errorf("the app page at %s has no <tabrelay-connect> element, where the person approves (web/sdk/README.md)", p.origin)
	case err == nil && st.Error != "":
		return p, st, fmt.Errorf("the page's Connect panel says %q: the approval could not be made (if the page never connected, is %s in the relay's ALLOWED_ORIGINS?)", clip(st.Error, 160), p.origin)
	case err != nil:
		return p, st, fmt.Errorf("the page's Connect panel did not show who asks within the check's time: the page never connected to the relay, or never read the code (is %s in the relay's ALLOWED_ORIGINS?)", p.origin)
	}
	l.rep.debugf("the Connect panel: %q asks; %q; %d scope boxes, %d ticked", st.Client, st.Identity, st.Boxes, st.Ticked)
	if !strings.Contains(st.Client, f.client.name) {
		return p, st, fmt.Errorf("the Connect panel says %q asks, not the client %q", clip(st.Client, 100), f.client.name)
	}
	return p, st, nil
}

// approveAsked ticks every box of the panel that asks and approves.
func (l *live) approveAsked(ctx context.Context, p *page, st connectState) (string, error) {
	switch {
	case st.Boxes == 0:
		return "", errors.New("the Connect panel offers nothing to tick")
	case st.Ticked > 0:
		return "", fmt.Errorf("the Connect panel had %d of %d boxes ticked before the person chose, though the host asked for nothing (docs/tab-protocol.md §8)", st.Ticked, st.Boxes)
	}
	if _, err := eval[int](ctx, p, tickAllJS); err != nil {
		return "", fmt.Errorf("ticking the scope boxes: %v", err)
	}
	if st, _ = eval[connectState](ctx, p, connectStateJS); st.Ticked != st.Boxes {
		return "", fmt.Errorf("only %d of %d scope boxes could be ticked", st.Ticked, st.Boxes)
	}
	if _, err := eval[bool](ctx, p, `(document.querySelector("tabrelay-connect [data-part=approve]").click(), true)`); err != nil {
		return "", fmt.Errorf("pressing Approve: %v", err)
	}
	// A link's approval opens the relay's confirm window, which proves
	// this browser opened the waiting page; the panel waits for it.
	st, err := poll(ctx, p, connectStateJS, func(s connectState) bool { return s.Error != "" || !s.Asking && s.Result != "" && !s.Waiting })
	switch {
	case err == nil && st.Error != "":
		return "", fmt.Errorf("Approve was answered %q", clip(st.Error, 160))
	case err != nil && st.Waiting:
		return "", errors.New("the Connect panel still waits for the relay's confirm window within the check's time: did the browser open it?")
	case err != nil:
		return "", errors.New("the Connect panel showed no result of Approve within the check's time")
	}
	return fmt.Sprintf("the page at %s showed %q asking, nothing ticked; all %d boxes ticked, approved, confirmed in the relay's window", p.origin, clip(st.Client, 60), st.Boxes), nil
}

// openAndApprove is the approval of f in a new tab of the app.
func (l *live) openAndApprove(ctx context.Context, f *flow) (*page, string, error) {
	p, st, err := l.openAndAsk(ctx, f)
	if err != nil {
		return p, "", err
	}
	why, err := l.approveAsked(ctx, p, st)
	return p, why, err
}

// chromeLog is chromedp's log, with -v only, redacted as every line.
func (l *live) chromeLog(format string, args ...any) {
	l.rep.debugf("chromium: "+format, args...)
}
