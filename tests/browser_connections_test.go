package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// connectionsPage is an app page with the probe bundle's echo that shows
// the Connections panel of the UI module the relay serves.
func connectionsPage(relay string) string {
	return sdkPage(relay, "connections", `<tabrelay-connections></tabrelay-connections>
`, `import "`+relay+`/sdk/v1/tabrelay-ui.js";
`,
		`[{ name: "echo", title: "Echo", description: "Answers with its arguments.", inputSchema: { type: "object", properties: { value: {} } }, result: "summaries" }],`,
		`const client = connect({ relay, app, handlers: { echo: (call) => ({ echoed: call.arguments }) } });
const panel = document.querySelector("tabrelay-connections");
panel.app = app;
panel.client = client;
`)
}

// panelRows returns the client names the page's Connections panel lists.
func panelRows(ctx context.Context) ([]string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("tabrelay-connections li[data-connection] [data-part=client]")].map((e) => e.textContent)`))
}

// TestChromiumConnectionsPanelFollowsPushes: two tabs of one Chromium show
// <tabrelay-connections>. A host connects (approved through the first
// tab's client): both panels list it without a reload. Forget in the
// first tab's panel (with its confirm step): the host's next MCP request
// gets 401, and the second tab's panel drops it without a reload — the
// relay's pushed connections (docs/tab-protocol.md §7).
func TestChromiumConnectionsPanelFollowsPushes(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, connectionsPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)

	open := func() context.Context {
		ctx, cancel := chromedp.NewContext(browser)
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
			t.Fatal(err)
		}
		waitState(t, ctx, "connected")
		return ctx
	}
	first, second := open(), open()
	tabs := map[string]context.Context{"first": first, "second": second}
	lists := func(want ...string) {
		t.Helper()
		for name, ctx := range tabs {
			var got []string
			eventually(t, func() bool {
				var err error
				got, err = panelRows(ctx)
				return err == nil && strings.Join(got, ",") == strings.Join(want, ",")
			}, "the %s tab's panel lists %q (it lists %q)", name, want, got)
		}
	}
	lists() // both panels loaded the (empty) list
	for name, ctx := range tabs {
		note, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("tabrelay-connections [data-part=note]").textContent`))
		if err != nil || !strings.Contains(note, "No agent is connected to Probe") {
			t.Fatalf("the %s tab's empty panel says %q (%v)", name, note, err)
		}
	}

	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	approveCtx, cancel := context.WithTimeout(first, 30*time.Second)
	defer cancel()
	if id, err := chromedp.Run(approveCtx, chromedp.Evaluate[string](
		`window.tabrelayClient.approve(`+strconv.Quote(f.code)+`, [{ tool: "echo" }]).then((c) => c.id)`, chromedp.EvalAwaitPromise)); err != nil || id == "" {
		t.Fatalf("approve in the page: %q %v", id, err)
	}
	lists("E2E Host")
	scope, err := chromedp.Run(second, chromedp.Text(chromedp.CSS("tabrelay-connections [data-part=scope]")))
	if err != nil || scope != "Echo" {
		t.Fatalf("the second tab's panel says it may use %q (%v), want Echo", scope, err)
	}

	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	c := &mcpClient{t: t, url: relayURL + "/", token: tokens["access_token"].(string)}
	if rep := c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": "hi"}}, false, nil); rep.err != nil || rep.result["isError"] == true {
		t.Fatalf("tools/call echo before the forget: %d %v %v", rep.status, rep.err, rep.result)
	}

	// Forget, in the first tab's panel: the button is named with the client, and asks again.
	label, err := chromedp.Run(first, chromedp.Evaluate[string](`document.querySelector("tabrelay-connections button[data-part=forget]").getAttribute("aria-label")`))
	if err != nil || !strings.HasPrefix(label, "Forget E2E Host (") {
		t.Fatalf("the Forget button is named %q (%v), want it named with the client", label, err)
	}
	ctx, cancel2 := context.WithTimeout(first, 30*time.Second)
	defer cancel2()
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("tabrelay-connections button[data-part=forget]")),
		chromedp.WaitVisible(chromedp.CSS("tabrelay-connections button[data-part=confirm-forget]")),
		chromedp.Click(chromedp.CSS("tabrelay-connections button[data-part=confirm-forget]")),
	); err != nil {
		t.Fatalf("forget in the panel: %v", err)
	}
	var notice string
	eventually(t, func() bool {
		notice, _ = chromedp.Run(first, chromedp.Evaluate[string](`document.querySelector("tabrelay-connections [data-part=notice]").textContent`))
		return strings.Contains(notice, "is forgotten")
	}, "the first tab's panel says E2E Host is forgotten (it says %q)", notice)
	if rep := c.send("tools/list", nil, false, nil); rep.status != http.StatusUnauthorized {
		t.Fatalf("the host's request after the forget: %d %v %v, want 401", rep.status, rep.err, rep.result)
	}
	lists() // the second tab's panel followed the push
	if alert, _ := chromedp.Run(second, chromedp.Evaluate[string](`document.querySelector("tabrelay-connections [role=alert]").textContent`)); alert != "" {
		t.Fatalf("the second tab's panel shows an error: %q", alert)
	}
}

