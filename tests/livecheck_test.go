package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/livecheck"
)

// connectOnlyPage is an app page with the Connect panel but no
// Connections panel, and one tool of the demo app's, list_notes.
func connectOnlyPage(relay string) string {
	return sdkPage(relay, "connect only", `<tabrelay-connect></tabrelay-connect>
`, `import "`+relay+`/sdk/v1/tabrelay-ui.js";
`,
		`[{ name: "list_notes", title: "List notes", description: "Lists the notes.", inputSchema: { type: "object", properties: {} }, annotations: { readOnlyHint: true }, result: "summaries" }],`,
		`const client = connect({ relay, app, handlers: { list_notes: () => [{ id: "n1", title: "A note" }] } });
const panel = document.querySelector("tabrelay-connect");
panel.app = app;
panel.client = client;
`)
}

// secretLike finds what must never be in the live check's output: the
// relay's tokens and codes by their prefixes, a connect code, and any
// long base64url run with upper and lower case and digits (a verifier, a
// state, a tab secret, an id that names one person's request).
var (
	tokenLike       = regexp.MustCompile(`tr[arc]_[A-Za-z0-9_-]+`)
	connectCodeLike = regexp.MustCompile(`\b[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}\b`)
	base64Like      = regexp.MustCompile(`[A-Za-z0-9_-]{20,}`)
)

func secretsIn(out string) []string {
	found := append(tokenLike.FindAllString(out, -1), connectCodeLike.FindAllString(out, -1)...)
	for _, s := range base64Like.FindAllString(out, -1) {
		if strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") && strings.ContainsAny(s, "0123456789") {
			found = append(found, s)
		}
	}
	return found
}

// runLiveCheck runs `tabrelay live-check` with args: its output and exit code.
func runLiveCheck(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"live-check", "--timeout", "20s"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("tabrelay live-check: %v\n%s", err, out.String())
	}
	return out.String(), code
}

// lines picks the output's lines of a status.
func lines(out string, status livecheck.Status) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, string(status)+" ") {
			got = append(got, l)
		}
	}
	return got
}

