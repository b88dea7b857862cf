package admin

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHostGuard (issue 23): the admin listener answers the Hosts no
// DNS-rebinding page can send (IP addresses, loopback names) and the
// configured ones, and refuses any other name.
func TestHostGuard(t *testing.T) {
	hosts, err := ParseHosts(" metrics.internal , Tabrelay-Admin.example ")
	if err != nil {
		t.Fatal(err)
	}
	guard := HostGuard(hosts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for host, want := range map[string]int{
		"127.0.0.1:9090": 200, "[::1]:9090": 200, "10.244.1.17:9090": 200, "10.244.1.17": 200, "[fd00::17]:9090": 200,
		"localhost:9090": 200, "LOCALHOST": 200, "relay.localhost:9090": 200, "localhost.:9090": 200,
		"metrics.internal:9090": 200, "METRICS.internal.": 200, "tabrelay-admin.example": 200, "": 200,
		"evil.example:9090": 403, "evil.example": 403, "localhost.evil.example:9090": 403, "127.0.0.1.nip.io:9090": 403,
		"metrics.internal.evil.example": 403,
	} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Host = host
		w := httptest.NewRecorder()
		guard.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
	for _, bad := range []string{"http://metrics.internal", "metrics.internal:9090", "a/b", "."} {
		if _, err := ParseHosts(bad); err == nil {
			t.Errorf("ParseHosts(%q) accepted it", bad)
		}
	}
}
