// Package cursor makes the opaque, tamper-evident pagination cursors of the
// API: a keyset position sealed with an HMAC over the position, the listing
// it belongs to, the user and the filters, so a forged, altered or foreign
// cursor is refused.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
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

// Codec seals and opens cursors with a secret key.
type Codec struct {
	key []byte
}

// NewCodec returns a codec keyed with secret (at least 32 bytes advised).
func NewCodec(secret []byte) *Codec { return &Codec{key: secret} }

// Binding names what a cursor belongs to: the listing, the user and a
// canonical form of the filters.
type Binding struct {
	Listing string
	UserID  uuid.UUID
	Filters string
}

// Encode seals a keyset position.
func (c *Codec) Encode(b Binding, k storage.Keyset) string {
	buf := make([]byte, payloadLen, payloadLen+macLen)
	buf[0] = version
	binary.BigEndian.PutUint64(buf[1:9], uint64(k.Date.UnixMicro()))
	copy(buf[9:25], k.ID[:])
	buf = append(buf, c.mac(b, buf)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// Decode opens a cursor issued by Encode for the same binding.
func (c *Codec) Decode(b Binding, s string) (storage.Keyset, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) != payloadLen+macLen || raw[0] != version {
		return storage.Keyset{}, ErrInvalid
	}
	if !hmac.Equal(raw[payloadLen:], c.mac(b, raw[:payloadLen])) {
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

func (c *Codec) mac(b Binding, payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	m.Write([]byte{0})
	m.Write([]byte(b.Listing))
	m.Write([]byte{0})
	m.Write(b.UserID[:])
	m.Write([]byte(b.Filters))
	return m.Sum(nil)[:macLen]
}
