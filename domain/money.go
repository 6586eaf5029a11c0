package domain

import (
	"database/sql/driver"
	"fmt"
	"strconv"

	"github.com/shopspring/decimal"
)

// Money is an exact decimal amount. It never passes through float64: it is
// parsed from and written as decimal text, and its JSON form is a JSON number
// with no trailing zeros (12.3, not "12.30").
type Money struct {
	d decimal.Decimal
}

// NewMoney parses decimal text such as "-12.34" into Money.
func NewMoney(s string) (Money, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return Money{}, fmt.Errorf("parse money %q: %w", s, err)
	}
	return Money{d: d}, nil
}

// MustMoney is NewMoney for constants in tests and seed data; it panics on bad text.
func MustMoney(s string) Money {
	m, err := NewMoney(s)
	if err != nil {
		panic(err)
	}
	return m
}

// MoneyFromDecimal wraps a decimal.
func MoneyFromDecimal(d decimal.Decimal) Money { return Money{d: d} }

// MoneyFromMinor converts an integer amount in minor units with the given
// exponent (2 for cents, 0 for zero-decimal currencies, 3 for mills).
func MoneyFromMinor(minor int64, exp int32) Money {
	return Money{d: decimal.New(minor, -exp)}
}

// Decimal returns the amount as a decimal.
func (m Money) Decimal() decimal.Decimal { return m.d }

// Neg returns the amount with its sign flipped.
func (m Money) Neg() Money { return Money{d: m.d.Neg()} }

// Add returns m + o.
func (m Money) Add(o Money) Money { return Money{d: m.d.Add(o.d)} }

// Sub returns m - o.
func (m Money) Sub(o Money) Money { return Money{d: m.d.Sub(o.d)} }

// IsZero reports whether the amount is zero.
func (m Money) IsZero() bool { return m.d.IsZero() }

// Equal reports whether two amounts are numerically equal (12.3 equals 12.30).
func (m Money) Equal(o Money) bool { return m.d.Equal(o.d) }

// Cmp compares m and o: -1, 0 or +1.
func (m Money) Cmp(o Money) int { return m.d.Cmp(o.d) }

// String writes the amount as decimal text without trailing zeros.
func (m Money) String() string { return m.d.String() }

// MarshalJSON writes the amount as a JSON number.
func (m Money) MarshalJSON() ([]byte, error) { return []byte(m.d.String()), nil }

// AppendJSON appends the amount's JSON number form to b: the same text as
// String, written without allocating for the amounts a listing carries
// (at most 18 digits and 18 decimals); others go through String.
func (m Money) AppendJSON(b []byte) []byte {
	exp := m.d.Exponent()
	if exp > 0 || exp < -18 || m.d.NumDigits() > 18 {
		return append(b, m.d.String()...)
	}
	c := m.d.CoefficientInt64()
	if exp == 0 {
		return strconv.AppendInt(b, c, 10)
	}
	u := uint64(c)
	if c < 0 {
		b = append(b, '-')
		u = -u
	}
	decimals := int(-exp)
	scale := uint64(1)
	for range decimals {
		scale *= 10
	}
	b = strconv.AppendUint(b, u/scale, 10)
	frac := u % scale
	if frac == 0 {
		return b
	}
	for frac%10 == 0 {
		frac /= 10
		decimals--
	}
	b = append(b, '.')
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], frac, 10)
	for range decimals - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}

// UnmarshalJSON reads a JSON number (a quoted decimal string is refused, so
// that clients cannot mix forms).
func (m *Money) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] == '"' {
		return fmt.Errorf("money must be a JSON number")
	}
	d, err := decimal.NewFromString(string(b))
	if err != nil {
		return fmt.Errorf("money must be a JSON number: %w", err)
	}
	m.d = d
	return nil
}

// Scan reads a PostgreSQL numeric.
func (m *Money) Scan(src any) error { return m.d.Scan(src) }

// Value writes the amount as decimal text for PostgreSQL.
func (m Money) Value() (driver.Value, error) { return m.d.String(), nil }
