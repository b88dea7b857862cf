package netaddr

import (
	"net/http/httptest"
	"testing"
)

func TestClient(t *testing.T) {
	cases := []struct {
		name, remote, fwd string
		trust             bool
		want              string
	}{
		{"direct", "203.0.113.5:1234", "", false, "203.0.113.5"},
		{"forwarded header ignored without trust", "203.0.113.5:1234", "198.51.100.1", false, "203.0.113.5"},
		{"the balancer's entry, not the client's", "10.0.0.2:80", "1.2.3.4, 198.51.100.7", true, "198.51.100.7"},
		{"ipv6 by its /64", "[2001:db8:1:2:3:4:5:6]:443", "", false, "2001:db8:1:2::/64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			if tc.fwd != "" {
				r.Header.Set("X-Forwarded-For", tc.fwd)
			}
			if got := Client(r, tc.trust); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
