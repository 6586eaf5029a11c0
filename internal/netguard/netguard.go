// Package netguard keeps outbound webhook calls away from the service's own
// network: loopback, private, link-local, multicast, unspecified and
// cloud-metadata addresses, and the IPv6 forms that carry one of them
// (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo, ISATAP) or that are
// site-local. The check runs on the address actually dialled
// (a net.Dialer Control hook, after DNS resolution), so a public name that
// resolves to a private address is refused as surely as a literal one, and
// redirects are never followed.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// EnvAllowPrivate names the environment variable that, set to "1", lets
// webhooks reach any address and use plain http (for `finsync dev` and
// tests only).
const EnvAllowPrivate = "FINSYNC_WEBHOOK_ALLOW_PRIVATE"

// ErrRefused is wrapped by every refusal of an address or URL.
var ErrRefused = errors.New("address not allowed")

// Policy decides which addresses webhooks may reach. The zero value is the
// safe default: public addresses only, over https.
type Policy struct {
	// AllowPrivate lets calls reach any address and use plain http.
	AllowPrivate bool
}

// ParseAllowPrivate reads the value of EnvAllowPrivate: "" and "0" deny,
// "1" allows; anything else is an error naming the valid values.
func ParseAllowPrivate(v string) (bool, error) {
	switch v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s: %q is not 1 (allow private addresses and http) or 0 or empty (refuse them)", EnvAllowPrivate, v)
}

// blocked are the ranges refused besides those net/netip classifies
// (loopback, private, link-local, multicast, unspecified) and besides the
// IPv6 forms that embed an IPv4 address (checked on that address, see
// embeddedIPv4).
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),     // carrier-grade NAT (Alibaba Cloud metadata 100.100.100.200)
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),    // local-use NAT64: where it embeds an IPv4 address is the network's choice
	netip.MustParsePrefix("100::/64"),          // discard-only
	netip.MustParsePrefix("2001:db8::/32"),     // documentation
	netip.MustParsePrefix("fec0::/10"),         // site-local (deprecated, still routed inside some networks)
	netip.MustParsePrefix("fd00:ec2::254/128"), // AWS metadata over IPv6 (also private)
}

// Prefixes of the IPv6 forms that carry an IPv4 address.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // ::a.b.c.d (deprecated: refused whole)
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // ::ffff:0:a.b.c.d (SIIT)
	nat64          = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64 prefix, IPv4 in the last 32 bits
	sixToFour      = netip.MustParsePrefix("2002::/16")       // 6to4, IPv4 in bits 16-47
	teredo         = netip.MustParsePrefix("2001::/32")       // Teredo: server IPv4 in bits 32-63, client IPv4 inverted in the last 32
)

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries and that
// a relay or translator on the path could end up connecting to:
// IPv4-translated, NAT64 (well-known prefix), 6to4,
// Teredo (server and client) and an ISATAP interface identifier
// (…:0:5efe:a.b.c.d or …:200:5efe:a.b.c.d). IPv4-mapped addresses are
// unmapped before this is called.
func embeddedIPv4(a netip.Addr) []netip.Addr {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]}) }
	var out []netip.Addr
	switch {
	case ipv4Translated.Contains(a), nat64.Contains(a):
		out = append(out, v4(12))
	case sixToFour.Contains(a):
		out = append(out, v4(2))
	case teredo.Contains(a):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		out = append(out, v4(4), netip.AddrFrom4(client))
	}
	if (b[8] == 0 || b[8] == 2) && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, v4(12)) // ISATAP interface identifier
	}
	return out
}

// CheckAddr returns nil when the policy lets calls reach addr, else an
// error wrapping ErrRefused that names the address and its class. An IPv6
// address that embeds an IPv4 address (embeddedIPv4) is refused when that
// IPv4 address is. The message names the address: it is for the operator's
// log and for the user who typed the address, not for a stored delivery
// error (see Describe).
func (p Policy) CheckAddr(addr netip.Addr) error {
	if p.AllowPrivate {
		return nil
	}
	addr = addr.Unmap()
	if class := classify(addr); class != "" {
		return fmt.Errorf("%w: %s is a %s address", ErrRefused, addr, class)
	}
	for _, v4 := range embeddedIPv4(addr) {
		if class := classify(v4); class != "" {
			return fmt.Errorf("%w: %s embeds %s, a %s address", ErrRefused, addr, v4, class)
		}
	}
	return nil
}

// classify names the class of a refused address, or "" for an allowed
// one (not looking inside IPv6 forms that embed an IPv4 address).
func classify(addr netip.Addr) string {
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local (cloud metadata)"
	case addr.IsMulticast(), addr.IsLinkLocalMulticast(), addr.IsInterfaceLocalMulticast():
		return "multicast"
	case addr.IsUnspecified():
		return "unspecified"
	case ipv4Compatible.Contains(addr):
		return "IPv4-compatible (deprecated)"
	}
	for _, b := range blocked {
		if b.Contains(addr) {
			return "reserved"
		}
	}
	return ""
}

// CheckURL validates a webhook URL as registered: absolute https (http too
// when private addresses are allowed), with a host, no user information,
// and, when the host is a literal IP address, one the policy allows. A
// host name is checked only when called, on the addresses it resolves to
// (Control): names change what they resolve to.
func (p Policy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowPrivate:
	default:
		return fmt.Errorf("scheme %q: want https", u.Scheme)
	}
	host := u.Hostname()
	if host == "" || u.Opaque != "" {
		return errors.New("no host")
	}
	if u.User != nil {
		return errors.New("user information is not allowed")
	}
	if len(raw) > 2048 {
		return errors.New("longer than 2048 characters")
	}
	if addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		return p.CheckAddr(addr)
	}
	return nil
}

// Control is a net.Dialer Control hook: it refuses to connect to an
// address the policy does not allow. It runs after DNS resolution, on
// every address tried.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialled address %q", ErrRefused, address)
	}
	return p.CheckAddr(ap.Addr())
}

// Client returns an HTTP client for webhook deliveries under the policy:
// every dial checked by Control, no proxy (which would hide the address
// dialled), redirects returned as they are (never followed), and requests
// bounded by timeout.
func (p Policy) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: p.Control}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
