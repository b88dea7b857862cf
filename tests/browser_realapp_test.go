package tests

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The SDK in a real app's conditions (issue 26), in Chromium: a page
// under a Content-Security-Policy without 'unsafe-inline', and an app
// whose relay is down when the page loads.

// TestDemoStyledUnderAStrictCSP: the demo, whose policy is style-src
// 'self' (no 'unsafe-inline'), shows the SDK's six elements styled by
// their own rules — the rules the relay-served stylesheet would give —
// and the browser reports no violation of the policy; an element in a
// shadow root is styled too (its root adopts the sheet). With the
// elements' former inline <style>s every one was blocked: the elements
// stayed inline, unpadded, and six violations were reported.
func TestDemoStyledUnderAStrictCSP(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	_, url := demoServe(t)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "style-src 'self';") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("the demo's policy %q: want style-src 'self' and no 'unsafe-inline'", csp)
	}
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	// Before the page's own scripts: every violation of its policy, counted.
	const record = `window.violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.violations.push(e.violatedDirective + " " + e.blockedURI));`
	onNewDocument := chromedp.Action[chromedp.Void](func(ctx context.Context, tgt *chromedp.Target) (chromedp.Void, error) {
		return chromedp.Void{}, tgt.Call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": record}, nil)
	})
	if err := chromedp.Do(ctx, onNewDocument, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	waitDemoConnected(t, ctx)
	// The page's own style.css sets the --tabrelay-* properties; only the
	// SDK's rules turn them into these values.
	styles, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`(() => {
  const css = (sel, prop) => { const e = document.querySelector(sel); return e ? getComputedStyle(e)[prop] : "missing"; };
  return {
    connect: css("tabrelay-connect", "display"), connectPadding: css("tabrelay-connect", "paddingTop"),
    lookupRadius: css("tabrelay-connect button[data-part=lookup]", "borderTopLeftRadius"),
    connections: css("tabrelay-connections", "display"), confirm: css("tabrelay-confirm", "display"),
    activity: css("tabrelay-activity", "display"), dataSwitch: css("tabrelay-data-switch", "display"),
    permissions: css("tabrelay-permissions", "display"),
    legendRadius: css("tabrelay-permissions fieldset", "borderTopLeftRadius"),
    // In a shadow root, which the document's adopted sheets do not reach: the root adopts its own.
    shadowSwitch: (() => {
      const host = document.body.appendChild(document.createElement("div"));
      const sw = host.attachShadow({ mode: "open" }).appendChild(document.createElement("tabrelay-data-switch"));
      const shown = getComputedStyle(sw).display;
      host.remove();
      return shown;
    })(),
    inlineStyles: String(document.querySelectorAll("style").length),
    violations: window.violations.join("; "),
  };
})()`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"connect": "block", "connectPadding": "12px", "lookupRadius": "8px", "connections": "block", "confirm": "grid",
		"activity": "block", "dataSwitch": "block", "permissions": "block", "legendRadius": "8px", "shadowSwitch": "block",
		"inlineStyles": "0", "violations": "",
	}
	for k, v := range want {
		if styles[k] != v {
			t.Errorf("%s: %q, want %q", k, styles[k], v)
		}
	}
}

// todoApp is an app's own code: it lists its todos in #todos, whatever
// the relay does.
const todoApp = `document.getElementById("todos").replaceChildren(...["milk", "bread"].map((t) => Object.assign(document.createElement("li"), { textContent: t })));
`

// todoTools is the app's declaration, a plain object (tabrelay-bundle
// reads it as it reads defineApp's value).
const todoTools = `{ version: "probe-1", app: { name: "probe", title: "Probe" }, instructions: "A test page.",
  tools: [{ name: "echo", description: "Answers with its arguments.", inputSchema: { type: "object", properties: { value: {} } }, result: "summaries" }] }`

