package tests

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAHostsBytesThatAreNoUTF8NeverCutATabsSocket: a WebSocket's text
// frame must be UTF-8, and a browser fails the whole connection on one
// that is not (RFC 6455 §8.1). JSON's strings reach Go's decoder as
// bytes, and a host's arguments went to the tab as the bytes it sent: a
// string holding "\xff" made the relay write a frame the browser
// refused, cutting the tab's socket, every other call on it with it, and
// again on every retry. Arguments reach the tab as what the relay
// decoded and checked, with such bytes as U+FFFD (what the official SDKs'
// servers and JavaScript's own decoding make of them).
func TestAHostsBytesThatAreNoUTF8NeverCutATabsSocket(t *testing.T) {
	inEachEngine(t, func(t *testing.T, e *engine) {
		listen, admin, data := freePort(t), freePort(t), t.TempDir()
		relayURL := "http://" + listen
		pageOrigin, pageURL := appPage(t, echoPage(relayURL))
		startServe(t, listen, admin, data, "ALLOWED_ORIGINS="+pageOrigin+","+origin)
		tab := openTab(t, e, pageURL)
		waitStateIn(t, tab, "connected")
		c := hostApprovedInPage(t, tab, relayURL)

		// The body as the host wrote it: the marker's bytes replaced by
		// ones that are no UTF-8 (an encoder in Go would have mended them).
		raw := func(from, to string) func(*http.Request) {
			return func(req *http.Request) {
				body, _ := io.ReadAll(req.Body)
				body = bytes.Replace(body, []byte(from), []byte(to), 1)
				req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
		}
		for _, bad := range []string{"a\xffb", "\xc3(", "\xed\xa0\x80"} {
			rep := c.send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"value": "MARKER"}}, false, raw("MARKER", bad))
			text := ""
			if content, ok := rep.result["content"].([]any); ok && len(content) > 0 {
				text, _ = content[0].(map[string]any)["text"].(string)
			}
			if rep.err != nil || rep.result["isError"] == true || !strings.Contains(text, "the page") || !strings.Contains(text, "\ufffd") {
				t.Fatalf("echo of %q: %d %v %v, want the page's answer with U+FFFD", bad, rep.status, rep.err, rep.result)
			}
		}
		if state := evalAs[string](t, tab, `window.tabrelayStatus.state`); state != "connected" {
			t.Fatalf("the tab is %s after the calls, want connected (its socket never cut)", state)
		}
		if runs := evalAs[int](t, tab, `window.runs.length`); runs != 3 {
			t.Fatalf("the page ran %d calls, want 3", runs)
		}
	})
}
