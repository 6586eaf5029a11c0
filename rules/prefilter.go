package rules

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Text fields a TextTerm tests.
const (
	TextSummary             = "Summary"
	TextOriginalDescription = "OriginalDescription"
	TextMerchantName        = "MerchantName"
)

// Comparisons of AmountTerm and DayTerm.
const (
	CmpEq      = "="
	CmpGt      = ">"
	CmpGte     = ">="
	CmpLt      = "<"
	CmpLte     = "<="
	CmpBetween = "between"
)

// Prefilter is a necessary condition of a rule, in terms a database can
// test before the rule engine runs: every transaction the rule matches
// satisfies all of its terms. The converse need not hold (negated and
// regular-expression text conditions give no term), so a caller must still
// evaluate the rule on what the prefilter lets through.
type Prefilter struct {
	// Accounts, when not nil, lists the only accounts the rule can match.
	Accounts []uuid.UUID
	// NotAccounts lists accounts the rule never matches.
	NotAccounts []uuid.UUID
	Amounts     []AmountTerm
	Days        []DayTerm
	Texts       []TextTerm
}

// AmountTerm compares the transaction's amount: Cmp with Lo, or Lo..Hi
// inclusive for CmpBetween.
type AmountTerm struct {
	Cmp    string
	Lo, Hi decimal.Decimal
}

// DayTerm compares the day of the month of the transaction's date, as
// AmountTerm does; a transaction without a date never matches.
type DayTerm struct {
	Cmp    string
	Lo, Hi int
}

// TextTerm is a text condition as patterns. A value can match the
// condition only if it matches Like (an ILIKE pattern, \ escaping % _ and
// \), or, when Regex is set, it holds a non-ASCII character and matches
// Regex, or (when Like is empty) it matches Regex. Regex is in the syntax
// PostgreSQL's ~ reads (an ARE), case-sensitive, each letter standing for
// its whole case-folding orbit. Like is to be tested on the value with its
// ASCII letters lowercased (its text is folded). Like alone is exact for
// ASCII values; Regex
// is needed for the k and s (whose orbits hold the Kelvin sign and the long
// s) and for non-ASCII text. A missing value is the empty string. For
// TextMerchantName the value is the provider's merchant name.
type TextTerm struct {
	Field string
	// Literal, when not empty, is a run of the text made of characters
	// without case (digits, punctuation, spaces...) that every matching
	// value holds byte for byte: a case-sensitive test cheap enough to
	// run before the others.
	Literal string
	Like    string
	Regex   string
	// NonASCIIOnly is set when only values holding a non-ASCII character
	// can match Regex (the text itself holds one); checking that first is
	// much cheaper than the regular expression.
	NonASCIIOnly bool
}

// Prefilter derives the rule's necessary condition.
func (r *Rule) Prefilter() Prefilter {
	var pf Prefilter
	if r.allowed != nil {
		pf.Accounts = cloneIDs(r.allowed)
	}
	for i := range r.conds {
		r.conds[i].prefilter(&pf)
	}
	return pf
}

// cmpOf names the comparison of a numeric kind, by its offset from the
// first kind of its family (is, gt, gte, lt, lte, between).
func cmpOf(offset opKind) string {
	return [...]string{CmpEq, CmpGt, CmpGte, CmpLt, CmpLte, CmpBetween}[offset]
}

func (c *cond) prefilter(pf *Prefilter) {
	switch {
	case c.kind <= opTextMatches:
		if t, ok := c.textTerm(); ok {
			pf.Texts = append(pf.Texts, t)
		}
	case c.kind == opAccountIsNot:
		pf.NotAccounts = append(pf.NotAccounts, c.accounts...)
	case c.kind <= opAccountOneOf:
		pf.Accounts = intersectIDs(pf.Accounts, c.accounts)
	case c.kind <= opAmountBetween:
		pf.Amounts = append(pf.Amounts, AmountTerm{Cmp: cmpOf(c.kind - opAmountIs), Lo: c.lo.dec, Hi: c.hi.dec})
	default:
		pf.Days = append(pf.Days, DayTerm{Cmp: cmpOf(c.kind - opDayIs), Lo: c.dayLo, Hi: c.dayHi})
	}
}

// intersectIDs narrows have (nil: every account) to those in with.
func intersectIDs(have, with []uuid.UUID) []uuid.UUID {
	if have == nil {
		return cloneIDs(with)
	}
	out := []uuid.UUID{}
	for _, id := range have {
		if containsID(with, id) {
			out = append(out, id)
		}
	}
	return out
}

// textFieldName names a text slot's field.
func textFieldName(slot uint8) string {
	return [textSlots]string{TextSummary, TextOriginalDescription, TextMerchantName}[slot]
}

// textTerm is the condition's patterns; false when it has none (negations
// and regular expressions, whose RE2 syntax PostgreSQL does not share).
func (c *cond) textTerm() (TextTerm, bool) {
	t := TextTerm{Field: textFieldName(c.slot)}
	switch c.kind {
	case opTextIs, opTextContains, opTextPrefix, opTextSuffix:
		t.Literal = caselessRun(c.text)
		ascii, foldsOut := asciiText(c.text)
		if ascii {
			t.Like = likeAffixes(c.kind, likeEscape(c.text))
		}
		if !ascii || foldsOut {
			t.Regex = reAnchors(c.kind, orbitPattern(c.text))
			t.NonASCIIOnly = !ascii
		}
		return t, true
	case opTextOneOf:
		alts := make([]string, len(c.texts))
		for i, s := range c.texts {
			alts[i] = orbitPattern(s)
		}
		t.Regex = "^(?:" + strings.Join(alts, "|") + ")$"
		return t, true
	default:
		return t, false
	}
}

// caselessRun returns the longest run of s made of runes whose
// case-folding orbit is themselves alone, when it holds more than spaces;
// "" otherwise.
func caselessRun(s string) string {
	best, start := "", -1
	for i, r := range s + "A" {
		if unicode.SimpleFold(r) == r {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start > len(best) && strings.TrimSpace(s[start:i]) != "" {
			best = s[start:i]
		}
		start = -1
	}
	return best
}

// asciiText reports whether s is ASCII, and whether it holds a k or an s,
// the only ASCII letters whose case-folding orbit holds non-ASCII runes
// (the Kelvin sign, the long s): ILIKE finds every case-insensitive
// occurrence of ASCII text in ASCII values, but not in values holding
// those runes.
func asciiText(s string) (ascii, foldsOut bool) {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b >= utf8.RuneSelf:
			return false, false
		case b == 'k' || b == 's' || b == 'K' || b == 'S':
			foldsOut = true
		}
	}
	return true, foldsOut
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func likeAffixes(kind opKind, p string) string {
	switch kind {
	case opTextContains:
		return "%" + p + "%"
	case opTextPrefix:
		return p + "%"
	case opTextSuffix:
		return "%" + p
	default:
		return p
	}
}

func reAnchors(kind opKind, p string) string {
	switch kind {
	case opTextContains:
		return p
	case opTextPrefix:
		return "^" + p
	case opTextSuffix:
		return p + "$"
	default:
		return "^" + p + "$"
	}
}

// orbitPattern is a regular expression matching exactly the strings whose
// folded form is the folded string s: each rune becomes the bracket of its
// case-folding orbit, other characters are quoted.
func orbitPattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		orbit := []rune{r}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			orbit = append(orbit, f)
		}
		if len(orbit) > 1 {
			b.WriteString("[" + string(orbit) + "]")
			continue
		}
		b.WriteString(regexp.QuoteMeta(string(r)))
	}
	return b.String()
}