// TestLiveCheck runs `tabrelay live-check` against a local 3-node cluster
// serving the demo app, the person's tab a Chromium page of it: every
// check passes and the output carries no secret; with an app that has no
// Connections panel, forget is skipped; and it fails with one line when
// the relay is down, when the page's origin is not allowed, and when an
// answer is wrong.
func TestLiveCheck(t *testing.T) {
	t.Parallel() // a browser test (live-check drives Chromium): see browser_test.go
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatal("chromium is missing: make test installs it (scripts/ensure-deps.sh), or apt-get install chromium")
	}
	// The nodes serve the demo app (RELAY_DEMO; its origin, the relay's,
	// allowed and APP_URL by default) and also allow a page with the
	// Connect panel alone; a third page's origin they do not allow. The
	// pages are served before the cluster whose URL they show exists.
	var relay atomic.Value
	stranger, strangerURL := appPageOf(t, func() string { return echoPage(relay.Load().(string)) })
	connectOnly, connectOnlyURL := appPageOf(t, func() string { return connectOnlyPage(relay.Load().(string)) })
	docURL, certFile := liveCheckMetadata(t)
	c := startCluster(t, clusterOptions{nodes: 3, env: []string{"RELAY_DEMO=true", "RELAY_BUNDLE=demo", "ALLOWED_ORIGINS=" + connectOnly,
		"RELAY_CIMD_ALLOW_LOOPBACK=true", "SSL_CERT_FILE=" + certFile}})
	relay.Store(c.public)

	t.Run("passes against the cluster and prints no secret", func(t *testing.T) {
		start := time.Now()
		out, code := runLiveCheck(t, []string{"SSL_CERT_FILE=" + certFile}, "--relay", c.public, "--client-id-url", docURL, "-v")
		t.Logf("tabrelay live-check (%v):\n%s", time.Since(start).Round(100*time.Millisecond), out)
		if code != 0 || len(lines(out, livecheck.Fail)) > 0 || len(lines(out, livecheck.Skip)) > 0 {
			t.Fatalf("exit %d; want every check to pass", code)
		}
		if n := len(lines(out, livecheck.Pass)); n != 14 {
			t.Fatalf("%d checks passed, want 14", n)
		}
		if s := secretsIn(out); len(s) > 0 {
			t.Fatalf("the output carries what looks like secrets: %q", s)
		}
	})
	t.Run("an app without a Connections panel: forget is skipped, the connection declined", func(t *testing.T) {
		out, code := runLiveCheck(t, nil, "--relay", c.public, "--app", connectOnlyURL)
		skips := lines(out, livecheck.Skip)
		if code != 0 || len(lines(out, livecheck.Fail)) > 0 || len(skips) != 3 || !strings.HasPrefix(skips[2], "SKIP forget — the app page has no <tabrelay-connections>") ||
			!strings.HasPrefix(skips[1], "SKIP view-card — no listed tool has a view card") {
			t.Fatalf("exit %d, SKIP lines %q; want exit 0 with client-metadata, view-card and forget skipped\n%s", code, skips, out)
		}
	})
	t.Run("the relay down: one FAIL, reachability", func(t *testing.T) {
		out, code := runLiveCheck(t, nil, "--relay", "http://"+freePort(t))
		fails := lines(out, livecheck.Fail)
		if code != 1 || len(fails) != 1 || !strings.HasPrefix(fails[0], "FAIL reachability — ") || !strings.Contains(fails[0], "connection refused") {
			t.Fatalf("exit %d, FAIL lines %q; want exit 1 and one FAIL reachability saying the connection was refused\n%s", code, fails, out)
		}
	})
	t.Run("the page's origin not allowed: one FAIL naming ALLOWED_ORIGINS", func(t *testing.T) {
		out, code := runLiveCheck(t, nil, "--relay", c.public, "--app", strangerURL)
		fails := lines(out, livecheck.Fail)
		if code != 1 || len(fails) != 1 || !strings.HasPrefix(fails[0], "FAIL approval — ") ||
			!strings.Contains(fails[0], "never connected") || !strings.Contains(fails[0], "ALLOWED_ORIGINS") || !strings.Contains(fails[0], stranger) {
			t.Fatalf("exit %d, FAIL lines %q; want exit 1 and one FAIL approval saying the page never connected, naming its origin and ALLOWED_ORIGINS\n%s", code, fails, out)
		}
	})
	for _, tc := range []struct {
		name, check, says string
		rewrite           func(path string, body map[string]any)
	}{
		{"the resource metadata names another resource", "discovery", "not the relay's origin", func(path string, body map[string]any) {
			if path == "/.well-known/oauth-protected-resource" {
				body["resource"] = "https://elsewhere.example"
			}
		}},
		// This one fails in the middle: the checks that do not need the
		// tools run on, and the run handles every kind of secret (two
		// connect codes, codes, verifiers, states, the tokens of a
		// rotation, a reuse and a forget), none of which it prints.
		{"tools/list answers no tools", "tools", "no tools", func(path string, body map[string]any) {
			if result, ok := body["result"].(map[string]any); ok && result["tools"] != nil {
				result["tools"] = []any{}
			}
		}},
	} {
		t.Run("a wrong answer: "+tc.name, func(t *testing.T) {
			rec := &recording{base: http.DefaultTransport}
			var out bytes.Buffer
			ok := livecheck.Run(context.Background(), livecheck.Options{Relay: c.public, Timeout: 20 * time.Second, Verbose: true,
				HTTPClient: &http.Client{Transport: rewriting{edit: tc.rewrite, base: rec}}}, &out)
			fails := lines(out.String(), livecheck.Fail)
			if ok || len(fails) != 1 || !strings.HasPrefix(fails[0], "FAIL "+tc.check+" — ") || !strings.Contains(fails[0], tc.says) {
				t.Fatalf("ok %v, FAIL lines %q; want one FAIL %s saying %q\n%s", ok, fails, tc.check, tc.says, out.String())
			}
			for _, secret := range rec.all() {
				if strings.Contains(out.String(), secret) {
					t.Errorf("the output carries a secret of %d characters the run handled:\n%s", len(secret), out.String())
				}
			}
			if s := secretsIn(out.String()); len(s) > 0 {
				t.Fatalf("the output carries what looks like secrets: %q", s)
			}
			t.Logf("the run handled %d secrets, printed none", len(rec.all()))
			if tc.check == "tools" && len(rec.all()) < 16 {
				t.Fatalf("the run handled only %d secrets: it did not get as far as it should\n%s", len(rec.all()), out.String())
			}
		})
	}
}

