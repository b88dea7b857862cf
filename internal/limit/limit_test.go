package limit

import "testing"

func TestNetwork(t *testing.T) {
	for addr, want := range map[string]string{
		"203.0.113.77":      "203.0.113.0/24",
		"2001:db8:1:2::/64": "2001:db8:1::/48",
		"2001:db8:1:2::5":   "2001:db8:1::/48",
		"[2001:db8:1:2::5]": "2001:db8:1::/48",
		"::ffff:10.1.2.3":   "10.1.2.0/24",
		"not an address":    "not an address",
	} {
		if got := Network(addr); got != want {
			t.Errorf("Network(%q) = %q, want %q", addr, got, want)
		}
	}
}
