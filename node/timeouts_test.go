package node

import (
	"net/http"
	"testing"
)

// TestEveryServerHasTimeouts: both listeners bound how long a client may
// take with its headers and its body and how long an idle connection
// stays (issue 15: slow HTTP clients). tests/hostile_test.go's
// TestSlowHTTPClientsAreCutOff shows the public one cutting a client off.
func TestEveryServerHasTimeouts(t *testing.T) {
	n, _ := startAdminNode(t, "admin-token-of-thirty-two-bytes!!")
	for name, s := range map[string]*http.Server{"public": n.public, "admin": n.admin} {
		if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 {
			t.Errorf("the %s server: read-header %v, read %v, idle %v", name, s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout)
		}
	}
}
