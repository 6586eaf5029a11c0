package secrets

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/finsync/finsync/secrets/secretstest"
)

var (
	oldHex = strings.Repeat("ab", 32)
	newHex = strings.Repeat("cd", 32)
	msg    = []byte(`{"api_key":"sk_test_123"}`)
)

func mustBox(t *testing.T, list string) *Box {
	t.Helper()
	b, err := FromHex(list)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealOpen(t *testing.T) {
	b := mustBox(t, oldHex)
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
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := b.Open(tampered); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("tampered: %v", err)
	}
	if _, err := FromHex("abcd"); err == nil {
		t.Fatal("short key accepted")
	}
}

// TestTheHeaderIsAuthenticated: a value whose key id was rewritten to
// another configured key's does not open.
func TestTheHeaderIsAuthenticated(t *testing.T) {
	b := mustBox(t, newHex+","+oldHex)
	sealed, err := mustBox(t, oldHex).Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Clone(sealed)
	id, _ := hex.DecodeString(b.KeyIDs()[0])
	copy(forged[1:headerLen], id)
	if _, err := b.Open(forged); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("value with a rewritten key id: %v", err)
	}
}

func TestRotation(t *testing.T) {
	old := mustBox(t, oldHex)
	both := mustBox(t, newHex+", "+oldHex)
	sealedOld, err := old.Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	sealedNew, err := both.Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	for name, sealed := range map[string][]byte{"sealed with the old key": sealedOld, "sealed with the new key": sealedNew} {
		if got, err := both.Open(sealed); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%s: %s %v", name, got, err)
		}
	}
	if _, err := mustBox(t, newHex).Open(sealedOld); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("old value opened without the old key: %v", err)
	}
	if got, err := mustBox(t, newHex).Open(sealedNew); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("new value with only the new key: %s %v", got, err)
	}
	if got := both.KeyIDs(); len(got) != 2 || got[0] != KeyID(bytes.Repeat([]byte{0xcd}, 32)) {
		t.Fatalf("key ids %v", got)
	}
}

func TestOldFormatOpens(t *testing.T) {
	legacy := secretstest.SealWithoutKeyID(t, oldHex, msg)
	for _, list := range []string{oldHex, newHex + "," + oldHex} {
		if got, err := mustBox(t, list).Open(legacy); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("keys %s: %s %v", list, got, err)
		}
	}
	if _, err := mustBox(t, newHex).Open(legacy); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("legacy value opened with another key: %v", err)
	}
}

func TestUnknownKeyIsNamed(t *testing.T) {
	sealed, err := mustBox(t, oldHex).Seal(msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustBox(t, newHex).Open(sealed)
	if !errors.Is(err, ErrDecrypt) {
		t.Fatalf("err %v", err)
	}
	oldID := KeyID(bytes.Repeat([]byte{0xab}, 32))
	newID := KeyID(bytes.Repeat([]byte{0xcd}, 32))
	if !strings.Contains(err.Error(), "key id "+oldID) || !strings.Contains(err.Error(), newID) {
		t.Fatalf("error does not name the missing key %s and the configured %s: %v", oldID, newID, err)
	}
}

func TestReseal(t *testing.T) {
	both := mustBox(t, newHex+","+oldHex)
	sealedOld, _ := mustBox(t, oldHex).Seal(msg)
	for name, sealed := range map[string][]byte{"old key": sealedOld, "old format": secretstest.SealWithoutKeyID(t, newHex, msg)} {
		out, changed, err := both.Reseal(sealed)
		if err != nil || !changed {
			t.Fatalf("%s: changed=%v err=%v", name, changed, err)
		}
		if got, err := mustBox(t, newHex).Open(out); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%s: resealed value does not open with the new key alone: %v", name, err)
		}
		again, changed, err := both.Reseal(out)
		if err != nil || changed || !bytes.Equal(again, out) {
			t.Fatalf("%s: resealing a value of the newest key changed it (%v, %v)", name, changed, err)
		}
	}
	if _, _, err := mustBox(t, newHex).Reseal(sealedOld); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("reseal without the sealing key: %v", err)
	}
}

func TestKeyListsAreChecked(t *testing.T) {
	for name, list := range map[string]string{
		"empty":          "",
		"empty entry":    newHex + ",",
		"short":          newHex + ",abcd",
		"not hex":        strings.Repeat("zz", 32),
		"same key twice": newHex + "," + newHex,
	} {
		if _, err := FromHex(list); err == nil {
			t.Errorf("%s: %q accepted", name, list)
		}
	}
	k, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromHex(k + "," + oldHex); err != nil {
		t.Fatalf("generated key refused: %v", err)
	}
}
