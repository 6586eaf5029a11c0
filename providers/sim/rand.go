package sim

import (
	"encoding/binary"
	"hash/fnv"
)

// mix is the splitmix64 finaliser: a cheap, well-distributed 64-bit hash.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hash2 combines a seed and a value into one well-mixed 64-bit value.
func hash2(seed, v uint64) uint64 { return mix(seed ^ mix(v)) }

// hashString derives a 64-bit value from a seed and a list of strings.
func hashString(seed uint64, parts ...string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	_, _ = h.Write(b[:])
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return mix(h.Sum64())
}

// pick returns an index in [0, n) from h.
func pick(h uint64, n int) int { return int(h % uint64(n)) }

// between returns a value in [lo, hi] from h.
func between(h uint64, lo, hi int64) int64 { return lo + int64(h%uint64(hi-lo+1)) }

const hexDigits = "0123456789abcdef"
const alnum = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// appendHex appends n lowercase hex digits derived from h (and further
// hashing when n exceeds 16).
func appendHex(b []byte, h uint64, n int) []byte {
	for i := 0; i < n; i++ {
		if i > 0 && i%16 == 0 {
			h = mix(h)
		}
		b = append(b, hexDigits[(h>>(uint(i%16)*4))&0xf])
	}
	return b
}

// appendAlnum appends n base62 characters derived from h.
func appendAlnum(b []byte, h uint64, n int) []byte {
	x := h
	for i := 0; i < n; i++ {
		if i > 0 && i%10 == 0 {
			h = mix(h)
			x = h
		}
		b = append(b, alnum[x%62])
		x /= 62
	}
	return b
}

// uuidFrom formats a version-4 style UUID derived from h.
func uuidFrom(h uint64) string {
	b := make([]byte, 0, 36)
	b = appendUUID(b, h, mix(h))
	return string(b)
}

// appendUUID appends a version-4 style UUID built from two 64-bit values.
func appendUUID(b []byte, hi, lo uint64) []byte {
	b = appendHexFixed(b, hi>>32, 8)
	b = append(b, '-')
	b = appendHexFixed(b, (hi>>16)&0xffff, 4)
	b = append(b, '-', '4')
	b = appendHexFixed(b, hi&0xfff, 3)
	b = append(b, '-', hexDigits[8|(lo>>60)&0x3])
	b = appendHexFixed(b, (lo>>48)&0xfff, 3)
	b = append(b, '-')
	return appendHexFixed(b, lo&0xffffffffffff, 12)
}

// appendHexFixed appends v as exactly n lowercase hex digits (most
// significant first).
func appendHexFixed(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, hexDigits[(v>>(uint(i)*4))&0xf])
	}
	return b
}

// parseHexFixed parses a lowercase hex string into a uint64.
func parseHexFixed(s string) (uint64, bool) {
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
