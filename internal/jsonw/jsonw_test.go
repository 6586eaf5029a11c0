package jsonw

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	inputs := []string{"", "plain", `quo"te`, `back\slash`, "nl\nrt\r\ttab", "\x00\x1f", "héllo ☕", "\u2028\u2029", "bad\xffutf8", "<html>&"}
	for _, in := range inputs {
		got := AppendString(nil, in)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: invalid JSON %s: %v", in, got, err)
		}
		want, _ := json.Marshal(in)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q: decoded %q, want %q", in, back, wantBack)
		}
	}
}

func TestObject(t *testing.T) {
	id := uuid.MustParse("0b8f6f3c-7c1e-4a47-9c55-1f2d3e4a5b6c")
	d := domain.Date{Time: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	m := domain.MustMoney("-12.3400")
	o := Start(nil)
	o.UUID("id", id)
	o.UUIDPtr("none", nil)
	o.Money("amount", m)
	o.MoneyPtr("fees", nil)
	o.DatePtr("date", &d)
	o.String("s", "x")
	o.Bool("b", true)
	got := string(o.End())
	want := `{"id":"0b8f6f3c-7c1e-4a47-9c55-1f2d3e4a5b6c","none":null,"amount":-12.34,"fees":null,"date":"2026-01-02","s":"x","b":true}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestArray(t *testing.T) {
	vals := []string{"a", "b\"c"}
	o := Start(nil)
	o.Array("xs", len(vals), func(b []byte, i int) []byte { return AppendString(b, vals[i]) })
	o.Array("empty", 0, nil)
	if got, want := string(o.End()), `{"xs":["a","b\"c"],"empty":[]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
