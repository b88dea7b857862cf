package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// settingsPage is an app page with two tools of the probe bundle — counter
// (summaries; increment a change, reset deletes something saved) and notes
// (cells) — and the person's permission settings and data switch from the
// relay's UI module. window.increments and window.noteReads count what ran.
func settingsPage(relay string) string {
	return sdkPage(relay, "settings", `<tabrelay-permissions></tabrelay-permissions>
<tabrelay-data-switch></tabrelay-data-switch>
`, `import { createPermissions } from "`+relay+`/sdk/v1/tabrelay-ui.js";
`,
		`[{
    name: "counter", title: "Counter", description: "Reads or changes the counter.", result: "summaries",
    inputSchema: { type: "object", properties: { action: { type: "string" } } },
    actions: [{ name: "get" }, { name: "increment", permissions: ["change"] }, { name: "reset", permissions: ["deletes-saved"] }],
  }, {
    name: "notes", title: "Notes", description: "Lists, adds or clears notes.", result: "cells",
    inputSchema: { type: "object", properties: { action: { type: "string" } } },
    actions: [{ name: "list" }, { name: "add", permissions: ["change"] }, { name: "clear", permissions: ["deletes-saved"] }],
  }],`,
		`let counter = 5;
window.increments = 0;
window.noteReads = 0;
const permissions = createPermissions({ app });
const client = connect({
  relay,
  app,
  permissions,
  handlers: {
    counter: {
      get: () => ({ counter }),
      increment: (call) => { counter++; window.increments++; call.step(); return { counter }; },
      reset: (call) => { counter = 0; call.step(); return { counter }; },
    },
    notes: {
      list: () => { window.noteReads++; return { notes: ["a secret cell"] }; },
      add: () => ({ ok: true }),
      clear: () => ({ ok: true }),
    },
  },
});
document.querySelector("tabrelay-permissions").permissions = permissions;
document.querySelector("tabrelay-data-switch").permissions = permissions;
`)
}

