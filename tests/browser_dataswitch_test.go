package tests

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// onePixelPNG is a valid 1×1 PNG, base64: a picture the relay passes.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// dataSwitchPage is an app page with one summaries tool (the probe
// bundle's echo, which the relay knows), whose result holds a mean, a
// minimum (a single cell's value, declared in the page's dataScope of it)
// and a picture; window.permissions is the person's.
func dataSwitchPage(relay string) string {
	return sdkPage(relay, "stats", "", `import { createPermissions } from "`+relay+`/sdk/v1/tabrelay-ui.js";
import { Reply } from "`+relay+`/sdk/v1/tabrelay.js";
`, `[{ name: "echo", description: "Statistics of the sheet.", inputSchema: { type: "object", properties: { value: {} } }, annotations: { readOnlyHint: true },
    result: "summaries", dataScope: { singleCell: ["min"] } }],`,
		`const permissions = createPermissions({ app });
permissions.setDocument({ id: "sheet-1", name: "March" });
window.permissions = permissions;
const client = connect({
  relay, app, permissions,
  handlers: { echo: () => new Reply({ data: { mean: 2.5, min: 1 }, images: [{ mimeType: "image/png", data: "`+onePixelPNG+`" }] }) },
});
`)
}

// TestChromiumDataSwitchLeavesOutAfterTheData (issue 24 item 2): with the
// person's data switch on, a summaries tool's result reaches the host
// without its picture and its single-cell minimum, the mean kept, and the
// SDK's sentence saying what was left out stands after the closing data
// tag, not inside it.
func TestChromiumDataSwitchLeavesOutAfterTheData(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	page := chromium(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, dataSwitchPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	if err := chromedp.Do(page, chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	waitState(t, page, "connected")
	c := approvedHost(t, page, relayURL, `[{ tool: "echo" }]`)

	call := func() (text string, images int) {
		t.Helper()
		rep := c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{}}, false, nil)
		if rep.err != nil || rep.result["isError"] == true {
			t.Fatalf("tools/call echo: %v %v", rep.err, rep.result)
		}
		content, _ := rep.result["content"].([]any)
		for _, block := range content {
			m, _ := block.(map[string]any)
			switch m["type"] {
			case "text":
				s, _ := m["text"].(string)
				text += s
			case "image":
				images++
			}
		}
		return text, images
	}

	if text, images := call(); images != 1 || !strings.Contains(text, `"min":1`) {
		t.Fatalf("with the switch off: %d pictures, %q; want the picture and the minimum", images, text)
	}
	if _, err := chromedp.Run(page, chromedp.Evaluate[bool](`(window.permissions.setSummariesOnly(true), true)`)); err != nil {
		t.Fatal(err)
	}
	text, images := call()
	data, after, found := strings.Cut(text, "</tabrelay-data>")
	switch {
	case images != 0:
		t.Errorf("with the switch on, %d pictures reached the host", images)
	case !found || !strings.Contains(data, `"mean":2.5`) || strings.Contains(data, `"min"`):
		t.Errorf("with the switch on, the data is %q; want the mean without the minimum", data)
	case !strings.Contains(after, "sent without its pictures and single-cell values (min") || strings.Contains(data, "sent without"):
		t.Errorf("the sentence after the data is %q (data %q); want what was left out, after the closing tag", after, data)
	}
}
