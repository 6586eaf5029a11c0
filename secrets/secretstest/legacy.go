// Package secretstest makes sealed values for tests of the secrets package
// and its users.
package secretstest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// SealWithoutKeyID seals msg with keyHex (64 hex characters) in the format
// written before sealed values carried a key id: the nonce, then the
// AES-256-GCM ciphertext. Tests use it to check that such values still open.
// It fails the test on a bad key.
func SealWithoutKeyID(tb testing.TB, keyHex string, msg []byte) []byte {
	tb.Helper()
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		tb.Fatalf("key: %v", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		tb.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		tb.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		tb.Fatal(err)
	}
	return aead.Seal(nonce, nonce, msg, nil)
}