// TestChromiumPermissionSettings: the person's choices in
// <tabrelay-permissions> and <tabrelay-data-switch> decide a host's calls.
// Read only (clicked) refuses an increment with a sentence and runs
// nothing; change set back to Allow (Custom) lets it run; the data switch
// refuses the cells tool with a sentence while a summaries tool runs, and
// the host's tools/list says the cells tool is refused.
func TestChromiumPermissionSettings(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	page := chromium(t)
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	pageOrigin, pageURL := appPage(t, settingsPage(relayURL))
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin+","+origin)
	if err := chromedp.Do(page, chromedp.Navigate(pageURL)); err != nil {
		t.Fatal(err)
	}
	waitState(t, page, "connected")

	c := approvedHost(t, page, relayURL, `[{ tool: "counter" }, { tool: "notes" }]`)

	call := func(tool, action string) (text string, isError bool) {
		t.Helper()
		rep := c.send("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"action": action}}, false, nil)
		if rep.err != nil {
			t.Fatalf("tools/call %s %s: %v", tool, action, rep.err)
		}
		return fmt.Sprint(rep.result["content"]), rep.result["isError"] == true
	}
	click := func(selector string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(page, patience)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
			t.Fatalf("click %s: %v", selector, err)
		}
	}
	checked := func(selector string) bool {
		t.Helper()
		on, err := chromedp.Run(page, chromedp.Evaluate[bool](`!!document.querySelector(`+jsString(selector)+`)?.checked`))
		if err != nil {
			t.Fatal(err)
		}
		return on
	}
	count := func(name string) int {
		t.Helper()
		n, err := chromedp.Run(page, chromedp.Evaluate[int](`window.`+name))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	const settings = "tabrelay-permissions "

	// The default mode is shown checked, and the kinds the app uses.
	if !checked(settings+`input[data-mode="ask-heavy-irreversible"]`) || !checked(settings+`input[data-kind="change"][data-setting="allow"]`) {
		t.Fatal("the settings do not show the default mode")
	}
	if n, _ := chromedp.Run(page, chromedp.Evaluate[int](`document.querySelectorAll("tabrelay-permissions fieldset[data-kind]").length`)); n != 2 {
		t.Fatalf("%d kinds shown; want change and deletes-saved, the kinds the app uses", n)
	}

	// (a) Read only, clicked: the increment is refused with a sentence, and runs nothing.
	click(settings + `input[data-mode="read-only"]`)
	if !checked(settings + `input[data-kind="change"][data-setting="deny"]`) {
		t.Fatal("after Read only, change is not shown as Deny")
	}
	if text, isErr := call("counter", "increment"); !isErr || !strings.Contains(text, "refuse changes") {
		t.Fatalf("increment in Read only: %q (error %v); want the refusal sentence", text, isErr)
	}
	if n := count("increments"); n != 0 {
		t.Fatalf("Read only ran %d increments", n)
	}

	// (b) change back to Allow: Custom, and the increment runs.
	click(settings + `input[data-kind="change"][data-setting="allow"]`)
	if !checked(settings+`input[data-mode="custom"]`) || checked(settings+`input[data-mode="read-only"]`) {
		t.Fatal("the settings that match no mode are not shown as Custom")
	}
	if text, isErr := call("counter", "increment"); isErr || !strings.Contains(text, `"counter":6`) {
		t.Fatalf("increment with change allowed: %q (error %v)", text, isErr)
	}

	// (c) The data switch: the cells tool is refused with a sentence and
	// listed as refused; the summaries tool runs.
	click("tabrelay-data-switch input")
	if text, isErr := call("notes", "list"); !isErr || !strings.Contains(text, "names and summaries only") || strings.Contains(text, "a secret cell") {
		t.Fatalf("notes list with the data switch on: %q (error %v); want the refusal sentence", text, isErr)
	}
	if n := count("noteReads"); n != 0 {
		t.Fatalf("the data switch let notes run %d times", n)
	}
	if text, isErr := call("counter", "get"); isErr || !strings.Contains(text, `"counter":6`) {
		t.Fatalf("counter get with the data switch on: %q (error %v)", text, isErr)
	}
	descriptions := map[string]string{}
	eventually(t, func() bool {
		rep := c.send("tools/list", map[string]any{}, false, nil)
		tools, _ := rep.result["tools"].([]any)
		for _, tool := range tools {
			m, _ := tool.(map[string]any)
			name, _ := m["name"].(string)
			descriptions[name], _ = m["description"].(string)
		}
		return strings.Contains(descriptions["notes"], "refused")
	}, "tools/list to list notes as refused")
	if d := descriptions["counter"]; strings.Contains(d, "refused") || !strings.Contains(d, "runs without asking") {
		t.Fatalf("tools/list says of counter: %q; want it runs", d)
	}

	// The keyboard: Space picks the focused mode, an arrow key the next one.
	ctx, cancel := context.WithTimeout(page, patience)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(settings+`input[data-mode="ask-heavy-irreversible"]`)),
		chromedp.KeyEvent(" "),
		chromedp.KeyEvent(kb.ArrowDown),
	); err != nil {
		t.Fatalf("keys: %v", err)
	}
	if !checked(settings+`input[data-mode="allow-undoable"]`) || !checked(settings+`input[data-kind="deletes-saved"][data-setting="ask"]`) {
		t.Fatal("Space and ArrowDown did not pick Allow everything undoable")
	}
}

// approvedHost registers an MCP host with the relay, has the page's client
// approve its connect code with scope (a JavaScript array) as the person
// would, and returns the host's MCP client with its token.
func approvedHost(t *testing.T, page context.Context, relayURL, scope string) *mcpClient {
	t.Helper()
	return approvedHostIn(t, cdpTab{page}, relayURL, scope)
}

// approvedHostIn is approvedHost in a tab of any engine.
func approvedHostIn(t *testing.T, tab engineTab, relayURL, scope string) *mcpClient {
	t.Helper()
	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	if approved := evalAs[string](t, tab, `window.tabrelayClient.approve(`+jsString(f.code)+`, `+scope+`).then((c) => c.client)`); approved != "E2E Host" {
		t.Fatalf("approve in the page: %q", approved)
	}
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	return &mcpClient{t: t, url: relayURL + "/", token: tokens["access_token"].(string)}
}
