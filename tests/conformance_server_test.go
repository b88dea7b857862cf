package tests

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	warm := &mcpClient{t: t, url: px + "/"}
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
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			outDir := t.TempDir()
			args := append(run.args, "--url", px+"/", "-o", outDir,
				"--expected-failures", filepath.Join(baselines, run.baseline))
			out, err := exec.CommandContext(ctx, nodeBin, args...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Baseline check passed") {
				logFailedChecks(t, outDir)
				t.Fatalf("%v\n%s", err, out)
			}
			t.Logf("%s", summary(string(out)))
		})
	}
}

// startTokenProxy serves a reverse proxy to relay that adds token as the
// bearer of every request without one, and returns its URL. It stands for
// a host that holds a token, for suites that cannot run the OAuth flow.
func startTokenProxy(t *testing.T, relay, token string) string {
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
	ts.Config.Handler = rp
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL
}

// logFailedChecks logs the checks the suite wrote as failed under dir, with
// their details: the suite's summary says only which scenario failed.
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
			if c["status"] == "FAILURE" {
				detail, _ := json.Marshal(c)
				t.Logf("%s: %.2000s", filepath.Base(filepath.Dir(f)), detail)
			}
		}
	}
}
