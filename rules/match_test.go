package rules

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

var (
	acctA = uuid.MustParse("11111111-1111-4111-8111-111111111111")
	acctB = uuid.MustParse("22222222-2222-4222-8222-222222222222")
	acctC = uuid.MustParse("33333333-3333-4333-8333-333333333333")
	catA  = uuid.MustParse("aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
	catB  = uuid.MustParse("bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb")
)

// ruleJSON builds a rule document with one condition and a hide outcome.
func ruleJSON(field, op, value string) string {
	return fmt.Sprintf(`{"conditions":[{"field":%q,"operator":%q,"value":%s}],`+
		`"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`, field, op, value)
}

func mustCompile(t testing.TB, doc string, meta Meta) *Rule {
	t.Helper()
	r, err := CompileJSON([]byte(doc), meta)
	if err != nil {
		t.Fatalf("compile %s: %v", doc, err)
	}
	return r
}

func amount(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestTextOperators(t *testing.T) {
	tests := []struct {
		name      string
		field, op string
		value     string
		in        Input
		want      bool
	}{
		{"is exact", FieldSummary, OpIs, `"Coffee"`, Input{Summary: "Coffee"}, true},
		{"is case-insensitive", FieldSummary, OpIs, `"COFFEE shop"`, Input{Summary: "coffee SHOP"}, true},
		{"is other", FieldSummary, OpIs, `"coffee"`, Input{Summary: "coffee shop"}, false},
		{"is empty matches missing merchant", FieldMerchantName, OpIs, `""`, Input{}, true},
		{"is empty vs set merchant", FieldMerchantName, OpIs, `""`, Input{MerchantName: "x"}, false},
		{"isNot same", FieldSummary, OpIsNot, `"Rent"`, Input{Summary: "RENT"}, false},
		{"isNot other", FieldSummary, OpIsNot, `"Rent"`, Input{Summary: "Rental"}, true},
		{"isNot on missing field", FieldMerchantName, OpIsNot, `"Shell"`, Input{}, true},
		{"contains", FieldSummary, OpContains, `"coffee"`, Input{Summary: "Blue Bottle COFFEE #12"}, true},
		{"contains absent", FieldSummary, OpContains, `"tea"`, Input{Summary: "Blue Bottle Coffee"}, false},
		{"contains on empty field", FieldMerchantName, OpContains, `"a"`, Input{}, false},
		{"doesNotContain", FieldSummary, OpDoesNotContain, `"refund"`, Input{Summary: "Amazon REFUND"}, false},
		{"doesNotContain absent", FieldSummary, OpDoesNotContain, `"refund"`, Input{Summary: "Amazon"}, true},
		{"doesNotContain on empty field", FieldMerchantName, OpDoesNotContain, `"x"`, Input{}, true},
		{"startsWith", FieldOriginalDescription, OpStartsWith, `"pos "`, Input{OriginalDescription: "POS 1234 TESCO"}, true},
		{"startsWith no", FieldOriginalDescription, OpStartsWith, `"tesco"`, Input{OriginalDescription: "POS 1234 TESCO"}, false},
		{"endsWith", FieldOriginalDescription, OpEndsWith, `"tesco"`, Input{OriginalDescription: "POS 1234 Tesco"}, true},
		{"endsWith no", FieldOriginalDescription, OpEndsWith, `"pos"`, Input{OriginalDescription: "POS 1234 Tesco"}, false},
		{"oneOf hit", FieldMerchantName, OpOneOf, `["Uber","Lyft"]`, Input{MerchantName: "LYFT"}, true},
		{"oneOf miss", FieldMerchantName, OpOneOf, `["Uber","Lyft"]`, Input{MerchantName: "Lyft Inc"}, false},
		{"oneOf empty item matches missing", FieldMerchantName, OpOneOf, `["", "Uber"]`, Input{}, true},
		{"unicode is", FieldSummary, OpIs, `"ÉCOLE"`, Input{Summary: "école"}, true},
		{"unicode contains greek", FieldSummary, OpContains, `"ΣΟΦΙΑ"`, Input{Summary: "καφέ σοφια"}, true},
		{"unicode final sigma folds", FieldSummary, OpEndsWith, `"Σ"`, Input{Summary: "λόγος"}, true},
		{"kelvin sign folds to k", FieldSummary, OpIs, `"kiosk"`, Input{Summary: "\u212Aiosk"}, true},
		{"long s folds to s", FieldSummary, OpContains, `"SS"`, Input{Summary: "Mi\u017Fs"}, true},
		{"cyrillic startsWith", FieldMerchantName, OpStartsWith, `"пят"`, Input{MerchantName: "ПЯТЁРОЧКА"}, true},
		{"dotted capital I is not i", FieldSummary, OpIs, `"istanbul"`, Input{Summary: "İstanbul"}, false},
		{"accents matter", FieldSummary, OpIs, `"cafe"`, Input{Summary: "café"}, false},
		{"matches", FieldSummary, OpMatches, `"^AMZN Mktp [A-Z0-9]+$"`, Input{Summary: "AMZN Mktp US12AB"}, true},
		{"matches is case-sensitive", FieldSummary, OpMatches, `"^amzn"`, Input{Summary: "AMZN Mktp"}, false},
		{"matches with (?i)", FieldSummary, OpMatches, `"(?i)^amzn"`, Input{Summary: "AMZN Mktp"}, true},
		{"matches unicode", FieldMerchantName, OpMatches, `"^caf\u00e9"`, Input{MerchantName: "café de flore"}, true},
		{"matches empty field", FieldMerchantName, OpMatches, `"^$"`, Input{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, ruleJSON(tt.field, tt.op, tt.value), Meta{})
			p := Prepare(tt.in)
			if got := r.Matches(&p); got != tt.want {
				t.Errorf("%s %s %s on %+v = %v, want %v", tt.field, tt.op, tt.value, tt.in, got, tt.want)
			}
		})
	}
}

func TestAccountOperators(t *testing.T) {
	tests := []struct {
		name  string
		op    string
		value string
		acct  uuid.UUID
		want  bool
	}{
		{"is", OpIs, `"` + acctA.String() + `"`, acctA, true},
		{"is upper-case id", OpIs, `"` + "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA" + `"`, catA, true},
		{"is other", OpIs, `"` + acctA.String() + `"`, acctB, false},
		{"isNot", OpIsNot, `"` + acctA.String() + `"`, acctB, true},
		{"isNot same", OpIsNot, `"` + acctA.String() + `"`, acctA, false},
		{"oneOf hit", OpOneOf, `["` + acctA.String() + `","` + acctB.String() + `"]`, acctB, true},
		{"oneOf miss", OpOneOf, `["` + acctA.String() + `","` + acctB.String() + `"]`, acctC, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, ruleJSON(FieldAccount, tt.op, tt.value), Meta{})
			p := Prepare(Input{AccountID: tt.acct})
			if got := r.Matches(&p); got != tt.want {
				t.Errorf("Account %s %s on %s = %v, want %v", tt.op, tt.value, tt.acct, got, tt.want)
			}
		})
	}
}

