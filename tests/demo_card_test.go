package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// cardHostScript bundles web/demo/test/card-host.ts (an MCP Apps host's
// side: the ext-apps package's AppBridge) with the demo's pinned esbuild,
// which scripts/web-test.sh installs, and returns the script.
func cardHostScript(t *testing.T) string {
	t.Helper()
	demo, _ := filepath.Abs(filepath.Join("..", "web", "demo"))
	esbuild := filepath.Join(demo, "node_modules", "esbuild", "bin", "esbuild")
	if _, err := os.Stat(esbuild); err != nil {
		t.Fatalf("the demo's dev dependencies are not installed (make test runs scripts/web-test.sh, which installs them): %v", err)
	}
	out := filepath.Join(t.TempDir(), "card-host.js")
	cmd := exec.Command(esbuild, filepath.Join("test", "card-host.ts"), "--bundle", "--format=esm", "--outfile="+out, "--log-level=warning")
	cmd.Dir = demo
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bundle the card's host: %v\n%s", err, b)
	}
	js, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// TestDemoViewCardInAnAppsHost: the demo's view card (ui://notes/board,
// read from the relay as a host does) in an iframe under the ext-apps
// package's own host side. It shows board_picture's picture, Refresh
// calls board_picture through the host (whose backend calls the relay
// with its token) and shows the new board, and Open in the app asks the
// host to open the demo's page.
func TestDemoViewCardInAnAppsHost(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	browser := chromium(t)
	p, demoURL := demoServe(t)
	h := connectDemo(t, browser, p.url, []string{"board_picture", "write_note"}, nil)

	// The card as the relay serves it, and the result it is shown with.
	read := h.read("ui://notes/board")
	contents, _ := read.Result["contents"].([]any)
	if !read.OK || len(contents) != 1 {
		t.Fatalf("resources/read ui://notes/board: %s %v", read.Error, read.Result)
	}
	card, _ := contents[0].(map[string]any)
	html, _ := card["text"].(string)
	if card["mimeType"] != "text/html;profile=mcp-app" || !strings.Contains(html, "<html") {
		t.Fatalf("the card: %v, %d characters", card["mimeType"], len(html))
	}
	first := h.call("board_picture", map[string]any{"width": 320})
	if first.isError() {
		t.Fatalf("board_picture: %s %s", first.Error, first.text())
	}

	// The host: a page of its own origin; its backend (the TypeScript
	// client, holding the connection) takes the card's tool calls to the
	// relay.
	script := cardHostScript(t)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>An MCP Apps host</title></head><body><script type="module" src="/host.js"></script></body></html>`)
		case r.Method == http.MethodGet && r.URL.Path == "/host.js":
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, script)
		case r.Method == http.MethodPost && r.URL.Path == "/call":
			var params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			}
			if json.NewDecoder(r.Body).Decode(&params) != nil {
				http.Error(w, "not JSON", http.StatusBadRequest)
				return
			}
			rep := h.call(params.Name, params.Arguments)
			if !rep.OK {
				http.Error(w, rep.Error, http.StatusBadGateway)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(rep.Result)
		default:
			http.NotFound(w, r)
		}
	}))
	defer host.Close()

	tab, closeTab := chromedp.NewContext(browser)
	defer closeTab()
	ctx, cancel := context.WithTimeout(tab, patience)
	defer cancel()
	firstJSON, _ := json.Marshal(first.Result)
	if err := chromedp.Do(ctx, chromedp.Navigate(host.URL+"/")); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		ok, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.showCard === "function"`))
		return ok
	}, "the host page is ready")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.showCard(`+jsString(html)+`, `+string(firstJSON)+`).then(() => true)`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("show the card: %v", err)
	}
	inCard := func(expr string) string {
		v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const d = document.querySelector("iframe").contentDocument; return String(`+expr+`); })()`))
		return v
	}
	var status string
	eventually(t, func() bool {
		status = inCard(`d.getElementById("status").textContent`)
		return strings.HasPrefix(inCard(`d.getElementById("picture").src`), "data:image/png") && strings.Contains(status, "notes")
	}, "the card shows the board's picture (its status: %q)", status)
	before := status

	// A note more, then Refresh: the card calls board_picture through its host.
	if rep := h.call("write_note", map[string]any{"action": "add", "title": "Drawn after a refresh"}); rep.isError() {
		t.Fatalf("write_note: %s %s", rep.Error, rep.text())
	}
	inCard(`d.getElementById("refresh").click()`)
	eventually(t, func() bool {
		status = inCard(`d.getElementById("status").textContent`)
		return status != before && strings.Contains(status, "notes")
	}, "Refresh shows the board anew (its status: %q, before %q)", status, before)
	if calls, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.cardHost.calls`)); len(calls) != 1 || calls[0] != "board_picture" {
		t.Fatalf("the card's calls through its host: %v, want one board_picture", calls)
	}
	if e := inCard(`d.getElementById("error").textContent`); e != "" {
		t.Fatalf("the card shows an error: %s", e)
	}

	inCard(`d.getElementById("open").click()`)
	var opened []string
	eventually(t, func() bool {
		opened, _ = chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.cardHost.opened`))
		return len(opened) == 1
	}, "Open in the app asks the host to open a link")
	if !strings.HasPrefix(opened[0], demoURL) {
		t.Fatalf("Open in the app asked for %q, want the demo's page %s", opened[0], demoURL)
	}
}
