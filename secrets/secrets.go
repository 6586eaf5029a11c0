// Package secrets encrypts provider credentials and destination secrets at
// rest with AES-256-GCM under a ring of keys, newest first: the newest key
// seals, every key opens, so a key can be rotated without downtime.
//
// A sealed value names the key that sealed it:
//
//	0x4b | key id (4 bytes) | nonce (12 bytes) | ciphertext and tag
//
// where the key id is derived from the key (see KeyID) and the first five
// bytes are authenticated as additional data. Values sealed before key ids
// existed (nonce | ciphertext and tag) still open: they are tried against
// every key.
package secrets

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the AES-256 key length in bytes.
const KeySize = 32

// keyIDLen is the length of the key id stored in each sealed value.
const keyIDLen = 4

// formatKeyed marks a value that carries the id of the key that sealed it.
const formatKeyed = 0x4b

// headerLen is the format byte and the key id.
const headerLen = 1 + keyIDLen

// ErrDecrypt is returned for a value that was altered or sealed with none of
// the configured keys; the wrapping error says which key id it names.
var ErrDecrypt = errors.New("decrypt secret: message authentication failed")

// Box seals with the newest of its keys and opens with any of them. It is
// safe for concurrent use.
type Box struct {
	keys []boxKey // newest first
}

type boxKey struct {
	id   [keyIDLen]byte
	aead cipher.AEAD
}

// New returns a box for one or more 32-byte keys, newest first. Two keys
// with the same id (the same key given twice) are refused.
func New(keys ...[]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, errors.New("encryption key: none given")
	}
	b := &Box{keys: make([]boxKey, 0, len(keys))}
	seen := map[[keyIDLen]byte]int{}
	for i, key := range keys {
		if len(key) != KeySize {
			return nil, fmt.Errorf("encryption key %d of %d must be %d bytes, got %d", i+1, len(keys), KeySize, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("encryption key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("encryption key %d: %w", i+1, err)
		}
		k := boxKey{id: keyID(key), aead: aead}
		if j, dup := seen[k.id]; dup {
			return nil, fmt.Errorf("encryption keys %d and %d are the same key (id %x)", j+1, i+1, k.id)
		}
		seen[k.id] = i
		b.keys = append(b.keys, k)
	}
	return b, nil
}

// FromHex returns a box for a comma-separated list of keys, newest first,
// each 64 hexadecimal characters (as `openssl rand -hex 32` prints).
func FromHex(list string) (*Box, error) {
	parts := strings.Split(list, ",")
	keys := make([][]byte, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		key, err := hex.DecodeString(p)
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("encryption key %d of %d must be 64 hex characters (make one with `openssl rand -hex 32`)", i+1, len(parts))
		}
		keys = append(keys, key)
	}
	return New(keys...)
}

// KeyID returns the short public id of a key, in hex: the first four bytes
// of HMAC-SHA256(key, "finsync key id"). It names a key in sealed values and
// in messages without revealing it.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

func keyID(key []byte) [keyIDLen]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("finsync key id"))
	var id [keyIDLen]byte
	copy(id[:], m.Sum(nil))
	return id
}

// KeyIDs returns the ids of the box's keys, newest first.
func (b *Box) KeyIDs() []string {
	ids := make([]string, len(b.keys))
	for i, k := range b.keys {
		ids[i] = hex.EncodeToString(k.id[:])
	}
	return ids
}

// Seal encrypts plaintext with the newest key under a random nonce.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	k := b.keys[0]
	n := k.aead.NonceSize()
	out := make([]byte, headerLen+n, headerLen+n+len(plaintext)+k.aead.Overhead())
	out[0] = formatKeyed
	copy(out[1:headerLen], k.id[:])
	nonce := out[headerLen:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return k.aead.Seal(out, nonce, plaintext, out[:headerLen]), nil
}

// Open decrypts what Seal produced with any of the box's keys, and values
// sealed before key ids existed. The error wraps ErrDecrypt and names the
// key id the value carries when that key is not configured.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	out, _, err := b.open(sealed)
	return out, err
}

// Reseal opens sealed and, unless it is already sealed with the newest key
// in the current format, seals it again with the newest key. changed
// reports whether the result differs from sealed.
func (b *Box) Reseal(sealed []byte) (resealed []byte, changed bool, err error) {
	plain, newest, err := b.open(sealed)
	if err != nil {
		return nil, false, err
	}
	if newest {
		return sealed, false, nil
	}
	out, err := b.Seal(plain)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// open returns the plaintext and whether the value was sealed by the
// newest key in the current format.
func (b *Box) open(sealed []byte) ([]byte, bool, error) {
	if k, i, ok := b.keyFor(sealed); ok {
		n := k.aead.NonceSize()
		if len(sealed) >= headerLen+n+k.aead.Overhead() {
			out, err := k.aead.Open(nil, sealed[headerLen:headerLen+n], sealed[headerLen+n:], sealed[:headerLen])
			if err == nil {
				return out, i == 0, nil
			}
		}
	}
	// A value of the format without key ids, or one whose header happened
	// to look like a key id: try every key.
	for _, k := range b.keys {
		if out, ok := openLegacy(k.aead, sealed); ok {
			return out, false, nil
		}
	}
	if len(sealed) >= headerLen && sealed[0] == formatKeyed {
		if _, _, known := b.keyFor(sealed); !known {
			return nil, false, fmt.Errorf("%w: sealed with key id %x, which is not among the configured keys (%s)",
				ErrDecrypt, sealed[1:headerLen], strings.Join(b.KeyIDs(), ", "))
		}
	}
	return nil, false, fmt.Errorf("%w: altered, or sealed with none of the configured keys (%s)", ErrDecrypt, strings.Join(b.KeyIDs(), ", "))
}

// keyFor returns the key a value of the current format names.
func (b *Box) keyFor(sealed []byte) (boxKey, int, bool) {
	if len(sealed) < headerLen || sealed[0] != formatKeyed {
		return boxKey{}, 0, false
	}
	for i, k := range b.keys {
		if bytes.Equal(k.id[:], sealed[1:headerLen]) {
			return k, i, true
		}
	}
	return boxKey{}, 0, false
}

// openLegacy opens a value sealed before key ids existed: nonce | sealed.
func openLegacy(aead cipher.AEAD, sealed []byte) ([]byte, bool) {
	n := aead.NonceSize()
	if len(sealed) < n+aead.Overhead() {
		return nil, false
	}
	out, err := aead.Open(nil, sealed[:n], sealed[n:], nil)
	return out, err == nil
}

// Generate returns a new random key as 64 hexadecimal characters.
func Generate() (string, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("generate key: %w", err)
	}
	return hex.EncodeToString(key), nil
}
