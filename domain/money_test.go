package domain

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

func TestMoneyJSON(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"12.3000", "12.3"},
		{"-0.01", "-0.01"},
		{"100", "100"},
		{"0.1", "0.1"},
		{"123456789012345.1234", "123456789012345.1234"},
	}
	for _, tt := range tests {
		m := MustMoney(tt.in)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("marshal %s = %s, want %s", tt.in, b, tt.want)
		}
		var back Money
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !back.Equal(m) {
			t.Errorf("round trip %s = %s", tt.in, back)
		}
	}
}

func TestMoneyRejectsString(t *testing.T) {
	var m Money
	if err := json.Unmarshal([]byte(`"12.30"`), &m); err == nil {
		t.Fatal("want error for quoted amount")
	}
}

func TestMoneyFromMinor(t *testing.T) {
	tests := []struct {
		minor int64
		exp   int32
		want  string
	}{
		{-1234, 2, "-12.34"},
		{500, 0, "500"},
		{12345, 3, "12.345"},
	}
	for _, tt := range tests {
		if got := MoneyFromMinor(tt.minor, tt.exp).String(); got != tt.want {
			t.Errorf("MoneyFromMinor(%d,%d) = %s, want %s", tt.minor, tt.exp, got, tt.want)
		}
	}
}

func TestMoneyNoFloatDrift(t *testing.T) {
	a, b := MustMoney("0.1"), MustMoney("0.2")
	if got := a.Add(b).String(); got != "0.3" {
		t.Fatalf("0.1+0.2 = %s", got)
	}
}

// TestMoneyAppendJSONIsString checks the allocation-free JSON form against
// String over edge cases and many random coefficients and exponents.
func TestMoneyAppendJSONIsString(t *testing.T) {
	cases := []decimal.Decimal{
		decimal.New(0, 0), decimal.New(0, -2), decimal.New(-100, -2), decimal.New(5, -1), decimal.New(-5, -3),
		decimal.New(123456789012345678, -18), decimal.New(-999999999999999999, -9), decimal.New(1, 2),
		decimal.New(1234567890123456789, -2), decimal.New(7, -19), decimal.New(120, -1), decimal.New(-1, 0),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		c := rng.Int64N(2_000_000_000_000) - 1_000_000_000_000
		if rng.IntN(4) == 0 {
			c = rng.Int64() >> rng.IntN(64)
		}
		cases = append(cases, decimal.New(c, -int32(rng.IntN(21))))
	}
	for _, d := range cases {
		m := MoneyFromDecimal(d)
		if got, want := string(m.AppendJSON(nil)), d.String(); got != want {
			t.Fatalf("AppendJSON(%s, coefficient %d exp %d) = %q, want %q", d, d.CoefficientInt64(), d.Exponent(), got, want)
		}
	}
}
