package node

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
	"github.com/tabrelay/tabrelay/protocol"
)

func startAdminNode(t *testing.T, token string) (*Node, *syncbuf.Buffer) {
	t.Helper()
	return startAdminNodeWith(t, func(c *Config) { c.AdminToken = token })
}

func startAdminNodeWith(t *testing.T, edit func(*Config)) (*Node, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	cfg := Config{
		PublicURL: "http://127.0.0.1:1", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		DataDir: t.TempDir(), SigningKey: []byte(strings.Repeat("k", 32)), AllowedOrigins: []string{"http://app.test"}, Bundle: protocol.ProbeBundle(),
		CallWait: time.Minute, TurnIdle: time.Minute, DrainWindow: 0, Grace: 2 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	}
	edit(&cfg)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return n, logs
}

// TestTheAdminListener: /metrics stays open for Prometheus, and the
// probes answer there too (out of the public listener's storms), with the
// admin API on or off; the admin API behind it needs the token (its own
// tests are in package admin).
func TestTheAdminListener(t *testing.T) {
	for _, token := range []string{"", "0123456789abcdef-admin"} {
		n, _ := startAdminNode(t, token)
		for path, want := range map[string]int{"/metrics": http.StatusOK, "/health": http.StatusOK, "/ready": http.StatusOK,
			"/admin/scopes/conn_x": http.StatusNotFound} {
			if token != "" && strings.HasPrefix(path, "/admin/") {
				want = http.StatusUnauthorized
			}
			resp, err := http.Get("http://" + n.AdminAddr() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("token %q: %s without a token: %d, want %d", token, path, resp.StatusCode, want)
			}
		}
	}
}

// TestTheAdminListenerRefusesARebindingPage (issue 23): a web page that
// rebinds its own name to the admin listener's address sends that name
// as Host; /metrics, /debug/check and the profiles refuse it, and answer
// the listener's IP address, localhost and a name in RELAY_ADMIN_HOSTS.
func TestTheAdminListenerRefusesARebindingPage(t *testing.T) {
	n, _ := startAdminNodeWith(t, func(c *Config) { c.AdminHosts = []string{"metrics.internal"} })
	for _, path := range []string{"/metrics", "/debug/check", "/debug/pprof/", "/debug/pprof/goroutine?debug=2", "/ready"} {
		for host, want := range map[string]int{"rebound.evil.example:9090": http.StatusForbidden, n.AdminAddr(): http.StatusOK,
			"localhost": http.StatusOK, "metrics.internal:9090": http.StatusOK} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+n.AdminAddr()+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s with Host %s: %d, want %d", path, host, resp.StatusCode, want)
			}
		}
	}
}
