// Package netaddr says which address a request comes from, for the limits
// the relay keeps per address.
package netaddr

import (
	"net"
	"net/http"
	"strings"
)

// Client returns the address a request comes from. Behind a load balancer
// (trustProxy), that is the last X-Forwarded-For entry: the address the
// balancer itself saw; entries before it are whatever the client wrote.
// IPv6 addresses count by their /64, which one host is usually given.
func Client(r *http.Request, trustProxy bool) string {
	addr := r.RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	if trustProxy {
		if fwd := r.Header.Values("X-Forwarded-For"); len(fwd) > 0 {
			parts := strings.Split(fwd[len(fwd)-1], ",")
			if last := strings.TrimSpace(parts[len(parts)-1]); last != "" {
				addr = last
			}
		}
	}
	if ip := net.ParseIP(addr); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return addr
}
