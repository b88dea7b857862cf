package tests

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/redistest"
	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// serveProc is a running `tabrelay serve` process.
type serveProc struct {
	cmd    *exec.Cmd
	stdout *syncbuf.Buffer // the plain lines it prints once listening
	stderr *syncbuf.Buffer
	exited chan struct{} // closed when the process ended; err holds how
	err    error
	url    string
	admin  string
}

func freePort(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + redistest.FreePort(t)
}

func startServe(t *testing.T, listen, admin, dataDir string, env ...string) *serveProc {
	t.Helper()
	return startServeUnder(t, nil, listen, admin, dataDir, env...)
}

// startServeUnder runs `tabrelay serve` under the command wrap (as
// prlimit --nofile=N --), or directly when wrap is empty.
func startServeUnder(t *testing.T, wrap []string, listen, admin, dataDir string, env ...string) *serveProc {
	t.Helper()
	argv := append(append(wrap[:len(wrap):len(wrap)], binary), "serve")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "RELAY_LISTEN=" + listen, "RELAY_ADMIN_LISTEN=" + admin,
		"RELAY_DATA_DIR=" + dataDir, "ALLOWED_ORIGINS=" + origin, "RELAY_BUNDLE=probe", "RELAY_DRAIN_WINDOW=500ms", "RELAY_GRACE=5s",
		"RELAY_SHUTDOWN_DELAY=0s"}, env...) // no balancer in front: no delay to wait out
	p := &serveProc{cmd: cmd, stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, exited: make(chan struct{}), url: "http://" + listen, admin: "http://" + admin}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("serve stderr:\n%s", p.stderr.String())
		}
	})
	eventually(t, func() bool {
		resp, err := http.Get(p.url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "relay at %s healthy", listen)
	return p
}

// tabAndClient starts a headless tab of a new browser on p, and approves an
// MCP connection of a new host through it with scope: the client of that
// connection, and the tab stays.
func (p *serveProc) tabAndClient(t *testing.T, scope string) *mcpClient {
	t.Helper()
	b := newBrowser(t)
	b.startTab(p.url, "a")
	b.waitSecret()
	eventually(t, func() bool { return p.metric(t, "tabrelay_tabs_connected") == "1" }, "tab connected")
	h := newHost(t, p.url)
	h.register()
	f := h.authorize()
	if out, err := b.ask(p.url, "approve", "--scope", scope, f.code); err != nil {
		t.Fatalf("approve: %v %s", err, out)
	}
	_, tokens := h.exchange(f, h.codeFrom(f, h.status(f)["redirect"]))
	return &mcpClient{t: t, url: p.url + "/", token: tokens["access_token"].(string)}
}

// metric reads one unlabelled metric from the admin listener.
func (p *serveProc) metric(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get(p.admin + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// TestRestartedRelayGetsItsTabsBack stops a relay with SIGTERM while a tab
// is connected and starts it again on the same data directory: the node
// drains within its grace, and the tab comes back by itself to the same
// pairing (the signing key survived in the data dir).
func TestRestartedRelayGetsItsTabsBack(t *testing.T) {
	listen, admin, data := freePort(t), freePort(t), t.TempDir()
	first := startServe(t, listen, admin, data)
	b := newBrowser(t)
	tab := b.startTab(first.url, "a")
	eventually(t, func() bool { return first.metric(t, "tabrelay_tabs_connected") == "1" }, "tab connected")
	// Requests are counted when they end (a tab's socket when it closes).
	if first.metric(t, `tabrelay_http_requests_total{code="200",route="GET /health"}`) == "" {
		t.Fatal("no count of GET /health in /metrics")
	}

	start := time.Now()
	first.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-first.exited:
		if first.err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", first.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not exit within its grace")
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("shutdown took %v, grace is 5s", took)
	}
	if !strings.Contains(first.stderr.String(), `"relay stopped"`) {
		t.Fatalf("no orderly stop in the log:\n%s", first.stderr.String())
	}

	second := startServe(t, listen, admin, data)
	eventually(t, func() bool { return second.metric(t, "tabrelay_tabs_connected") == "1" }, "tab back after restart")
	if got := second.metric(t, "tabrelay_tab_reconnects_total"); got != "1" {
		t.Fatalf("reconnects = %q, want 1", got)
	}
	select {
	case <-tab.exited:
		t.Fatalf("the tab stopped: %v\n%s", tab.err, tab.stderr.String())
	default:
	}
}

func TestBadConfigurationFailsWithOneLine(t *testing.T) {
	cases := []struct{ env, want string }{
		{"ALLOWED_ORIGINS=", "ALLOWED_ORIGINS is empty"},
		{"ALLOWED_ORIGINS=https://app.example.com/path", "ALLOWED_ORIGINS"},
		{"RELAY_SIGNING_KEY=c2hvcnQ=", "RELAY_SIGNING_KEY has 5 bytes"},
		{"TAB_CALL_WAIT=forever", "TAB_CALL_WAIT"},
		{"RELAY_GRACE=1ms", "RELAY_GRACE \"1ms\" must be a duration between 1s and 1h0m0s (e.g. 30s)"},
		{"RELAY_SHUTDOWN_DELAY=20s", "RELAY_SHUTDOWN_DELAY 20s must be at most half of RELAY_GRACE (30s)"},
		{"RELAY_CONNECT_CROSS_DEVICE=false", "RELAY_CONNECT_CROSS_DEVICE=false needs APP_URL"},
		{"RELAY_CONNECT_CROSS_DEVICE=perhaps", "RELAY_CONNECT_CROSS_DEVICE"},
		{"REDIS_URL=redis://127.0.0.1:6379", "REDIS_URL"},
		// A bad REDIS_URL is named, its password never repeated (issue 16).
		{"REDIS_URL=redis+sentinel://relay:Sup3rS3cret@10.0.0.1:26379", "REDIS_URL: a redis+sentinel:// URL names its master"},
		{"REDIS_URL=redis+cluster://:Sup3rS3cret", "REDIS_URL: a host is not host or host:port"},
		{"REDIS_URL=redis://u:ab/Sup3rS3cret@h:6379/0", "percent-encode"},
		{"REDIS_URL=memcached://u:Sup3rS3cret@h:1", "REDIS_URL has the scheme \"memcached\""},
		{"RELAY_LISTEN=8080", "RELAY_LISTEN"},
		{"RELAY_PUBLIC_URL=https://relay.example.com/mcp", "RELAY_PUBLIC_URL"},
		{"RELAY_BUNDLE=/nonexistent.json", "RELAY_BUNDLE"},
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			cmd := exec.Command(binary, "serve")
			cmd.Env = []string{"RELAY_DATA_DIR=" + t.TempDir(), "ALLOWED_ORIGINS=" + origin, tc.env}
			out, err := cmd.CombinedOutput()
			if code := exitCode(err); code != 2 {
				t.Fatalf("exit %d, want 2; output:\n%s", code, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("output %q, want one line naming %s", out, tc.want)
			}
			if strings.Contains(string(out), "S3cret") {
				t.Fatalf("output %q repeats a password", out)
			}
		})
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
