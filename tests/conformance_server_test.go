package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/node"
	"github.com/tabrelay/tabrelay/protocol"
)

// TestConformanceServer runs the official MCP server suites against a
// relay whose tab runs the suites' fixture tools: 0.1.16 (handshake era),
// and 0.2.0-alpha.12 with the 2025-11-25 and the 2026-07-28 requirements.
// The suites send no token, so they reach the relay through a small proxy
// that adds a real one: obtained through the real OAuth flow, the headless
// tab approving every fixture tool (the relay has no switch for this).
// What tabrelay fails on purpose is in scripts/conformance/expected-
// failures-*.yml, each entry argued; anything else fails the test.
func TestConformanceServer(t *testing.T) {
	nodeBin, modern := conformanceSuite(t, "@modelcontextprotocol/conformance")
	_, legacy := conformanceSuite(t, "conformance-legacy")
	r := startRelay(t, func(c *node.Config) { c.Bundle = protocol.ConformanceBundle() })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the relay's log:\n%s", r.logs.String())
		}
	})
	b := newBrowser(t)
	b.startTab(r.url, "conformance", "--bundle", "conformance", "--focus")
	b.waitSecret()
	pairing := b.pairing(r.key)
	r.waitTabs(pairing, 1)
	var scope []string
	for _, tool := range protocol.ConformanceBundle().Tools {
		scope = append(scope, tool.Name)
	}
	_, tokens := connect(t, r, b, newHost(t, r.url), scope...)
	// The approving tab (of the demo bundle) is gone before the suites
	// start: no call goes to it, and the tools-changed its hello set off
	// reaches no suite's stream.
	r.waitTabs(pairing, 1)
	px := startTokenProxy(t, r.url, tokens["access_token"].(string))
	// One call through the proxy and the tab before the suites: the path
	// works end to end, and what the approval set off has settled.
	warm := &mcpClient{t: t, url: px.url + "/"}
	if rep := warm.send("tools/call", map[string]any{"name": "test_simple_text", "arguments": map[string]any{}}, false, nil); rep.status != 200 || rep.result == nil {
		t.Fatalf("a call through the token proxy: %d %v %v", rep.status, rep.result, rep.err)
	}
	baselines, _ := filepath.Abs("../scripts/conformance")
	runs := []struct {
		name     string
		args     []string
		baseline string
	}{
		{"0.1.16 handshake era", []string{legacy, "server"}, "expected-failures-legacy.yml"},
		{"0.2.0-alpha.12 requirements 2025-11-25", []string{modern, "server", "--requirements", "2025-11-25"}, "expected-failures-legacy.yml"},
		{"0.2.0-alpha.12 requirements 2026-07-28", []string{modern, "server", "--requirements", "2026-07-28"}, "expected-failures-2026-07-28.yml"},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			suite := func() (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				outDir := t.TempDir()
				args := append(run.args, "--url", px.url+"/", "-o", outDir,
					"--expected-failures", filepath.Join(baselines, run.baseline))
				px.reset()
				out, err := exec.CommandContext(ctx, nodeBin, args...).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "Baseline check passed") {
					logFailedChecks(t, outDir)
					px.logStreams(t)
					return string(out), fmt.Errorf("the suite: %v", err)
				}
				return string(out), nil
			}
			out, err := suite()
			if err != nil && onlyTimed(out) {
				t.Logf("only checks of the suite's timed listen windows failed; once more:\n%s", out)
				out, err = suite()
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("%s", summary(out))
		})
	}
}

// timedChecks are the suite's checks that read a subscriptions/listen
// stream within a fixed window (800 ms, 1.5 s) that includes a tools/call
// through the proxy, the relay and the tab: on two cores shared with the
// rest of `make test` under the race detector, a window has run out about
// once in fifty runs (never in a hundred runs of this test alone). The
// proxy's trace of the listen streams is logged when they fail.
var timedChecks = []string{
	"sep-2575-server-sends-subscription-ack",
	"sep-2575-server-tags-subscription-id",
	"sep-2575-server-honors-notification-filter",
	"sep-2575-server-sends-tools-list-changed-on-subscription",
}

// onlyTimed reports whether every unexpected failure the suite's output
// lists is one of timedChecks: a run worth once more, as a timed window
// that ran out is not a broken rule, while a check that fails twice is.
func onlyTimed(out string) bool {
	_, unexpected, found := strings.Cut(out, "Unexpected failures")
	if !found {
		return false
	}
	n := 0
	for _, line := range strings.Split(unexpected, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "✗ ")
		if !ok {
			continue
		}
		n++
		if !slices.ContainsFunc(timedChecks, func(c string) bool { return strings.HasSuffix(name, ":"+c) }) {
			return false
		}
	}
	return n > 0
}

