package httpserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabrelay/tabrelay/internal/syncbuf"
)

// A handler's panic, recovered by net/http, is a JSON record at error
// level with its stack, on the listener's name.
func TestServerLogSaysPanicsAtErrorLevel(t *testing.T) {
	var out syncbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	srv.Config.ErrorLog = serverLog(logger, "public")
	srv.Start()
	defer srv.Close()
	if resp, err := http.Get(srv.URL); err == nil {
		resp.Body.Close()
	}
	srv.Close() // the log line is written before the connection ends
	var rec map[string]any
	line, _, _ := strings.Cut(out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("not one JSON record: %q", out.String())
	}
	if rec["level"] != "ERROR" || rec["listener"] != "public" || !strings.HasPrefix(rec["http_server"].(string), "http: panic serving") ||
		!strings.Contains(rec["stack"].(string), "goroutine") {
		t.Fatalf("record %v", rec)
	}
}

// Other complaints of net/http are warnings.
func TestServerLogSaysTheRestAtWarnLevel(t *testing.T) {
	var out syncbuf.Buffer
	serverLog(slog.New(slog.NewJSONHandler(&out, nil)), "admin").Print("http: URL query contains semicolon")
	var rec map[string]any
	if err := json.Unmarshal([]byte(out.String()), &rec); err != nil || rec["level"] != "WARN" || rec["listener"] != "admin" {
		t.Fatalf("record %q", out.String())
	}
}
