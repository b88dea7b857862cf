package httpserver

import (
	"log/slog"
	"net/http"
	"testing"
)

// TestServersHaveTimeouts: a listener's server (node builds both of its
// listeners' with New) bounds how long a client may take with its headers
// and its body and how long an idle connection stays (issue 15: slow HTTP
// clients). tests/hostile_test.go's TestSlowHTTPClientsAreCutOff shows the
// public one cutting a client off.
func TestServersHaveTimeouts(t *testing.T) {
	s := New("public", http.NotFoundHandler(), slog.Default())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.WriteTimeout != 0 {
		t.Errorf("read-header %v, read %v, idle %v, write %v", s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout, s.WriteTimeout)
	}
}
