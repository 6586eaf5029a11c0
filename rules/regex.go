package rules

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"
)

// areMaxRepeat is the largest count PostgreSQL's regular expressions
// accept in a bound {m,n}.
const areMaxRepeat = 255

// areNever is an ARE that matches no string of ASCII characters without
// NUL (the only values it is tested on: PostgreSQL's text holds no NUL).
const areNever = `[^\u0001-\u007f]`

// areOf translates the RE2 expression pattern, parsed as compileMatches
// parses it (Perl syntax, case-sensitive as written), into a PostgreSQL
// ARE that ~ finds in a string of ASCII characters exactly when the RE2
// expression matches it (unanchored). It re-emits the parse tree: every
// character as itself when a letter or digit, else as a \uXXXX escape;
// classes as explicit ASCII ranges (folding under (?i) becomes explicit
// brackets, so no ARE flag is relied on); groups as (?:...); ^ $ \A \z as
// \A and \Z; \b \B as \y \Y (equal on ASCII when the value is read under
// the C collation); non-greedy repeats as greedy ones (the same match or
// none). Caveat: false for what it does not translate (multi-line anchors,
// a repeat count above 255); the result says nothing about values holding
// a non-ASCII character or NUL, and must be tested on a value under the C
// collation.
func areOf(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	if !writeARE(&b, re) {
		return "", false
	}
	return b.String(), true
}

// writeARE writes re's ARE to b; false when re is outside the subset.
func writeARE(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString(areNever)
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			set := []rune{r}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					set = append(set, f)
				}
			}
			var ranges []rune
			for _, c := range set {
				ranges = append(ranges, c, c)
			}
			writeAREClass(b, ranges)
		}
	case syntax.OpCharClass:
		writeAREClass(b, re.Rune)
	case syntax.OpAnyCharNotNL:
		writeAREClass(b, []rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		writeAREClass(b, []rune{0, unicode.MaxRune})
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\Z`)
	case syntax.OpWordBoundary:
		b.WriteString(`\y`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\Y`)
	case syntax.OpCapture:
		b.WriteString("(?:")
		if !writeARE(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		if !writeARE(b, re.Sub[0]) {
			return false
		}
		b.WriteString(")")
		switch {
		case re.Op == syntax.OpStar:
			b.WriteString("*")
		case re.Op == syntax.OpPlus:
			b.WriteString("+")
		case re.Op == syntax.OpQuest:
			b.WriteString("?")
		case re.Min > areMaxRepeat || re.Max > areMaxRepeat:
			return false
		case re.Max < 0:
			fmt.Fprintf(b, "{%d,}", re.Min)
		case re.Max == re.Min:
			fmt.Fprintf(b, "{%d}", re.Min)
		default:
			fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !writeARE(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteString("|")
			}
			if !writeARE(b, sub) {
				return false
			}
		}
		b.WriteString(")")
	default: // OpBeginLine, OpEndLine (multi-line mode)
		return false
	}
	return true
}

// writeAREClass writes the class of the runes in ranges (pairs lo, hi)
// that are ASCII and not NUL: a single character alone, several as a
// bracket expression of explicit ranges, none as areNever.
func writeAREClass(b *strings.Builder, ranges []rune) {
	var clipped []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], 1), min(ranges[i+1], unicode.MaxASCII)
		if lo <= hi {
			clipped = append(clipped, lo, hi)
		}
	}
	switch {
	case len(clipped) == 0:
		b.WriteString(areNever)
		return
	case len(clipped) == 2 && clipped[0] == clipped[1]:
		writeAREChar(b, clipped[0])
		return
	}
	b.WriteString("[")
	for i := 0; i < len(clipped); i += 2 {
		writeAREChar(b, clipped[i])
		if clipped[i+1] != clipped[i] {
			b.WriteString("-")
			writeAREChar(b, clipped[i+1])
		}
	}
	b.WriteString("]")
}

// writeAREChar writes an ASCII character: itself when a letter or digit
// (never special in an ARE, in or out of brackets), else the escape
// \uXXXX (exactly four hex digits), which an ARE reads as that character
// in and out of brackets.
func writeAREChar(b *strings.Builder, r rune) {
	if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}
