package tests

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tabrelay/tabrelay/livecheck"
)

// The browser tests drive Debian's Chromium (scripts/ensure-deps.sh
// installs it), headless, with a profile of its own per test, through
// chromedp. Pages are served by the test on a loopback origin of their
// own, which the relay allows; they load the tab SDK from the relay's
// /sdk/ path as an app would.
//
// Every browser test is parallel (t.Parallel; inEachEngine calls it), as
// are the few other tests that mostly wait on a real timer (the person's
// late answer, a server's timeout): go test runs the parallel tests after
// the others, at most -parallel of them at once (GOMAXPROCS by default:
// two on a machine of two cores). Such a test spends most of its time
// waiting (on the browser, on a relay's timer, on a moment of its
// scenario) and has its own browser, profile, relay and ports, so two of
// them share the machine without sharing anything else. A test that
// measures the whole process (goroutines, heap: hostile_test.go), changes
// its environment, or asserts how long something took is not parallel,
// and so never runs beside one.

// chromium starts a headless Chromium and returns the context of its
// first page. It ends with the test.
func chromium(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is missing: make test installs it (scripts/ensure-deps.sh), or apt-get install chromium")
	}
	// This machine's network is closed: the options let Chromium call out nowhere.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), livecheck.ChromiumOptions(path, t.TempDir())...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// appPage serves one HTML page at / on an origin of its own.
func appPage(t testing.TB, html string) (origin, url string) {
	t.Helper()
	return appPageOf(t, func() string { return html })
}

// appPageOf serves the page html() makes at each request: for a page whose
// origin must be known before what it shows (the relay's URL) is.
func appPageOf(t testing.TB, html func() string) (origin, url string) {
	t.Helper()
	return appPageAt(t, "127.0.0.1", html)
}

// appPageAt is appPageOf on the address host.
func appPageAt(t testing.TB, host string, html func() string) (origin, url string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, html())
	}))
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, srv.URL + "/"
}

// sdkPage is a test app page on the probe bundle's app: elements (HTML),
// then one module script that imports connect and defineApp from the
// relay's SDK, then imports (more import lines), declares app with tools
// (a JS array), and runs script, which makes client (relay is in scope).
// The page shows its client's status and keeps it in
// window.tabrelayStatus, and the client in window.tabrelayClient.
func sdkPage(relay, title, elements, imports, tools, script string) string {
	return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>` + title + `</title></head>
<body><p id="status" role="status">starting</p>
` + elements + `<script type="module">
import { connect, defineApp } from "` + relay + `/sdk/v1/tabrelay.js";
` + imports + `const relay = "` + relay + `";
const app = defineApp({ version: "probe-1", app: { name: "probe", title: "Probe" }, instructions: "A test page.",
  tools: ` + tools + ` });
` + script + `client.onStatus((s) => { window.tabrelayStatus = s; document.getElementById("status").textContent = s.state; });
window.tabrelayClient = client;
</script></body></html>`
}

// echoPage is an app page with one tool, echo (the probe bundle's), that
// connects to relay with the SDK the relay serves, and the Connect panel
// of its UI module. window.runs lists the ids of the calls it ran;
// window.tabrelayStatus is the client's status.
func echoPage(relay string) string {
	return sdkPage(relay, "echo", `<tabrelay-connect></tabrelay-connect>
`, `import "`+relay+`/sdk/v1/tabrelay-ui.js";
`,
		`[{ name: "echo", description: "Answers with its arguments.", inputSchema: { type: "object", properties: { value: {} } }, result: "summaries" }],`,
		`window.runs = [];
const client = connect({
  relay,
  app,
  handlers: { echo: (call) => { window.runs.push(call.id); return { echoed: call.arguments, by: "the page" }; } },
});
const panel = document.querySelector("tabrelay-connect");
panel.app = app;
panel.client = client;
`)
}

// waitState waits until the page's client reports state.
func waitState(t testing.TB, ctx context.Context, state string) {
	t.Helper()
	var got string
	eventually(t, func() bool {
		var err error
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(window.tabrelayStatus || {}).state || ""`))
		return err == nil && got == state
	}, "the page's client %s (it is %q)", state, got)
}

