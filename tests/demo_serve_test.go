package tests

import (
	"context"
	"html"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// demoEnv is what `make run` gives `tabrelay serve` beyond the ports and
// data directory (the Makefile's RUN_ENV): the demo on, the embedded demo
// bundle, and no ALLOWED_ORIGINS or APP_URL, which follow the listener.
var demoEnv = []string{"RELAY_DEMO=true", "RELAY_BUNDLE=demo", "ALLOWED_ORIGINS="}

// TestServeDemoFollowsTheListener: as `make run` starts it on a port of
// its own, the relay prints where a person and a host go, serves the demo
// there, accepts the demo's tabs from that origin (and localhost's), and
// its waiting page links into the demo.
func TestServeDemoFollowsTheListener(t *testing.T) {
	listen := freePort(t)
	p := startServe(t, listen, freePort(t), t.TempDir(), demoEnv...)
	eventually(t, func() bool { return strings.Contains(p.stdout.String(), "server URL") }, "the relay prints its URLs")
	out := p.stdout.String()
	for _, want := range []string{
		"Open the demo app in a browser:  http://" + listen + "/demo/\n",
		"Give an MCP host this server URL: http://" + listen + "/\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout %q lacks %q", out, want)
		}
	}

	resp, err := http.Get(p.url + "/demo/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<title>Notes board") {
		t.Fatalf("GET /demo/: %d %.200s", resp.StatusCode, body)
	}

	port := listen[strings.LastIndex(listen, ":")+1:]
	for origin, want := range map[string]int{
		"http://" + listen:             http.StatusSwitchingProtocols,
		"http://localhost:" + port:     http.StatusSwitchingProtocols,
		"http://127.0.0.1:1":           http.StatusForbidden,
		"https://evil.example:" + port: http.StatusForbidden,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, resp, err := websocket.Dial(ctx, "ws://"+listen+"/tab", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		cancel()
		if c != nil {
			c.CloseNow()
		}
		if resp == nil || resp.StatusCode != want {
			t.Errorf("a tab from %s: %v %v, want %d", origin, resp, err, want)
		}
	}

	h := newHost(t, p.url)
	h.register()
	f := h.authorize()
	link := "http://" + listen + "/demo/#tabrelay-connect=" + f.code
	if !strings.Contains(html.UnescapeString(f.page), `href="`+link+`"`) {
		t.Fatalf("the waiting page does not link to %s:\n%s", link, f.page)
	}
}