func TestAmountOperators(t *testing.T) {
	tests := []struct {
		name   string
		op     string
		value  string
		amount string
		want   bool
	}{
		{"is", OpIs, `-12.5`, "-12.50", true},
		{"is trailing zeros in rule", OpIs, `-12.50000`, "-12.5", true},
		{"is exponent form", OpIs, `1.2e2`, "120", true},
		{"is other", OpIs, `-12.5`, "-12.51", false},
		{"gt", OpGt, `100`, "100.0001", true},
		{"gt equal", OpGt, `100`, "100", false},
		{"gte equal", OpGte, `100`, "100", true},
		{"gte below", OpGte, `100`, "99.9999", false},
		{"spent more than 100", OpLt, `-100`, "-100.01", true},
		{"spent exactly 100", OpLt, `-100`, "-100", false},
		{"lte equal", OpLte, `-100`, "-100", true},
		{"lte above", OpLte, `-100`, "-99.99", false},
		{"between low bound", OpBetween, `[-50, -10]`, "-50", true},
		{"between high bound", OpBetween, `[-50, -10]`, "-10", true},
		{"between inside", OpBetween, `[-50, -10]`, "-25.25", true},
		{"between below", OpBetween, `[-50, -10]`, "-50.0001", false},
		{"between above", OpBetween, `[-50, -10]`, "-9.9999", false},
		{"between single point", OpBetween, `[7, 7]`, "7", true},
		{"zero", OpIs, `0`, "0", true},
		{"amount beyond fixed point", OpGt, `900000000000000`, "999999999999999.9999", true},
		{"rule value beyond fixed point", OpLt, `999999999999999.9999`, "923000000000000", true},
		{"both beyond fixed point equal", OpIs, `999999999999999.9999`, "999999999999999.9999", true},
		{"amount with more decimals than stored", OpGt, `0`, "0.00001", true},
		{"amount with more decimals than stored is not zero", OpIs, `0`, "0.00001", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, ruleJSON(FieldAmount, tt.op, tt.value), Meta{})
			p := Prepare(Input{Amount: amount(tt.amount)})
			if got := r.Matches(&p); got != tt.want {
				t.Errorf("Amount %s %s on %s = %v, want %v", tt.op, tt.value, tt.amount, got, tt.want)
			}
		})
	}
}

