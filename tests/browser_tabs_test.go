package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// twoToolPage is an app page with the probe bundle's echo and wait. Its
// wait runs until the page closes: a call in the middle of its run.
// Every run is counted in localStorage, which the browser's tabs share.
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
  handlers: {
    echo: (call) => { ran(call.id); window.lastEcho = call.arguments.value; return { echoed: call.arguments }; },
    wait: (call) => { ran(call.id); window.running.push(call.id); return new Promise(() => {}); },
  },
});
`)
}

// TestChromiumACallRunsOnceAcrossTabs: two tabs of one Chromium; a call
// runs in the tab focused last, which closes in the middle of it. The
// relay moves the call to the other tab, which must not run it again
// (docs/tab-protocol.md §10): the host is told it may have run halfway.
func TestChromiumACallRunsOnceAcrossTabs(t *testing.T) {
	browser := chromium(t) // stays on about:blank: closing a tab must not close the browser
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, twoToolPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)

	open := func() (context.Context, context.CancelFunc) {
		ctx, cancel := chromedp.NewContext(browser)
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
			t.Fatal(err)
		}
		waitState(t, ctx, "connected")
		return ctx, cancel
	}
	second, closeSecond := open()
	defer closeSecond()
	first, closeFirst := open()
	defer closeFirst()
	// The first tab is the one the person looks at.
	if _, err := chromedp.Run(first, chromedp.Evaluate[any](`window.tabrelayClient.focus()`)); err != nil {
		t.Fatal(err)
	}

	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	if _, err := chromedp.Run(first, chromedp.Evaluate[string](
		`window.tabrelayClient.approve(`+jsString(f.code)+`, [{ tool: "echo" }, { tool: "wait" }]).then((c) => c.id)`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("approve in the page: %v", err)
	}
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	c := &mcpClient{t: t, url: relayURL + "/", token: tokens["access_token"].(string)}

	// The focus reaches the relay before the call: an echo answered by the
	// first tab says so.
	echo := 0
	eventually(t, func() bool {
		echo++
		c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": echo}}, false, nil)
		last, _ := chromedp.Run(first, chromedp.Evaluate[int](`window.lastEcho || 0`))
		return last == echo
	}, "an echo reaches the focused tab")

	reply := make(chan rpcReply, 1)
	go func() {
		reply <- c.send("tools/call", map[string]any{"name": "wait", "arguments": map[string]any{"ms": 1}}, false, nil)
	}()
	var id string
	eventually(t, func() bool {
		id, _ = chromedp.Run(first, chromedp.Evaluate[string](`window.running[0] || ""`))
		return id != ""
	}, "the call runs in the first tab")
	closeFirst() // the tab closes mid-call

	var rep rpcReply
	select {
	case rep = <-reply:
	case <-time.After(patience):
		t.Fatal("the host got no answer after the tab closed")
	}
	// The other tab finds the call's record running. Who holds its lock
	// decides the sentence: nobody (the closed tab's lock was released
	// first) → it may have run in part; the closing tab still (Chromium
	// had not let it go yet when the relay moved the call) → it runs in
	// another tab. Either way it is not run again.
	text := fmt.Sprint(rep.result["content"])
	if rep.err != nil || rep.result["isError"] != true ||
		!strings.Contains(text, "may have run") && !strings.Contains(text, "runs in another tab") {
		t.Fatalf("the host got %v %v; want an error result saying the call may have run, or runs in the other tab", rep.err, rep.result)
	}
	runs, err := chromedp.Run(second, chromedp.Evaluate[int](`Number(localStorage.getItem("ran:`+id+`") || 0)`))
	if err != nil || runs != 1 {
		t.Fatalf("the call ran %d times across the tabs (%v), want 1", runs, err)
	}
	if n, _ := chromedp.Run(second, chromedp.Evaluate[int](`window.running.length`)); n != 0 {
		t.Fatalf("the second tab ran the call too")
	}
	t.Logf("the host was told: %s", text)
}
