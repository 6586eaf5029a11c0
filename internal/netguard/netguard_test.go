package netguard_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/internal/netguard"
)

func TestCheckAddrRefusesNonPublicAddresses(t *testing.T) {
	var deny netguard.Policy
	refused := []string{
		"127.0.0.1", "127.5.5.5", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"fe80::1", "fc00::1", "fd00:ec2::254", "224.0.0.1", "ff02::1", "0.0.0.0", "::", "100.100.100.200",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "255.255.255.255",
	}
	for _, s := range refused {
		err := deny.CheckAddr(netip.MustParseAddr(s))
		if !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("%s: got %v, want a refusal", s, err)
		}
	}
	for _, s := range []string{"93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"} {
		if err := deny.CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: refused: %v", s, err)
		}
	}
	allow := netguard.Policy{AllowPrivate: true}
	if err := allow.CheckAddr(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("allow-private refused loopback: %v", err)
	}
}

// TestCheckAddrRefusesIPv6FormsOfRefusedIPv4 checks every IPv6 form that
// carries an IPv4 address, at registration (CheckURL on a literal) and at
// dial time (Control on the dialled address): refused when the IPv4
// address is, allowed when it is public (apart from IPv4-compatible
// addresses, deprecated and refused whole).
func TestCheckAddrRefusesIPv6FormsOfRefusedIPv4(t *testing.T) {
	cases := []struct {
		name, addr string
		refused    bool
	}{
		{"mapped loopback", "::ffff:127.0.0.1", true},
		{"mapped private", "::ffff:192.168.1.1", true},
		{"mapped metadata", "::ffff:169.254.169.254", true},
		{"mapped public", "::ffff:93.184.216.34", false},
		{"compatible loopback", "::127.0.0.1", true},
		{"compatible private", "::10.0.0.1", true},
		{"compatible public (deprecated form)", "::8.8.8.8", true},
		{"translated loopback", "::ffff:0:127.0.0.1", true},
		{"translated public", "::ffff:0:8.8.8.8", false},
		{"6to4 loopback", "2002:7f00:1::1", true},
		{"6to4 private", "2002:c0a8:101::1", true},
		{"6to4 metadata", "2002:a9fe:a9fe::", true},
		{"6to4 CGNAT", "2002:6464:64c8::1", true},
		{"6to4 public", "2002:5db8:d822::1", false},
		{"NAT64 loopback", "64:ff9b::127.0.0.1", true},
		{"NAT64 private", "64:ff9b::a00:1", true},
		{"NAT64 unspecified", "64:ff9b::", true},
		{"NAT64 public", "64:ff9b::93.184.216.34", false},
		{"local-use NAT64", "64:ff9b:1::5db8:d822", true},
		{"Teredo client loopback", "2001:0:4136:e378:8000:63bf:80ff:fffe", true},
		{"Teredo server private", "2001:0:a00:1::1", true},
		{"Teredo public", "2001:0:4136:e378:8000:63bf:3fff:fdd2", false},
		{"ISATAP loopback", "2001:4860:1:1:0:5efe:7f00:1", true},
		{"ISATAP private (universal)", "2001:4860:1:1:200:5efe:a00:1", true},
		{"ISATAP public", "2001:4860:1:1:0:5efe:5db8:d822", false},
		{"site-local", "fec0::1", true},
		{"site-local top", "feff:ffff::1", true},
		{"unique-local", "fd12:3456::1", true},
		{"link-local", "fe80::1", true},
		{"discard-only", "100::1", true},
		{"public", "2606:4700:4700::1111", false},
	}
	var deny netguard.Policy
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := netip.MustParseAddr(c.addr)
			errs := map[string]error{
				"CheckAddr": deny.CheckAddr(addr),
				"CheckURL":  deny.CheckURL("https://[" + c.addr + "]:8443/hook"),
				"Control":   deny.Control("tcp6", netip.AddrPortFrom(addr, 443).String(), nil),
			}
			for where, err := range errs {
				if c.refused && !errors.Is(err, netguard.ErrRefused) {
					t.Errorf("%s(%s): got %v, want a refusal", where, c.addr, err)
				}
				if !c.refused && err != nil {
					t.Errorf("%s(%s): refused: %v", where, c.addr, err)
				}
			}
			if err := (netguard.Policy{AllowPrivate: true}).CheckAddr(addr); err != nil {
				t.Errorf("allow-private refused %s: %v", c.addr, err)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	var deny netguard.Policy
	allow := netguard.Policy{AllowPrivate: true}
	cases := []struct {
		url     string
		p       netguard.Policy
		wantErr string
	}{
		{"https://hooks.example.com/finsync", deny, ""},
		{"https://hooks.example.com:8443/x?y=1", deny, ""},
		{"http://hooks.example.com/x", deny, "scheme"},
		{"http://127.0.0.1:8080/x", allow, ""},
		{"https://127.0.0.1/x", deny, "loopback"},
		{"https://[::1]/x", deny, "loopback"},
		{"https://10.0.0.5/x", deny, "private"},
		{"https://169.254.169.254/latest/meta-data", deny, "link-local"},
		{"https://[fe80::1]/x", deny, "link-local"},
		{"ftp://hooks.example.com/x", deny, "scheme"},
		{"hooks.example.com/x", deny, "scheme"},
		{"https:///x", deny, "no host"},
		{"https://user:pw@hooks.example.com/x", deny, "user information"},
		{"https://hooks.example.com/" + strings.Repeat("a", 2100), deny, "2048"},
		{"://bad", deny, "not a URL"},
	}
	for _, c := range cases {
		err := c.p.CheckURL(c.url)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.url, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: got %v, want an error about %q", c.url, err, c.wantErr)
		}
	}
}

// TestClientChecksTheDialledAddressAndNeverRedirects dials a real local
// server: refused under the default policy (after resolving "localhost"),
// reached when private addresses are allowed, and a redirect comes back
// as the 3xx answer instead of being followed.
func TestClientChecksTheDialledAddressAndNeverRedirects(t *testing.T) {
	followed := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/target" {
			followed = true
		}
		http.Redirect(w, r, "/target", http.StatusFound)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	_, err := netguard.Policy{}.Client(5 * time.Second).Get("http://localhost" + port + "/start")
	if !errors.Is(err, netguard.ErrRefused) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("default policy: got %v, want a loopback refusal", err)
	}
	resp, err := netguard.Policy{AllowPrivate: true}.Client(5 * time.Second).Get(srv.URL + "/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || followed {
		t.Fatalf("status %d, followed %v: want the 302 itself, not followed", resp.StatusCode, followed)
	}
}

func TestParseAllowPrivate(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true} {
		got, err := netguard.ParseAllowPrivate(v)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v", v, got, err)
		}
	}
	for _, v := range []string{"true", "yes", "2", " 1"} {
		if _, err := netguard.ParseAllowPrivate(v); err == nil || !strings.Contains(err.Error(), netguard.EnvAllowPrivate) {
			t.Errorf("%q: got %v, want an error naming the variable", v, err)
		}
	}
}
