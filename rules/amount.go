package rules

import (
	"encoding/json"
	"math"

	"github.com/shopspring/decimal"
)

const (
	// amountScale is the number of decimal places stored amounts carry
	// (numeric(19,4)); fixed-point amounts are scaled by 10^amountScale.
	amountScale = 4
	// maxExponent bounds the decimal exponent accepted from JSON, so that no
	// comparison ever has to build a huge power of ten.
	maxExponent = 64
)

// amountDigits is the number of integer digits numeric(19,4) holds.
const amountDigits = 15

// boundedDecimal parses a JSON number whose exponent is small enough to
// compare cheaply.
func boundedDecimal(n json.Number) (decimal.Decimal, bool) {
	d, err := decimal.NewFromString(n.String())
	if err != nil || d.Exponent() > maxExponent || d.Exponent() < -maxExponent {
		return decimal.Decimal{}, false
	}
	return d, true
}

// amountMessage is the validation message for an amount out of range.
const amountMessage = "must be a number with at most 15 digits before and 4 after the decimal point"

// parseAmount reads a rule's amount: a JSON number that fits numeric(19,4).
func parseAmount(raw json.RawMessage) (bound, string) {
	n, ok := jsonNumber(raw)
	if !ok {
		return bound{}, "must be a number"
	}
	d, ok := boundedDecimal(n)
	if !ok || d.Abs().Cmp(decimal.New(1, amountDigits)) >= 0 || !d.Equal(d.Truncate(amountScale)) {
		return bound{}, amountMessage
	}
	return newBound(d), ""
}

// bound is a decimal with its fixed-point form when it has one.
type bound struct {
	fixed int64
	fits  bool
	dec   decimal.Decimal
}

// newBound computes the fixed-point form of d.
func newBound(d decimal.Decimal) bound {
	f, ok := toFixed(d)
	return bound{fixed: f, fits: ok, dec: d}
}

// maxPow10 is the largest n for which 10^n fits an int64.
const maxPow10 = 18

// pow10 returns 10^n for 0 <= n <= maxPow10.
func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

// toFixed returns d × 10^amountScale as an int64 when that is an exact
// integer that fits; otherwise false, and comparisons fall back to decimals.
func toFixed(d decimal.Decimal) (int64, bool) {
	coef := d.Coefficient()
	if !coef.IsInt64() {
		return 0, false
	}
	return scaleFixed(coef.Int64(), int(d.Exponent())+amountScale)
}

// scaleFixed returns c × 10^shift when it is an exact int64.
func scaleFixed(c int64, shift int) (int64, bool) {
	if c == 0 {
		return 0, true
	}
	if shift < 0 {
		if -shift > maxPow10 {
			return 0, false
		}
		p := pow10(-shift)
		if c%p != 0 {
			return 0, false
		}
		return c / p, true
	}
	if shift > maxPow10 {
		return 0, false
	}
	p := pow10(shift)
	if c > math.MaxInt64/p || c < math.MinInt64/p {
		return 0, false
	}
	return c * p, true
}
