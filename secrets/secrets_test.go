package secrets

import (
	"bytes"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := FromHex(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"api_key":"sk_test_123"}`)
	sealed, err := b.Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("sk_test")) {
		t.Fatal("plaintext visible in sealed form")
	}
	got, err := b.Open(sealed)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("open: %s %v", got, err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open(sealed); err != ErrDecrypt {
		t.Fatalf("tampered: %v", err)
	}
	other, _ := FromHex(strings.Repeat("cd", 32))
	sealed2, _ := b.Seal(msg)
	if _, err := other.Open(sealed2); err != ErrDecrypt {
		t.Fatalf("other key: %v", err)
	}
	if _, err := FromHex("abcd"); err == nil {
		t.Fatal("short key accepted")
	}
}
