package tests

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/tabrelay/tabrelay/node"
)

// BenchmarkChromiumToolsCall is BenchmarkMCPToolsCall with the tab in
// Chromium: a host's tools/call over HTTP through the relay in this
// process to a page running the SDK, and back. The difference between the
// two is what the SDK and the browser add to a call.
func BenchmarkChromiumToolsCall(b *testing.B) {
	page := chromium(b)
	listen := freePort(b)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(b, echoPage(relayURL))
	r := startRelay(b, func(c *node.Config) {
		c.Listen, c.PublicURL = listen, relayURL
		c.AllowedOrigins = append(c.AllowedOrigins, pageOrigin)
	})
	if err := chromedp.Do(page, chromedp.Navigate(pageURL)); err != nil {
		b.Fatal(err)
	}
	waitState(b, page, "connected")
	h := newHost(b, r.url)
	h.register()
	f := h.authorize()
	if _, err := chromedp.Run(page, chromedp.Evaluate[string](
		`window.tabrelayClient.approve(`+jsString(f.code)+`, [{ tool: "echo" }]).then((c) => c.id)`, chromedp.EvalAwaitPromise)); err != nil {
		b.Fatalf("approve in the page: %v", err)
	}
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	c := &mcpClient{t: b, url: r.url + "/", token: tokens["access_token"].(string)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": i}}, false, nil)
		if rep.result == nil || rep.result["isError"] == true {
			b.Fatalf("%d %v %v", rep.status, rep.err, rep.result)
		}
	}
}
