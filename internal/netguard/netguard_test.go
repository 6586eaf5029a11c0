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
