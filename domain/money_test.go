package domain

import (
	"encoding/json"
	"testing"
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
