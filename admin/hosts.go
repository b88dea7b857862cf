package admin

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// HostGuard serves only requests whose Host names the admin listener as
// no web page can (issue 23): a DNS-rebinding page reaches a listener on
// loopback or a private network under its own name, and its requests
// carry that name as Host. So next answers a Host that is an IP address
// (any: Kubernetes probes and Prometheus scrapes send the pod's IP, and a
// page cannot make its own origin one that resolves elsewhere by
// rebinding), a loopback name (localhost and *.localhost, which browsers
// resolve to loopback themselves), one of hosts (RELAY_ADMIN_HOSTS:
// names an operator reaches the listener by), or none at all (a program
// speaking HTTP/1.0). Anything else gets 403 and a sentence.
func HostGuard(hosts []string, next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, h := range hosts {
		allowed[canonicalHost(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = canonicalHost(host)
		if host == "" || net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") || allowed[host] {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, "The admin listener answers requests to an IP address, localhost or a name in RELAY_ADMIN_HOSTS only: this Host is none of them (a web page may be reading it by DNS rebinding).", http.StatusForbidden)
	})
}

// canonicalHost is a host name as compared: lower case, without brackets
// or a final dot.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// ParseHosts reads RELAY_ADMIN_HOSTS: comma-separated host names, without
// a scheme, port or path.
func ParseHosts(v string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/:@ ") || canonicalHost(h) == "" {
			return nil, fmt.Errorf("RELAY_ADMIN_HOSTS: %q is not a host name (write names only, as metrics.internal, without a scheme or port)", h)
		}
		out = append(out, canonicalHost(h))
	}
	return out, nil
}
