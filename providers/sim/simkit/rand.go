package simkit

import (
	"encoding/binary"
	"hash/fnv"
)

// Mix is the splitmix64 finaliser: a cheap, well-distributed 64-bit hash.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Hash2 combines a seed and a value into one well-mixed 64-bit value.
func Hash2(seed, v uint64) uint64 { return Mix(seed ^ Mix(v)) }

// HashString derives a 64-bit value from a seed and a list of strings.
func HashString(seed uint64, parts ...string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	_, _ = h.Write(b[:])
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return Mix(h.Sum64())
}

// Pick returns an index in [0, n) from h.
func Pick(h uint64, n int) int { return int(h % uint64(n)) }

// Between returns a value in [lo, hi] from h.
func Between(h uint64, lo, hi int64) int64 { return lo + int64(h%uint64(hi-lo+1)) }

// HexDigits are the lowercase hexadecimal digits.
const HexDigits = "0123456789abcdef"

// Alnum are the base62 digits, in the order ids use them.
const Alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// AppendHex appends n lowercase hex digits derived from h (and further
// hashing when n exceeds 16).
func AppendHex(b []byte, h uint64, n int) []byte {
	for i := 0; i < n; i++ {
		if i > 0 && i%16 == 0 {
			h = Mix(h)
		}
		b = append(b, HexDigits[(h>>(uint(i%16)*4))&0xf])
	}
	return b
}

// AppendAlnum appends n base62 characters derived from h.
func AppendAlnum(b []byte, h uint64, n int) []byte {
	x := h
	for i := 0; i < n; i++ {
		if i > 0 && i%10 == 0 {
			h = Mix(h)
			x = h
		}
		b = append(b, Alnum[x%62])
		x /= 62
	}
	return b
}

// UUIDFrom formats a version-4 style UUID derived from h.
func UUIDFrom(h uint64) string {
	b := make([]byte, 0, 36)
	b = AppendUUID(b, h, Mix(h))
	return string(b)
}

// AppendUUID appends a version-4 style UUID built from two 64-bit values.
func AppendUUID(b []byte, hi, lo uint64) []byte {
	b = AppendHexFixed(b, hi>>32, 8)
	b = append(b, '-')
	b = AppendHexFixed(b, (hi>>16)&0xffff, 4)
	b = append(b, '-', '4')
	b = AppendHexFixed(b, hi&0xfff, 3)
	b = append(b, '-', HexDigits[8|(lo>>60)&0x3])
	b = AppendHexFixed(b, (lo>>48)&0xfff, 3)
	b = append(b, '-')
	return AppendHexFixed(b, lo&0xffffffffffff, 12)
}

// AppendHexFixed appends v as exactly n lowercase hex digits (most
// significant first).
func AppendHexFixed(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, HexDigits[(v>>(uint(i)*4))&0xf])
	}
	return b
}

// ParseHexFixed parses a lowercase hex string into a uint64.
func ParseHexFixed(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// AppendDigits appends n decimal digits derived from h.
func AppendDigits(b []byte, h uint64, n int) []byte {
	for i := 0; i < n; i++ {
		b = append(b, byte('0'+h%10))
		h /= 10
	}
	return b
}

// Money converts minor units to a JSON-friendly float, for the providers
// whose wire format has float amounts (display only: never read back).
func Money(c int64) float64 { return float64(c) / 100 }
