package cimd

import (
	"fmt"
	"net/netip"
	"syscall"
)

// The SSRF guard: a document is fetched from public addresses only,
// checked on the connection made.

// dialControl returns the net.Dialer Control func that refuses to
// connect to any address that is not public. It runs on the connection
// actually made, after DNS, so a name that resolves differently between a
// check and the dial (DNS rebinding) cannot slip past it.
func dialControl(allowLoopback bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &Error{Kind: ErrForbiddenAddress, cause: err,
				Reason: "the client's metadata document could not be fetched: its address could not be checked"}
		}
		return checkAddr(ap.Addr(), allowLoopback)
	}
}

// checkAddr refuses every address that is not public unicast; with
// allowLoopback, loopback passes (nothing else does).
func checkAddr(ip netip.Addr, allowLoopback bool) error {
	what := addrClass(ip)
	if what == "" || (allowLoopback && what == "loopback") {
		return nil
	}
	return &Error{Kind: ErrForbiddenAddress,
		Reason: fmt.Sprintf("the client's metadata document could not be fetched: its address %s is %s", ip, what)}
}

// addrClass says what kind of non-public address ip is, or "" for a
// public one. IPv4 addresses inside IPv6 ones (mapped, NAT64, 6to4) are
// judged by the IPv4 address.
func addrClass(ip netip.Addr) string {
	// Prefix.Contains never matches an address with a zone.
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return "not valid"
	}
	for _, b := range blocked {
		if b.prefix.Contains(ip) {
			return b.what
		}
	}
	a := ip.As16()
	switch {
	case nat64.Contains(ip):
		return addrClass(netip.AddrFrom4([4]byte(a[12:16])))
	case sixToFour.Contains(ip):
		return addrClass(netip.AddrFrom4([4]byte(a[2:6])))
	case !ip.IsGlobalUnicast():
		return "not a public address"
	}
	return ""
}

var nat64, sixToFour = netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("2002::/16") // RFC 6052, RFC 3056

// blocked lists the special-purpose ranges (RFC 6890 and its IANA
// registries) a client's document may not be fetched from. The first match
// names the address.
var blocked = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"}, // "this network"
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared carrier-grade NAT space"}, // RFC 6598
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"}, // RFC 7526
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved for benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved for documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"}, // and 255.255.255.255, broadcast
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "reserved"},          // IPv4-compatible, deprecated
	{netip.MustParsePrefix("64:ff9b:1::/48"), "reserved"}, // RFC 8215 local-use NAT64
	{netip.MustParsePrefix("100::/64"), "reserved"},       // RFC 6666 discard-only
	{netip.MustParsePrefix("2001::/32"), "a Teredo tunnel address"},
	{netip.MustParsePrefix("2001:2::/48"), "reserved for benchmarking"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved for documentation"},
	{netip.MustParsePrefix("3fff::/20"), "reserved for documentation"}, // RFC 9637
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"}, // deprecated, RFC 3879
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}
