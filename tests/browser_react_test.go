package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The React example (web/examples/react, issue 26 item 6) in Chromium: its
// built page, served from an origin of its own, connects to a real relay
// that loads the example's bundle.json, the person approves a host in the
// page's <tabrelay-connect> (which React handed its client as a
// property), and the host's tools/call is answered by the component that
// registered the tool with useToolHandler: the todo it adds shows in the
// page, and the next call is answered by the handler of the next render,
// which sees the component's new state.
func TestReactExampleAnswersACall(t *testing.T) {
	t.Parallel() // a browser test: see browser_test.go
	dir := filepath.Join("..", "web", "examples", "react")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the React example's %s: %v (npm run build in %s)", name, err, dir)
		}
		return string(b)
	}
	bundle, err := filepath.Abs(filepath.Join(dir, "bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	listen, admin := freePort(t), freePort(t)
	relayURL := "http://" + listen
	page := strings.Replace(read("index.html"), "</head>", `<meta name="tabrelay-relay" content="`+relayURL+`">
</head>`, 1)
	pageOrigin := appSite(t, map[string]string{"/": page, "/dist/app.js": read("dist/app.js")})
	startServe(t, listen, admin, t.TempDir(), "ALLOWED_ORIGINS="+pageOrigin, "RELAY_BUNDLE="+bundle)

	tab := openTab(t, startChromium(t), pageOrigin+"/")
	waitTrue(t, tab, `document.querySelector("#status")?.dataset.state === "connected"`, "the React page's client connected")

	h := newHost(t, relayURL)
	h.register()
	f := h.authorize()
	approveToolInPage(t, tab, f.code, "add_todo")
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	c := &mcpClient{t: t, url: relayURL + "/", token: tokens["access_token"].(string)}

	add := func(title string, count int) {
		t.Helper()
		rep := c.send("tools/call", map[string]any{"name": "add_todo", "arguments": map[string]any{"title": title}}, false, nil)
		text := fmt.Sprint(rep.result["content"])
		if rep.err != nil || rep.result["isError"] == true || !strings.Contains(text, title) || !strings.Contains(text, fmt.Sprintf(`"count":%d`, count)) {
			t.Fatalf("tools/call add_todo %q: %d %v %v, want count %d", title, rep.status, rep.err, rep.result, count)
		}
		waitTrue(t, tab, `document.querySelector("#todos").textContent.includes(`+jsString(title)+`)`, "the page lists the todo the agent added")
	}
	// The page starts with one todo: the first call makes two, and the
	// second is answered by the handler of the render after the first,
	// which sees the two.
	add("Buy oat milk", 2)
	add("Call the plumber", 3)
	if got := evalAs[int](t, tab, `document.querySelectorAll("#todos li").length`); got != 3 {
		t.Fatalf("the page lists %d todos, want 3 (its first and the agent's two)", got)
	}
}