// appSite serves files (path to body; JavaScript unless the path is /)
// on an origin of its own.
func appSite(t testing.TB, files map[string]string) (origin string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ctype := "text/javascript; charset=utf-8"
		if r.URL.Path == "/" || strings.HasSuffix(r.URL.Path, ".html") {
			ctype = "text/html; charset=utf-8"
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// todoPage is the page around a module script: a status line and the
// app's todo list.
func todoPage(head, script string) string {
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>todo</title>` + head + `</head>
<body><p id="status" role="status">starting</p><ul id="todos"></ul>
<script type="module">
` + script + `</script></body></html>`
}

// waitText waits until the element sel of the page says text.
func waitText(t *testing.T, ctx context.Context, sel, text string) {
	t.Helper()
	var got string
	eventually(t, func() bool {
		got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+jsString(sel)+`) || {}).textContent || ""`))
		return got == text
	}, "%s says %q (it says %q)", sel, text, got)
}

// relayDownPages are the todo app's three pages for relay (where the
// relay is, or will be): bundled.html imports the SDK from the app's own
// origin (/tabrelay.js, as a bundle holds it), dynamic.html from the
// relay with import() in a try, static.html with a static import (and
// records that a script failed to load).
func relayDownPages(t *testing.T, relay string) map[string]string {
	t.Helper()
	sdkModule, err := os.ReadFile("../web/sdk/dist/tabrelay.js")
	if err != nil {
		t.Fatal(err)
	}
	connectScript := `const tab = connect({ relay: "` + relay + `", app, handlers: { echo: (call) => call.arguments } });
tab.onStatus((s) => { window.tabrelayStatus = s; document.getElementById("status").textContent = s.state; });
`
	importMap := `<script type="importmap">{ "imports": { "@tabrelay/tab": "` + relay + `/sdk/v1/tabrelay.js" } }</script>`
	return map[string]string{
		"/bundled.html": todoPage("", `import { connect, defineApp } from "./tabrelay.js";
`+todoApp+`const app = defineApp(`+todoTools+`);
`+connectScript),
		"/tabrelay.js": string(sdkModule),
		"/dynamic.html": todoPage(importMap, `import { app } from "./tools.js";
`+todoApp+`try {
  const { connect } = await import("@tabrelay/tab");
  `+connectScript+`} catch {
  document.getElementById("status").textContent = "relay unreachable";
}
`),
		"/tools.js": "export const app = " + todoTools + ";\n",
		"/static.html": todoPage(importMap+`<script>addEventListener("error", () => (window.scriptFailed = true), true);</script>`, `import { connect } from "@tabrelay/tab";
import { app } from "./tools.js";
`+todoApp+connectScript),
	}
}

// TestAppRunsWithTheRelayDown: the README's two ways of loading the SDK
// keep an app running when its relay is down at page load. Bundled with
// the app (the SDK's module from the app's own origin, as a bundler puts
// it), the app lists its todos and the status says reconnecting, and once
// the relay is up the tab connects. Loaded from the relay with a dynamic
// import, the app lists its todos and the status says "relay unreachable".
// The static import from the relay the README showed before leaves the
// app's script unrun: no todos.
func TestAppRunsWithTheRelayDown(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	listen, admin := freePort(t), freePort(t)
	relay := "http://" + listen // nothing listens there yet
	site := appSite(t, relayDownPages(t, relay))
	open := func(path string) context.Context {
		ctx, cancel := chromedp.NewContext(browser)
		t.Cleanup(cancel)
		if err := chromedp.Do(ctx, chromedp.Navigate(site+path)); err != nil {
			t.Fatal(err)
		}
		return ctx
	}
	todos := func(ctx context.Context) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#todos li").length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	bundled := open("/bundled.html")
	waitState(t, bundled, "reconnecting")
	if n := todos(bundled); n != 2 {
		t.Fatalf("bundled, relay down: the app lists %d todos, want 2", n)
	}
	dynamic := open("/dynamic.html")
	waitText(t, dynamic, "#status", "relay unreachable")
	if n := todos(dynamic); n != 2 {
		t.Fatalf("dynamic import, relay down: the app lists %d todos, want 2", n)
	}
	static := open("/static.html")
	eventually(t, func() bool {
		failed, _ := chromedp.Run(static, chromedp.Evaluate[bool](`window.scriptFailed === true`))
		return failed
	}, "the static import from a relay that is down fails")
	if n := todos(static); n != 0 {
		t.Fatalf("the static import from a relay that is down ran the app's script (%d todos): this test could not tell the difference", n)
	}

	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+site+","+origin)
	// The online event ends the tab's wait before its next try (§15).
	if _, err := chromedp.Run(bundled, chromedp.Evaluate[bool](`dispatchEvent(new Event("online"))`)); err != nil {
		t.Fatal(err)
	}
	waitState(t, bundled, "connected")
	// Loaded again with the relay up, the dynamic import connects.
	if err := chromedp.Do(dynamic, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitState(t, dynamic, "connected")
}