// rewriting is a transport that changes JSON answers as a broken relay
// (or a proxy in front of it) would.
type rewriting struct {
	edit func(path string, body map[string]any)
	base http.RoundTripper
}

func (rw rewriting) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := rw.base.RoundTrip(r)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		rw.edit(r.URL.Path, body)
		raw, _ = json.Marshal(body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// liveCheckMetadata serves a client metadata document over https on
// loopback and writes its certificate where SSL_CERT_FILE can name it, so
// that the nodes and the live check both trust it.
func liveCheckMetadata(t *testing.T) (docURL, certFile string) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Live Check Metadata Host",
			"redirect_uris": []string{"http://127.0.0.1:33420/callback"}, "token_endpoint_auth_method": "none"})
	}))
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/oauth/client.json"
	certFile = filepath.Join(t.TempDir(), "metadata.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return docURL, certFile
}

// recording is a transport that keeps every secret the live check sent
// or was given: verifiers, states, codes and tokens in forms, queries and
// answers, the connect code of each waiting page, and its cookie.
type recording struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []string
}

var connectCodeAttr = regexp.MustCompile(`data-connect-code="([^"]+)"`)

func (rec *recording) keep(values ...string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, v := range values {
		if len(v) >= 8 {
			rec.seen = append(rec.seen, v)
		}
	}
}

func (rec *recording) all() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.seen...)
}

// keepParams keeps the values of the parameters that carry secrets.
func (rec *recording) keepParams(q url.Values) {
	for _, k := range []string{"code", "code_verifier", "code_challenge", "state", "refresh_token", "token"} {
		rec.keep(q[k]...)
	}
}

func (rec *recording) RoundTrip(r *http.Request) (*http.Response, error) {
	rec.keepParams(r.URL.Query())
	if r.Body != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		raw, _ := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(raw))
		q, _ := url.ParseQuery(string(raw))
		rec.keepParams(q)
	}
	rec.keep(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	resp, err := rec.base.RoundTrip(r)
	if err != nil || resp.StatusCode == http.StatusSwitchingProtocols { // a socket: its body is the connection
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	for _, c := range resp.Cookies() {
		rec.keep(c.Value)
	}
	if m := connectCodeAttr.FindSubmatch(raw); m != nil {
		rec.keep(string(m[1]), strings.ReplaceAll(string(m[1]), "-", ""))
	}
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		for _, k := range []string{"access_token", "refresh_token"} {
			if v, ok := body[k].(string); ok {
				rec.keep(v)
			}
		}
		if v, ok := body["redirect"].(string); ok {
			if u, err := url.Parse(v); err == nil {
				rec.keepParams(u.Query())
			}
		}
	}
	return resp, nil
}

// TestLiveCheckUsage: a command line that cannot run exits 2 with one
// line saying what is wrong, before it tries anything.
func TestLiveCheckUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"no relay", nil, "--relay is required"},
		{"arguments after the flags", []string{"--relay", "http://127.0.0.1:1", "extra"}, "nothing else follows the flags"},
		{"arguments that are no object", []string{"--relay", "http://127.0.0.1:1", "--args", "[1]"}, "--args must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"live-check"}, tc.args...)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			exit, ok := err.(*exec.ExitError)
			if !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), tc.says) || strings.Count(string(out), "\n") != 1 {
				t.Fatalf("%v: %s; want exit 2 and one line saying %q", err, out, tc.says)
			}
		})
	}
}