// tokenProxy is a reverse proxy to the relay that adds a token as the
// bearer of every request without one. It stands for a host that holds a
// token, for suites that cannot run the OAuth flow. It traces the
// subscriptions/listen streams it carries (when each opened, what came
// down it when, when it ended), to be logged when the suite fails.
type tokenProxy struct {
	url string

	mu    sync.Mutex // guards trace
	trace []string
}

// note adds a line to the trace, with the time.
func (p *tokenProxy) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trace = append(p.trace, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

// reset forgets the trace.
func (p *tokenProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trace = nil
}

// logStreams logs the trace.
func (p *tokenProxy) logStreams(t *testing.T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Logf("the proxy's trace of listen streams and tools/call requests:\n%s", strings.Join(p.trace, "\n"))
}

// traced serves r through next, tracing it when it is a
// subscriptions/listen stream (each write) or a tools/call (its span).
func (p *tokenProxy) traced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		what := fmt.Sprintf("%s id %s %s", m.Method, m.ID, m.Params.Name)
		if m.Method != "subscriptions/listen" && m.Method != "tools/call" {
			next.ServeHTTP(w, r)
			return
		}
		p.note("→ %s", what)
		if m.Method == "subscriptions/listen" {
			w = &tracedWriter{ResponseWriter: w, p: p, what: what}
		}
		next.ServeHTTP(w, r)
		p.note("← %s ended", what)
	})
}

// tracedWriter notes what a listen stream writes.
type tracedWriter struct {
	http.ResponseWriter
	p    *tokenProxy
	what string
}

func (w *tracedWriter) Write(b []byte) (int, error) {
	w.p.note("  %s: %.160q", w.what, b)
	return w.ResponseWriter.Write(b)
}

func (w *tracedWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// startTokenProxy starts a tokenProxy to relay adding token.
func startTokenProxy(t *testing.T, relay, token string) *tokenProxy {
	t.Helper()
	target, err := url.Parse(relay)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	self := ts.Listener.Addr().String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The relay checks Host and Origin (DNS rebinding): the proxy's
			// own are the relay's; any other, a suite's probe, goes through
			// as sent.
			if pr.In.Host != self {
				pr.Out.Host = pr.In.Host
			}
			if pr.In.Header.Get("Origin") == "http://"+self {
				pr.Out.Header.Set("Origin", relay)
			}
			if pr.Out.Header.Get("Authorization") == "" {
				pr.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		FlushInterval: -1, // event streams pass at once
	}
	px := &tokenProxy{}
	ts.Config.Handler = px.traced(rp)
	ts.Start()
	t.Cleanup(ts.Close)
	px.url = ts.URL
	return px
}

// logFailedChecks logs the checks the suite wrote as failed or warned
// under dir, with their details: the suite's summary says only which
// scenario failed (a SHOULD that fails is a warning, which the baseline
// counts).
func logFailedChecks(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var checks []map[string]any
		if json.Unmarshal(raw, &checks) != nil {
			continue
		}
		for _, c := range checks {
			if c["status"] == "FAILURE" || c["status"] == "WARNING" {
				detail, _ := json.Marshal(c)
				t.Logf("%s: %.2000s", filepath.Base(filepath.Dir(f)), detail)
			}
		}
	}
}

// TestOnlyTimed reads the suite's own report: once more only when every
// unexpected failure is a timed listen window.
func TestOnlyTimed(t *testing.T) {
	report := func(failed ...string) string {
		out := "  ✗ server-stateless: 26 passed, 2 failed\n\x1b[33mExpected failures (in baseline):\x1b[0m\n" +
			"  ~ server-stateless:sep-2575-missing-capability-http-400\n"
		if len(failed) > 0 {
			out += "\n\x1b[31mUnexpected failures (not in baseline):\x1b[0m\n"
			for _, f := range failed {
				out += "  ✗ " + f + "\n"
			}
			out += "\n\x1b[31mUnexpected failures detected: these are not in your expected-failures baseline.\x1b[0m\n"
		}
		return out
	}
	for _, c := range []struct {
		out  string
		want bool
	}{
		{report("server-stateless:sep-2575-server-sends-tools-list-changed-on-subscription"), true},
		{report("server-stateless:sep-2575-server-sends-subscription-ack", "server-stateless:sep-2575-server-tags-subscription-id"), true},
		{report("server-stateless:sep-2575-server-sends-subscription-ack", "tools-call-simple-text"), false},
		{report("server-stateless:sep-2575-server-implements-discover"), false},
		{report(), false},
		{"node: command not found", false},
	} {
		if got := onlyTimed(c.out); got != c.want {
			t.Errorf("onlyTimed(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}