// TestChromiumConnectionsPanelGroupsSubAgents (issue 23 §2, issue 25 item
// 6): one client connected twice, and two sub-agents' connections derived
// from the first by token exchange. The panel lists the sub-agents in a
// list under the first connection, says whose they are, and names every
// row apart (a short id beside the same name and host), in the words its
// buttons are labelled with.
func TestChromiumConnectionsPanelGroupsSubAgents(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, connectionsPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, "connected")

	h := newHost(t, relayURL)
	h.register()
	var first string
	for i := range 2 {
		f := h.authorize()
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`window.tabrelayClient.approve(`+strconv.Quote(f.code)+`, [{ tool: "echo" }]).then((c) => c.id)`, chromedp.EvalAwaitPromise))
		if err != nil || id == "" {
			t.Fatalf("approve in the page: %q %v", id, err)
		}
		_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
		if i == 0 {
			first = tokens["access_token"].(string)
		}
	}
	for range 2 {
		if status, out := h.tokenExchange(first, ""); status != http.StatusOK {
			t.Fatalf("exchange: %d %v", status, out)
		}
	}

	var shape struct {
		Top     int      `json:"top"`
		Under   []string `json:"under"`
		MadeBy  []string `json:"madeBy"`
		Labels  []string `json:"labels"`
		Parent  string   `json:"parent"`
		IDs     []string `json:"ids"`
		Created string   `json:"created"`
	}
	eventually(t, func() bool {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify((() => {
  const root = document.querySelector("tabrelay-connections [data-part=list]");
  const all = (sel, from = root) => [...from.querySelectorAll(sel)];
  const group = root.querySelector(":scope > li > ul[data-part=derived]");
  return {
    top: all(":scope > li").length,
    under: group ? all(":scope > li > h3", group).map((e) => e.textContent) : [],
    madeBy: all("[data-part=derived-from]").map((e) => e.textContent),
    labels: all("button[data-part=forget]").map((b) => b.getAttribute("aria-label")),
    parent: group ? group.closest("li").querySelector("[data-part=id]").textContent : "",
    ids: all("[data-part=id]").map((e) => e.textContent),
    created: root.querySelector("[data-part=created]")?.textContent ?? "",
  };
})())`))
		return err == nil && json.Unmarshal([]byte(raw), &shape) == nil && shape.Top == 2 && len(shape.Under) == 2
	}, "the panel lists two connections with two sub-agents under one (it shows %+v)", shape)
	for _, u := range shape.Under {
		if u != "E2E Host: a sub-agent" {
			t.Fatalf("a sub-agent's row is headed %q", u)
		}
	}
	for _, m := range shape.MadeBy {
		if !strings.Contains(m, "id "+shape.Parent) || !strings.Contains(m, "for a sub-agent") {
			t.Fatalf("a sub-agent's row says it was made by %q; its parent's id is %q", m, shape.Parent)
		}
	}
	seen := map[string]bool{}
	for _, l := range shape.Labels {
		if seen[l] || !strings.HasPrefix(l, "Forget E2E Host (") || !strings.Contains(l, ", id ") {
			t.Fatalf("the Forget buttons are labelled %q: each must name its own connection", shape.Labels)
		}
		seen[l] = true
	}
	if len(shape.IDs) != 4 || !regexp.MustCompile(`\d:\d\d:\d\d`).MatchString(shape.Created) {
		t.Fatalf("ids %q, created %q: want four short ids and a time to the second", shape.IDs, shape.Created)
	}
}
