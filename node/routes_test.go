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
	logs := &syncbuf.Buffer{}
	n, err := New(Config{
		PublicURL: "http://127.0.0.1:1", Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		DataDir: t.TempDir(), SigningKey: []byte(strings.Repeat("k", 32)), AllowedOrigins: []string{"http://app.test"}, Bundle: protocol.ProbeBundle(),
		CallWait: time.Minute, TurnIdle: time.Minute, DrainWindow: 0, Grace: 2 * time.Second,
		AdminToken: token, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
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
