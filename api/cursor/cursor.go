// Package cursor makes the opaque, tamper-evident pagination cursors of the
// API: a keyset position sealed with an HMAC over the position, the listing
// it belongs to, the user and the filters, so a forged, altered or foreign
// cursor is refused. Several keys may be configured, newest first: the
// newest signs, every key verifies, so the key can be rotated while cursors
// issued under the previous one stay valid.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// ErrInvalid is returned for any cursor that was not issued for this
// listing, user and filter set.
var ErrInvalid = errors.New("invalid cursor")

const (
	version    = 1
	payloadLen = 1 + 8 + 16
	macLen     = 16
)

// MinKeyLen is the shortest cursor key ParseKeys accepts, in bytes.
const MinKeyLen = 16

// Codec seals cursors with its newest key and opens those sealed with any
// of its keys.
type Codec struct {
	keys [][]byte // newest first
}

// NewCodec returns a codec that signs with secret and also verifies cursors
// signed with the older keys (keys of earlier rotations, newest first). At
// least 32 random bytes per key are advised.
func NewCodec(secret []byte, older ...[]byte) *Codec {
	return &Codec{keys: append([][]byte{secret}, older...)}
}

// ParseKeys parses a comma-separated list of cursor keys, newest first. An
// entry of hexadecimal characters that decodes to at least MinKeyLen bytes
// is used decoded; any other entry is used as text. Empty entries, entries
// shorter than MinKeyLen bytes and repeated entries are refused.
func ParseKeys(list string) ([][]byte, error) {
	parts := strings.Split(list, ",")
	keys := make([][]byte, 0, len(parts))
	seen := map[string]int{}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		key := []byte(p)
		if b, err := hex.DecodeString(p); err == nil && len(b) >= MinKeyLen {
			key = b
		}
		if len(key) < MinKeyLen {
			return nil, fmt.Errorf("cursor key %d of %d is shorter than %d bytes (make one with `openssl rand -hex 32`)", i+1, len(parts), MinKeyLen)
		}
		if j, dup := seen[string(key)]; dup {
			return nil, fmt.Errorf("cursor keys %d and %d are the same key", j+1, i+1)
		}
		seen[string(key)] = i
		keys = append(keys, key)
	}
	return keys, nil
}

// Binding names what a cursor belongs to: the listing, the user and a
// canonical form of the filters.
type Binding struct {
	Listing string
	UserID  uuid.UUID
	Filters string
}

// Encode seals a keyset position with the newest key.
func (c *Codec) Encode(b Binding, k storage.Keyset) string {
	buf := make([]byte, payloadLen, payloadLen+macLen)
	buf[0] = version
	binary.BigEndian.PutUint64(buf[1:9], uint64(k.Date.UnixMicro()))
	copy(buf[9:25], k.ID[:])
	buf = append(buf, mac(c.keys[0], b, buf)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// Decode opens a cursor issued by Encode, under any of the codec's keys,
// for the same binding.
func (c *Codec) Decode(b Binding, s string) (storage.Keyset, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != payloadLen+macLen || raw[0] != version {
		return storage.Keyset{}, ErrInvalid
	}
	if !c.verify(b, raw[:payloadLen], raw[payloadLen:]) {
		return storage.Keyset{}, ErrInvalid
	}
	var k storage.Keyset
	k.Date = time.UnixMicro(int64(binary.BigEndian.Uint64(raw[1:9]))).UTC()
	copy(k.ID[:], raw[9:25])
	if k.ID == uuid.Nil {
		return storage.Keyset{}, ErrInvalid
	}
	return k, nil
}

// verify reports whether sum is the MAC of payload under one of the keys.
func (c *Codec) verify(b Binding, payload, sum []byte) bool {
	for _, key := range c.keys {
		if hmac.Equal(sum, mac(key, b, payload)) {
			return true
		}
	}
	return false
}

func mac(key []byte, b Binding, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	m.Write([]byte{0})
	m.Write([]byte(b.Listing))
	m.Write([]byte{0})
	m.Write(b.UserID[:])
	m.Write([]byte(b.Filters))
	return m.Sum(nil)[:macLen]
}
