package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tabrelay/tabrelay/internal/testwait"
)

// twoToolPage is an app page with the probe bundle's echo and wait. Its
// wait runs until the page closes: a call in the middle of its run.
// Every run is counted in localStorage, which the browser's tabs share.
// A tab waits up to 20 s for another tab's result of a call (the SDK's
// waitForOtherTabMs; 5 s by default), so that a tab that says the call
// still runs elsewhere can only have waited out a live tab.
func twoToolPage(relay string) string {
	return sdkPage(relay, "tabs", ``, ``,
		`[
    { name: "echo", description: "Answers with its arguments.", inputSchema: { type: "object", properties: { value: {} } }, result: "summaries" },
    { name: "wait", description: "Runs until the page closes.", inputSchema: { type: "object", properties: { ms: { type: "integer" } } }, result: "none" },
  ],`,
		`const ran = (id) => localStorage.setItem("ran:" + id, String(Number(localStorage.getItem("ran:" + id) || 0) + 1));
window.running = [];
const client = connect({
  relay,
  app,
  waitForOtherTabMs: 20000,
  handlers: {
    echo: (call) => { ran(call.id); window.lastEcho = call.arguments.value; return { echoed: call.arguments }; },
    wait: (call) => { ran(call.id); window.running.push(call.id); return new Promise(() => {}); },
  },
});
`)
}

// tabsOfOneBrowser is a Chromium with the app page open in a second tab,
// a `tabrelay serve` process, and a host's connection that may call echo
// and wait.
type tabsOfOneBrowser struct {
	t       *testing.T
	browser context.Context
	pageURL string
	second  context.Context
	host    *mcpClient
	echo    int
}

func newTabsOfOneBrowser(t *testing.T) *tabsOfOneBrowser {
	browser := chromium(t) // stays on about:blank: closing a tab must not close the browser
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, twoToolPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	b := &tabsOfOneBrowser{t: t, browser: browser, pageURL: pageURL}
	b.second = b.open()

	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	if _, err := chromedp.Run(b.second, chromedp.Evaluate[string](
		`window.tabrelayClient.approve(`+jsString(f.code)+`, [{ tool: "echo" }, { tool: "wait" }]).then((c) => c.id)`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("approve in the page: %v", err)
	}
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	b.host = &mcpClient{t: t, url: relayURL + "/", token: tokens["access_token"].(string)}
	return b
}

// open opens the app page in a new tab of the browser, connected.
func (b *tabsOfOneBrowser) open() context.Context {
	ctx, cancel := chromedp.NewContext(b.browser)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(b.pageURL)); err != nil {
		b.t.Fatal(err)
	}
	waitState(b.t, ctx, "connected")
	return ctx
}

// runInNewTab opens a tab the person looks at, and starts a wait call,
// which runs there: the host's reply comes on the channel returned.
func (b *tabsOfOneBrowser) runInNewTab() (tab context.Context, id string, reply <-chan rpcReply) {
	t := b.t
	tab = b.open()
	if _, err := chromedp.Run(tab, chromedp.Evaluate[any](`window.tabrelayClient.focus()`)); err != nil {
		t.Fatal(err)
	}
	// The focus reaches the relay before the call: an echo answered by the
	// new tab says so.
	eventually(t, func() bool {
		b.echo++
		b.host.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": b.echo}}, false, nil)
		last, _ := chromedp.Run(tab, chromedp.Evaluate[int](`window.lastEcho || 0`))
		return last == b.echo
	}, "an echo reaches the focused tab")

	replies := make(chan rpcReply, 1)
	c := &mcpClient{t: t, url: b.host.url, token: b.host.token}
	go func() {
		replies <- c.send("tools/call", map[string]any{"name": "wait", "arguments": map[string]any{"ms": 1}}, false, nil)
	}()
	eventually(t, func() bool {
		id, _ = chromedp.Run(tab, chromedp.Evaluate[string](`window.running[0] || ""`))
		return id != ""
	}, "the call runs in the new tab")
	return tab, id, replies
}

// told waits for the host's reply and checks that it says the call may
// have run in part (docs/tab-protocol.md §10: a tab that closed mid-call),
// and that the call ran once in all.
func (b *tabsOfOneBrowser) told(id string, reply <-chan rpcReply) string {
	t := b.t
	var rep rpcReply
	select {
	case rep = <-reply:
	case <-time.After(testwait.Patience):
		t.Fatal("the host got no answer after the tab closed")
	}
	text := fmt.Sprint(rep.result["content"])
	if rep.err != nil || rep.result["isError"] != true || !strings.Contains(text, "may have run in part") {
		t.Fatalf("the host got %v %v; want an error result saying the call may have run in part", rep.err, rep.result)
	}
	runs, err := chromedp.Run(b.second, chromedp.Evaluate[int](`Number(localStorage.getItem("ran:`+id+`") || 0)`))
	if err != nil || runs != 1 {
		t.Fatalf("the call ran %d times across the tabs (%v), want 1", runs, err)
	}
	if n, _ := chromedp.Run(b.second, chromedp.Evaluate[int](`window.running.length`)); n != 0 {
		t.Fatalf("the second tab ran the call too")
	}
	return text
}

// TestChromiumACallRunsOnceAcrossTabs: two tabs of one Chromium; a call
// runs in the tab focused last, which closes in the middle of it, at
// several moments. The relay moves the call to the other tab, which must
// not run it again (docs/tab-protocol.md §10): the host is told it may
// have run in part.
func TestChromiumACallRunsOnceAcrossTabs(t *testing.T) {
	b := newTabsOfOneBrowser(t)
	for _, after := range []time.Duration{0, time.Second, 2500 * time.Millisecond} {
		tab, id, reply := b.runInNewTab()
		time.Sleep(after)    // the moment of the close, not a wait for anything
		chromedp.Cancel(tab) // the tab closes mid-call
		closed := time.Now()
		text := b.told(id, reply)
		t.Logf("closed %v into the call, the host was told %v after the close: %s", after, time.Since(closed).Round(time.Millisecond), text)
	}
}

// TestChromiumATabClosingAfterItsSocketIsNotSaidToRun is issue 25 item 4:
// the relay learns that a tab's socket closed before the browser lets go
// of the tab's call lock, so the other tab, given the call, finds the lock
// held and waits. Played here without a race: the tab's socket closes
// (the client stops; the tool runs on, holding the lock), the call moves,
// and the tab closes at several moments after. The waiting tab must ask
// the lock again and tell the host the call may have run in part — not,
// after its whole wait, that it still runs in a tab that is gone.
func TestChromiumATabClosingAfterItsSocketIsNotSaidToRun(t *testing.T) {
	b := newTabsOfOneBrowser(t)
	for _, after := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second} {
		tab, id, reply := b.runInNewTab()
		if _, err := chromedp.Run(tab, chromedp.Evaluate[any](`window.tabrelayClient.stop()`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after) // the moment of the close, not a wait for anything
		chromedp.Cancel(tab)
		closed := time.Now()
		text := b.told(id, reply)
		t.Logf("closed %v after its socket, the host was told %v after the close: %s", after, time.Since(closed).Round(time.Millisecond), text)
	}
}