// TestBrowserTabAnswersACall is the SDK in a real browser, in each
// engine: a page that loads it from the relay connects, the person
// approves a host's connection in the page's Connect panel, the page
// answers the host's tools/call, and when the relay restarts under it the
// page reconnects by itself and answers again.
func TestBrowserTabAnswersACall(t *testing.T) {
	inEachEngine(t, func(t *testing.T, e *engine) {
		listen, admin, data := freePort(t), freePort(t), t.TempDir()
		relayURL := "http://" + listen
		pageOrigin, pageURL := appPage(t, echoPage(relayURL))
		allowed := "ALLOWED_ORIGINS=" + pageOrigin + "," + origin
		p := startServe(t, listen, admin, data, allowed)
		tab := openTab(t, e, pageURL)
		waitStateIn(t, tab, "connected")

		c := hostApprovedInPage(t, tab, relayURL)
		answeredByPage := func(value string) {
			t.Helper()
			rep := c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": value}}, false, nil)
			text := fmt.Sprint(rep.result["content"])
			if rep.err != nil || rep.result["isError"] == true || !strings.Contains(text, "the page") || !strings.Contains(text, value) {
				t.Fatalf("tools/call echo: %d %v %v", rep.status, rep.err, rep.result)
			}
		}
		answeredByPage("first")

		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
		waitStateIn(t, tab, "reconnecting")
		startServe(t, listen, admin, data, allowed)
		waitStateIn(t, tab, "connected")
		answeredByPage("second")

		if runs := evalAs[int](t, tab, `window.runs.length`); runs != 2 {
			t.Fatalf("the page ran %d calls, want 2", runs)
		}
	})
}

// hostApprovedInPage is a host's MCP client of relayURL, whose connection
// the person approved in tab: the waiting page's code typed into its
// Connect panel, which shows who asks before they choose (approveInPage).
func hostApprovedInPage(t *testing.T, tab engineTab, relayURL string) *mcpClient {
	t.Helper()
	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	approveInPage(t, tab, f.code)
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	return &mcpClient{t: t, url: relayURL + "/", token: tokens["access_token"].(string)}
}

// approveInPage types code into the page's <tabrelay-connect>, checks that
// it names the host's client (a self-registered one: it "calls itself"
// so) with nothing ticked, ticks echo and approves.
func approveInPage(t *testing.T, tab engineTab, code string) {
	t.Helper()
	approveToolInPage(t, tab, code, "echo")
}

// approveToolInPage is approveInPage with tool ticked instead of echo.
func approveToolInPage(t *testing.T, tab engineTab, code, tool string) {
	t.Helper()
	const panel = "tabrelay-connect "
	waitTrue(t, tab, visible(panel+"input[name=code]"), "the Connect panel's code field")
	if err := tab.typeText(panel+"input[name=code]", code); err != nil {
		t.Fatalf("type the code into the Connect panel: %v", err)
	}
	if err := tab.click(panel + "button[data-part=lookup]"); err != nil {
		t.Fatalf("press Continue in the Connect panel: %v", err)
	}
	waitTrue(t, tab, visible(panel+"[data-part=client]"), "the Connect panel shows who asks")
	text := func(css string) string {
		return evalAs[string](t, tab, `document.querySelector(`+jsString(panel+css)+`).textContent.trim()`)
	}
	if who, identity := text("[data-part=client]"), text("[data-part=identity]"); who != "E2E Host" || !strings.Contains(identity, "calls itself") {
		t.Fatalf("the Connect panel shows %q / %q, want the host's client E2E Host, calling itself so", who, identity)
	}
	box := "input[data-tool=" + tool + "]"
	if evalAs[bool](t, tab, `document.querySelector(`+jsString(panel+box)+`).checked`) {
		t.Fatalf("%s is ticked before the person chose: the host asked for nothing", tool)
	}
	// A typed code: the panel cannot tell who gets the connection, says
	// where the request started, and asks a second time.
	for _, css := range []string{box, "button[data-part=approve]"} {
		if err := tab.click(panel + css); err != nil {
			t.Fatalf("click %s in the Connect panel: %v", css, err)
		}
	}
	waitTrue(t, tab, visible(panel+"[data-part=approve-typed]"), "the Connect panel asks a second time")
	if warning, provenance := text("[data-part=warning]"), text("[data-part=provenance]"); !strings.Contains(warning, "cannot tell who will get this connection") ||
		!strings.Contains(provenance, "The request was started at") {
		t.Fatalf("a typed code's panel says %q / %q", warning, provenance)
	}
	if err := tab.click(panel + "button[data-part=approve-typed]"); err != nil {
		t.Fatalf("answer the second question in the Connect panel: %v", err)
	}
	waitTrue(t, tab, visible(panel+"[data-part=undo]"), lazy(func() string {
		var alert string
		tab.eval(`document.querySelector("tabrelay-connect [role=alert]")?.textContent || ""`, &alert)
		return "the Connect panel approved (it says " + strconv.Quote(alert) + ")"
	}))
	if result := text("[data-part=result]"); !strings.Contains(result, "E2E Host") || !strings.Contains(result, "is connected") {
		t.Fatalf("the Connect panel's result: %q", result)
	}
}
