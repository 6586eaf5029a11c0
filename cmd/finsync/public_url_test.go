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
