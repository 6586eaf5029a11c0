package rules

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// foldString maps every rune of s to the representative of its Unicode
// simple case-folding orbit, so that two strings are equal under
// strings.EqualFold exactly when their folded forms are byte-equal, and a
// folded string contains, starts or ends with another folded string exactly
// when the originals do so case-insensitively. Invalid UTF-8 bytes become
// U+FFFD. Strings that are already folded ASCII are returned without copying.
func foldString(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			break
		}
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(foldRune(r))
		i += size
	}
	return b.String()
}

// foldRune returns the representative of r's simple case-folding orbit: the
// smallest rune of the orbit, lowercased when that is an ASCII capital.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < least {
			least = f
		}
	}
	if 'A' <= least && least <= 'Z' {
		return least + 'a' - 'A'
	}
	return least
}
