package main

import (
	"context"
	"strings"
	"testing"
)

// TestServeRefusesABadPublicURL: FINSYNC_PUBLIC_URL must be an absolute
// http(s) URL of scheme, host and optional path; anything else stops serve
// before it connects to anything, naming the variable.
func TestServeRefusesABadPublicURL(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	for _, bad := range []string{"api.example.com", "/finsync", "ftp://api.example.com", "https://", "https://user:pw@api.example.com",
		"https://api.example.com/?x=1", "https://api.example.com/#top", "https://api.example.com/?"} {
		t.Run(bad, func(t *testing.T) {
			t.Setenv("FINSYNC_PUBLIC_URL", bad)
			var out, errOut syncBuffer
			root := newRoot(&out, &errOut)
			root.SetArgs([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none", "serve", "--metrics-addr", ""})
			if err := root.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "FINSYNC_PUBLIC_URL") {
				t.Fatalf("serve with FINSYNC_PUBLIC_URL=%q: %v, want a refusal naming it", bad, err)
			}
		})
	}
}

// TestPublicURLDefaultsToTheListenAddress: set, FINSYNC_PUBLIC_URL is
// used as given; unset, links name http://<listen address>, an
// unspecified host read as localhost, and the caller is told it defaulted.
func TestPublicURLDefaultsToTheListenAddress(t *testing.T) {
	cases := []struct {
		env, addr, want string
		defaulted       bool
	}{
		{"https://api.example.com/finsync", "127.0.0.1:8080", "https://api.example.com/finsync", false},
		{"http://10.0.0.5:8080", "127.0.0.1:8080", "http://10.0.0.5:8080", false},
		{"", "127.0.0.1:8080", "http://127.0.0.1:8080", true},
		{"", ":8080", "http://localhost:8080", true},
		{"", "0.0.0.0:9000", "http://localhost:9000", true},
		{"", "[::]:9000", "http://localhost:9000", true},
		{"", "[::1]:9000", "http://[::1]:9000", true},
	}
	for _, c := range cases {
		u, defaulted, err := config{PublicURL: c.env}.publicURL(c.addr)
		if err != nil || u.String() != c.want || defaulted != c.defaulted {
			t.Errorf("FINSYNC_PUBLIC_URL=%q, --addr %s: %v, %v, %v; want %s, %v", c.env, c.addr, u, defaulted, err, c.want, c.defaulted)
		}
	}
	if _, _, err := (config{}).publicURL("no-port"); err == nil {
		t.Error("a listen address without a port gave a URL")
	}
}
