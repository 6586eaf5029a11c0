package ops

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
)

// MinTokenBytes is the fewest random bytes an operator token must encode.
const MinTokenBytes = 32

// Thresholds of the token's randomness checks (docs/ops.md, "The token").
// Over 200,000 random 32-byte tokens, the lowest Shannon estimate seen was
// 3.39 bits per hex digit and 4.16 bits per base64 character; a 4-byte
// sequence repeats in random 32 bytes with a probability near 1e-7.
const (
	minHexBitsPerChar    = 3.0
	minBase64BitsPerChar = 4.0
	repeatWindow         = 4
)

// ValidateToken reports whether token may be the operator credential. The
// rule: the token is hex (digits and a-f only, either case; read as hex
// whenever it could be) or base64 (standard or URL alphabet, padded or
// not) of at least MinTokenBytes bytes, and it looks random — its
// characters spread over its alphabet (a Shannon estimate of at least 3.0
// bits per hex digit, 4.0 per base64 character), at least half of its
// decoded bytes distinct, and no 4-byte sequence of them repeated. Caveat:
// no check can prove randomness; it refuses typed, short and patterned
// values (a 32-character phrase, "aaaa…", a repeated block), not every
// long mixed-case phrase that happens to be valid base64. Make the token
// with `finsync keys generate` or `openssl rand -hex 32`.
func ValidateToken(token string) error {
	const hint = " (make one with `finsync keys generate` or `openssl rand -hex 32`)"
	if strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return errors.New("must not contain white space, control or non-ASCII characters" + hint)
	}
	raw, alphabet, err := decodeToken(token)
	if err != nil {
		return fmt.Errorf("%w%s", err, hint)
	}
	if len(raw) < MinTokenBytes {
		return fmt.Errorf("must encode at least %d random bytes as hex (%d characters) or base64 (%d characters); it encodes %d%s",
			MinTokenBytes, 2*MinTokenBytes, base64.RawStdEncoding.EncodedLen(MinTokenBytes), len(raw), hint)
	}
	if err := looksRandom(token, raw, alphabet); err != nil {
		return fmt.Errorf("%w%s", err, hint)
	}
	return nil
}

// decodeToken decodes a token as hex when it is hex, else as base64; it
// names which, for the randomness checks.
func decodeToken(token string) (raw []byte, alphabet string, err error) {
	if token == "" {
		return nil, "", errors.New("is empty")
	}
	if isHex(token) {
		if len(token)%2 != 0 {
			return nil, "", errors.New("is hex of an odd number of digits")
		}
		raw, err = hex.DecodeString(token)
		return raw, "hex", err
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.Strict().DecodeString(token); err == nil {
			return raw, "base64", nil
		}
	}
	return nil, "", errors.New("must be hex or base64 (standard or URL alphabet)")
}

func isHex(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
	}) < 0
}

// looksRandom applies the randomness checks of ValidateToken to a token
// and its decoded bytes.
func looksRandom(token string, raw []byte, alphabet string) error {
	chars, floor := token, minBase64BitsPerChar
	if alphabet == "hex" {
		chars, floor = strings.ToLower(token), minHexBitsPerChar
	}
	chars = strings.TrimRight(chars, "=")
	if h := shannon([]byte(chars)); h < floor {
		return fmt.Errorf("does not look random: its characters carry %.2f bits each, under the %.1f of random %s", h, floor, alphabet)
	}
	distinct := map[byte]bool{}
	for _, b := range raw {
		distinct[b] = true
	}
	if want := min(len(raw), 256) / 2; len(distinct) < want {
		return fmt.Errorf("does not look random: only %d distinct bytes among %d", len(distinct), len(raw))
	}
	seen := map[string]bool{}
	for i := 0; i+repeatWindow <= len(raw); i++ {
		w := string(raw[i : i+repeatWindow])
		if seen[w] {
			return errors.New("does not look random: a sequence of its bytes repeats")
		}
		seen[w] = true
	}
	return nil
}

// shannon is the plug-in Shannon estimate of s in bits per symbol.
func shannon(s []byte) float64 {
	var counts [256]int
	for _, b := range s {
		counts[b]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}
