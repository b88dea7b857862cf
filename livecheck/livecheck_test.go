package livecheck

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	r := &reporter{}
	r.secret("KQ7M-2XDP")
	r.secret("s3cretVerifierValue0123456789abcdefghijklmno")
	for _, tc := range []struct{ name, in, want string }{
		{"a registered secret", "the code KQ7M-2XDP was used", "the code … was used"},
		{"a token by its prefix", "Bearer tra_AbC123-_x and trr_zz9", "Bearer … and …"},
		{"a URL's secret parameters", "GET /cb?code=abc&state=def&iss=http://x", "GET /cb?code=…&state=…&iss=http://x"},
		{"the fragment of an approval link", "http://app/#tabrelay-connect=ABCD-EFGH", "http://app/#tabrelay-connect=…"},
		{"a verifier inside words", "verifier s3cretVerifierValue0123456789abcdefghijklmno!", "verifier …!"},
		{"lines become one", "one\ntwo\t three", "one two three"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.redact(tc.in); got != tc.want {
				t.Fatalf("redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"https://relay.example.com", "https://relay.example.com", true},
		{"https://relay.example.com/", "https://relay.example.com", true},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"", "", false},
		{"relay.example.com", "", false},
		{"https://relay.example.com/mcp", "", false},
		{"https://relay.example.com/?x=1", "", false},
		{"ftp://relay.example.com", "", false},
	} {
		got, err := origin(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("origin(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestPathOfNamesNoSecret(t *testing.T) {
	for in, want := range map[string]string{
		"http://r/token":                      "/token",
		"http://r/authorize?code_challenge=x": "/authorize",
		"http://r/authorize/status/req_abc":   "/authorize/status/…",
		"http://r":                            "/",
	} {
		if got := pathOf(in); got != want {
			t.Errorf("pathOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSSEAnswer(t *testing.T) {
	stream := ": keep-alive\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n" +
		"data: \"result\":{\"content\":[]}}\n\n"
	got := sseAnswer([]byte(stream), 7)
	if !strings.Contains(string(got), `"result"`) {
		t.Fatalf("sseAnswer found %q", got)
	}
	if sseAnswer([]byte(stream), 8) != nil {
		t.Fatal("sseAnswer found an answer to another id")
	}
}

func TestTaggedData(t *testing.T) {
	for in, want := range map[string]bool{
		`<tabrelay-data>{"a":1}</tabrelay-data>`:                 true,
		`<notes-data>[]</notes-data> The relay cut the result.`:  true,
		`No Demo tab of this browser is connected to the relay.`: false,
		`<tabrelay-data>{"a":1}`:                                 false,
		`<b onclick="x">bold</b>`:                                false,
	} {
		if got := taggedData(in); got != want {
			t.Errorf("taggedData(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestPickDefaultTool(t *testing.T) {
	readOnly := map[string]any{"readOnlyHint": true}
	asks := "Exports.\n\nIn the person's settings for this connection: the person is asked before it runs."
	runs := "Lists.\n\nIn the person's settings for this connection: runs without asking."
	l := &live{tools: []tool{
		{Name: "write", InputSchema: map[string]any{}, Description: runs},
		{Name: "read_one", InputSchema: map[string]any{"required": []any{"id"}}, Annotations: readOnly, Description: runs},
		{Name: "export", InputSchema: map[string]any{}, Annotations: readOnly, Description: asks},
		{Name: "list", InputSchema: map[string]any{}, Annotations: readOnly, Description: runs},
	}}
	if got, err := l.pick(); err != nil || got.Name != "list" {
		t.Fatalf("pick = %q, %v; want list, the first read-only tool that requires nothing and runs without asking", got.Name, err)
	}
	l.tools[3].Description = "Lists." // no tab answered the list: nothing is known of the settings
	if got, err := l.pick(); err != nil || got.Name != "export" {
		t.Fatalf("pick without the settings = %q, %v; want export, the first read-only tool that requires nothing", got.Name, err)
	}
	l.opts.Tool = "write"
	if got, err := l.pick(); err != nil || got.Name != "write" {
		t.Fatalf("pick with --tool write = %q, %v", got.Name, err)
	}
	l.opts.Tool = "missing"
	if _, err := l.pick(); err == nil {
		t.Fatal("pick of a tool not listed did not fail")
	}
}

// TestRunAgainstARelayThatIsNotOne: a server that answers /health but no
// OAuth fails discovery with one line, and what needs it is skipped.
func TestRunAgainstARelayThatIsNotOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/ready":
			w.Write([]byte(`{"ok":true}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var out bytes.Buffer
	if Run(context.Background(), Options{Relay: srv.URL, Timeout: 5 * time.Second}, &out) {
		t.Fatalf("Run passed:\n%s", out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "PASS reachability — ") || !strings.HasPrefix(lines[1], "FAIL discovery — POST / without a token answered 404") {
		t.Fatalf("the first lines are %q", lines[:2])
	}
	for _, l := range lines[2 : len(lines)-1] {
		if !strings.HasPrefix(l, "SKIP ") || !strings.Contains(l, "which did not pass") {
			t.Errorf("after the discovery failed: %q, want SKIP saying what it needs", l)
		}
	}
	if last := lines[len(lines)-1]; last != "live-check: 1 passed, 1 failed, 12 skipped" {
		t.Errorf("summary %q", last)
	}
}

// TestRunOfABadRelayFlag: one FAIL line saying what --relay must be.
func TestRunOfABadRelayFlag(t *testing.T) {
	var out bytes.Buffer
	if Run(context.Background(), Options{Relay: "https://relay.example.com/mcp"}, &out) ||
		!strings.HasPrefix(out.String(), "FAIL reachability — --relay \"https://relay.example.com/mcp\" must be a bare origin") {
		t.Fatalf("Run printed:\n%s", out.String())
	}
}
