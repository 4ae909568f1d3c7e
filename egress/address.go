package egress

import "net/netip"

// nonPublic lists address ranges outside the classes that netip tests for
// directly, with the name used in error messages.
var nonPublic = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("2001::/23"), "reserved"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
}

var (
	// globalUnicast6 is the only IPv6 range handed out for public use.
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	// nat64 and sixToFour embed an IPv4 address, which decides.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// addressClass returns why ip is not a public unicast address ("loopback",
// "private", ...), or "" when it is public.
func addressClass(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return addressClass(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			return addressClass(netip.AddrFrom4([4]byte(b[2:6])))
		case !globalUnicast6.Contains(ip):
			return "reserved"
		}
	}
	for _, r := range nonPublic {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	return ""
}
