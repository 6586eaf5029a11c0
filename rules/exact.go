package rules

import "unicode/utf8"

// Exact completes a rule's Prefilter into an exact test on the rows whose
// text fields named in ASCIIFields hold only ASCII characters: on such a
// row the rule matches if and only if every term of its Prefilter and
// every term of Texts hold. (The prefilter's account, amount and day terms
// are exact, and so is its Like on ASCII values; Texts adds what the
// prefilter leaves out: negated conditions, oneOf as a plain equality,
// and matches conditions as PostgreSQL regular expressions.) Caveat: on a row with a non-ASCII character in one of
// ASCIIFields it says nothing; the caller must evaluate the rule there.
type Exact struct {
	Texts []ExactText
	// ASCIIFields are the text fields (TextSummary...) the rule reads.
	ASCIIFields []string
}

// ExactText is one text condition on an ASCII value: when Regex is set,
// the value itself (not lowercased) read under the C collation matches
// Regex, an ARE for PostgreSQL's ~ (found anywhere in the value); else the
// value with its ASCII letters lowercased matches Like (a LIKE pattern, \
// escaping % _ and \) or, when OneOf is not nil, equals one of OneOf.
// Negated inverts the test. A missing value is the empty string; for
// TextMerchantName the value is the provider's merchant name.
type ExactText struct {
	Field   string
	Negated bool
	Like    string
	OneOf   []string
	Regex   string
}

// Exact derives the rule's exact form; false when it has none (a matches
// condition whose RE2 expression areOf does not translate, or a folded
// text holding a non-ASCII character).
func (r *Rule) Exact() (Exact, bool) {
	var ex Exact
	for i := range r.conds {
		c := &r.conds[i]
		if c.kind > opTextMatches {
			continue
		}
		t, ok := c.exactText()
		if !ok {
			return Exact{}, false
		}
		if t.Negated || t.OneOf != nil || t.Regex != "" {
			ex.Texts = append(ex.Texts, t)
		}
		if f := textFieldName(c.slot); !containsString(ex.ASCIIFields, f) {
			ex.ASCIIFields = append(ex.ASCIIFields, f)
		}
	}
	return ex, true
}

// exactText is a text condition's exact term. The condition compares
// folded strings; an ASCII value's folded form is the value with its ASCII
// letters lowercased, so an ASCII text compares exactly by LIKE (the
// prefilter's Like for the positive tests), and a oneOf item holding a
// non-ASCII character never equals it. A matches condition reads the raw
// value: its expression translated by areOf.
func (c *cond) exactText() (ExactText, bool) {
	t := ExactText{Field: textFieldName(c.slot)}
	switch c.kind {
	case opTextIs, opTextIsNot, opTextContains, opTextNotContains, opTextPrefix, opTextSuffix:
		if !isASCII(c.text) {
			return ExactText{}, false
		}
		kind := c.kind
		switch kind {
		case opTextIsNot:
			kind, t.Negated = opTextIs, true
		case opTextNotContains:
			kind, t.Negated = opTextContains, true
		}
		t.Like = likeAffixes(kind, likeEscape(c.text))
		return t, true
	case opTextOneOf:
		t.OneOf = []string{}
		for _, s := range c.texts {
			if isASCII(s) {
				t.OneOf = append(t.OneOf, s)
			}
		}
		return t, true
	case opTextMatches:
		are, ok := areOf(c.re.String())
		if !ok {
			return ExactText{}, false
		}
		t.Regex = are
		return t, true
	default:
		return ExactText{}, false
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// SetsCategory reports whether the rule's outcomes set the category.
func (r *Rule) SetsCategory() bool { return r.setCategory }

// SetsMerchantName reports whether the rule's outcomes set the merchant
// name.
func (r *Rule) SetsMerchantName() bool { return r.setMerchant }

// Hides reports whether the rule's outcomes hide the transaction.
func (r *Rule) Hides() bool { return r.hide }

// Category returns the category the rule sets (zero when it sets none).
func (r *Rule) Category() CategoryRef { return r.category }

// MerchantName returns the merchant name the rule sets ("" when it sets
// none).
func (r *Rule) MerchantName() string { return r.merchant }