func TestDayOperators(t *testing.T) {
	tests := []struct {
		name  string
		op    string
		value string
		day   int
		want  bool
	}{
		{"is", OpIs, `15`, 15, true},
		{"is other", OpIs, `15`, 16, false},
		{"is written 15.0", OpIs, `15.0`, 15, true},
		{"gt", OpGt, `25`, 26, true},
		{"gt equal", OpGt, `25`, 25, false},
		{"gte", OpGte, `25`, 25, true},
		{"lt", OpLt, `5`, 4, true},
		{"lt equal", OpLt, `5`, 5, false},
		{"lte", OpLte, `5`, 5, true},
		{"between low", OpBetween, `[1, 7]`, 1, true},
		{"between high", OpBetween, `[1, 7]`, 7, true},
		{"between out", OpBetween, `[1, 7]`, 8, false},
		{"no date matches nothing", OpLt, `31`, 0, false},
		{"no date isn't between", OpBetween, `[1, 31]`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, ruleJSON(FieldTransactionDay, tt.op, tt.value), Meta{})
			p := Prepare(Input{Day: tt.day})
			if got := r.Matches(&p); got != tt.want {
				t.Errorf("transactionDay %s %s on %d = %v, want %v", tt.op, tt.value, tt.day, got, tt.want)
			}
		})
	}
}

func TestAllConditionsMustMatch(t *testing.T) {
	doc := `{"conditions":[
		{"field":"Summary","operator":"contains","value":"coffee"},
		{"field":"Amount","operator":"lt","value":-5},
		{"field":"Account","operator":"is","value":"` + acctA.String() + `"}],
		"outcomes":[{"action":"hideTransaction","value":true}],"priority":3}`
	r := mustCompile(t, doc, Meta{})
	tests := []struct {
		name string
		in   Input
		want bool
	}{
		{"all", Input{AccountID: acctA, Summary: "Coffee", Amount: amount("-6")}, true},
		{"text fails", Input{AccountID: acctA, Summary: "Tea", Amount: amount("-6")}, false},
		{"amount fails", Input{AccountID: acctA, Summary: "Coffee", Amount: amount("-4")}, false},
		{"account fails", Input{AccountID: acctB, Summary: "Coffee", Amount: amount("-6")}, false},
	}
	for _, tt := range tests {
		p := Prepare(tt.in)
		if got := r.Matches(&p); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFoldString(t *testing.T) {
	tests := []struct{ a, b string }{
		{"abc", "ABC"},
		{"Straße", "STRAßE"},
		{"ǅ", "ǆ"},
		{"Ω", "\u2126"}, // Greek capital omega and ohm sign
		{"µ", "Μ"},      // micro sign and Greek capital mu
	}
	for _, tt := range tests {
		if foldString(tt.a) != foldString(tt.b) {
			t.Errorf("fold(%q)=%q differs from fold(%q)=%q", tt.a, foldString(tt.a), tt.b, foldString(tt.b))
		}
	}
	if s := "already folded ascii"; foldString(s) != s {
		t.Errorf("fold changed %q", s)
	}
	if got := foldString("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8 folded to %q", got)
	}
}

func TestToFixed(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"12.34", 123400, true},
		{"-0.0001", -1, true},
		{"1.23450", 12345, true},
		{"0.00001", 0, false},
		{"922337203685477.5807", 9223372036854775807, true},
		{"922337203685477.5808", 0, false},
		{"-922337203685477.5808", -9223372036854775808, true},
		{"0", 0, true},
		{"1e10", 100000000000000, true},
	}
	for _, tt := range tests {
		got, ok := toFixed(amount(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("toFixed(%s) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
