package rules

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// setRule compiles a rule whose Summary contains word and whose outcomes are
// given as JSON.
func setRule(t *testing.T, n int, word string, priority int, created time.Time, outcomes string, allowed []uuid.UUID) *Rule {
	t.Helper()
	doc := fmt.Sprintf(`{"conditions":[{"field":"Summary","operator":"contains","value":%q}],"outcomes":%s,"priority":%d}`,
		word, outcomes, priority)
	id := uuid.MustParse(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))
	return mustCompile(t, doc, Meta{ID: id, CreatedAt: created, AllowedAccountIDs: allowed})
}

func categoryOutcome(id uuid.UUID, name string) string {
	return fmt.Sprintf(`[{"action":"updateTransaction","field":"Category","value":{"id":%q,"value":%q}}]`, id, name)
}

func TestSetPriorityConflicts(t *testing.T) {
	low := setRule(t, 1, "coffee", 10, t0, categoryOutcome(catA, "Coffee"), nil)
	high := setRule(t, 2, "coffee", 20, t0, categoryOutcome(catB, "Treats"), nil)
	merchant := setRule(t, 3, "coffee", 5, t0,
		`[{"action":"updateTransaction","field":"MerchantName","value":"Blue Bottle"},{"action":"hideTransaction","value":true}]`, nil)
	other := setRule(t, 4, "tea", 99, t0, categoryOutcome(catA, "Tea"), nil)

	// Input order must not matter.
	s := NewSet(high, other, merchant, low)
	p := Prepare(Input{Summary: "Blue Bottle Coffee"})
	res := s.Apply(&p)
	if !res.Category.Decided || res.Category.Value.ID != catB || res.Category.Value.Name != "Treats" || res.Category.RuleID != high.ID() {
		t.Errorf("category = %+v, want %s from rule %s", res.Category, catB, high.ID())
	}
	if !res.MerchantName.Decided || res.MerchantName.Value != "Blue Bottle" || res.MerchantName.RuleID != merchant.ID() {
		t.Errorf("merchant = %+v", res.MerchantName)
	}
	if !res.Hidden.Decided || !res.Hidden.Value || res.Hidden.RuleID != merchant.ID() {
		t.Errorf("hidden = %+v", res.Hidden)
	}
	got := s.Rules()
	want := []*Rule{merchant, low, high, other}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order[%d] = rule %s (priority %d), want %s", i, got[i].ID(), got[i].Priority(), want[i].ID())
		}
	}
}

func TestSetSamePriorityLaterCreatedWins(t *testing.T) {
	older := setRule(t, 1, "coffee", 10, t0, categoryOutcome(catA, "A"), nil)
	newer := setRule(t, 2, "coffee", 10, t0.Add(time.Second), categoryOutcome(catB, "B"), nil)
	for _, s := range []*Set{NewSet(older, newer), NewSet(newer, older)} {
		p := Prepare(Input{Summary: "coffee"})
		res := s.Apply(&p)
		if res.Category.RuleID != newer.ID() || res.Category.Value.ID != catB {
			t.Errorf("category decided by %s, want the later-created %s", res.Category.RuleID, newer.ID())
		}
	}
}

func TestSetNoMatch(t *testing.T) {
	s := NewSet(setRule(t, 1, "coffee", 10, t0, categoryOutcome(catA, "A"), nil), nil)
	p := Prepare(Input{Summary: "groceries"})
	res := s.Apply(&p)
	if res.Any() {
		t.Errorf("unexpected decision %+v", res)
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1 (nil rules skipped)", s.Len())
	}
}

func TestAllowedAccountIDs(t *testing.T) {
	tests := []struct {
		name    string
		allowed []uuid.UUID
		acct    uuid.UUID
		want    bool
	}{
		{"nil allows every account", nil, acctC, true},
		{"listed account", []uuid.UUID{acctA, acctB}, acctB, true},
		{"unlisted account", []uuid.UUID{acctA, acctB}, acctC, false},
		{"empty list allows none", []uuid.UUID{}, acctA, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := setRule(t, 1, "coffee", 10, t0, categoryOutcome(catA, "A"), tt.allowed)
			p := Prepare(Input{AccountID: tt.acct, Summary: "coffee"})
			if got := r.Matches(&p); got != tt.want {
				t.Errorf("Matches = %v, want %v", got, tt.want)
			}
			res := NewSet(r).Apply(&p)
			if res.Category.Decided != tt.want {
				t.Errorf("Apply decided = %v, want %v", res.Category.Decided, tt.want)
			}
		})
	}
}

func TestAllowedAccountIDsCopied(t *testing.T) {
	allowed := []uuid.UUID{acctA}
	r := setRule(t, 1, "coffee", 10, t0, categoryOutcome(catA, "A"), allowed)
	allowed[0] = acctB
	p := Prepare(Input{AccountID: acctA, Summary: "coffee"})
	if !r.Matches(&p) {
		t.Error("rule changed when the caller's slice changed")
	}
	if got := r.AllowedAccountIDs(); len(got) != 1 || got[0] != acctA {
		t.Errorf("AllowedAccountIDs = %v", got)
	}
}

func TestRuleAccessors(t *testing.T) {
	doc := `{"conditions":[{"field":"Account","operator":"oneOf","value":["` + acctA.String() + `","` + acctB.String() + `","` + acctA.String() + `"]},
		{"field":"Account","operator":"isNot","value":"` + acctC.String() + `"}],
		"outcomes":[{"action":"updateTransaction","field":"Category","value":{"id":"` + catA.String() + `"}}],"priority":42}`
	id := uuid.New()
	r := mustCompile(t, doc, Meta{ID: id, CreatedAt: t0})
	if r.ID() != id || r.Priority() != 42 || !r.CreatedAt().Equal(t0) || r.AllowedAccountIDs() != nil {
		t.Errorf("meta = %s %d %s %v", r.ID(), r.Priority(), r.CreatedAt(), r.AllowedAccountIDs())
	}
	if got := r.CategoryIDs(); len(got) != 1 || got[0] != catA {
		t.Errorf("CategoryIDs = %v", got)
	}
	if got := r.AccountIDs(); len(got) != 3 || got[0] != acctA || got[1] != acctB || got[2] != acctC {
		t.Errorf("AccountIDs = %v", got)
	}
	p := Prepare(Input{AccountID: acctA})
	res := NewSet(r).Apply(&p)
	if res.Category.Value != (CategoryRef{ID: catA}) {
		t.Errorf("category without a name = %+v", res.Category.Value)
	}
}

func TestDefinitionRoundTrip(t *testing.T) {
	doc := `{"conditions":[{"field":"Amount","operator":"between","value":[-100.10, 12345678901234.5678]}],
		"outcomes":[{"action":"updateTransaction","field":"MerchantName","value":"Rent"}],"priority":7}`
	def, r, err := ValidateJSON([]byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"conditions":[{"field":"Amount","operator":"between","value":[-100.10,12345678901234.5678]}],` +
		`"outcomes":[{"action":"updateTransaction","field":"MerchantName","value":"Rent"}],"priority":7}`
	if string(b) != want {
		t.Errorf("marshal = %s\nwant      %s", b, want)
	}
	b2, _ := json.Marshal(r.Definition())
	if string(b2) != want {
		t.Errorf("Rule.Definition marshal = %s", b2)
	}
	if _, err := CompileJSON(b, Meta{}); err != nil {
		t.Errorf("stored form does not compile: %v", err)
	}
}

func TestUnmarshalLenientTopLevel(t *testing.T) {
	body := `{"name":"ignored by the rules package","conditions":[{"field":"Summary","operator":"is","value":"x"}],
		"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`
	var def Definition
	if err := json.Unmarshal([]byte(body), &def); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(def, Options{}); err != nil {
		t.Errorf("Validate after json.Unmarshal: %v", err)
	}
	if _, err := DecodeDefinition([]byte(body)); err == nil || err.Error() != `unknown key "name"` {
		t.Errorf("DecodeDefinition error = %v, want unknown key", err)
	}
}

func TestValidateGoDefinition(t *testing.T) {
	def := Definition{
		Conditions: []Condition{{Field: FieldSummary, Operator: OpContains, Value: json.RawMessage(`"coffee"`)}},
		Outcomes:   []Outcome{{Action: ActionHideTransaction, Value: json.RawMessage(`true`)}},
		Priority:   5,
	}
	if _, err := Validate(def, Options{}); err != nil {
		t.Fatal(err)
	}
	def.Priority = 0
	if _, err := Validate(def, Options{}); err == nil || err.Error() != "priority: must be between 1 and 100" {
		t.Errorf("err = %v", err)
	}
}

func TestInputFromTransaction(t *testing.T) {
	posted, _ := domain.ParseDate("2026-03-17")
	auth, _ := domain.ParseDate("2026-03-15")
	merchant, orig := "Blue Bottle", "POS BLUE BOTTLE"
	tx := &domain.Transaction{
		AccountID: acctA, Summary: "Coffee", Amount: domain.MustMoney("-4.50"),
		MerchantName: &merchant, OriginalDescription: &orig, AuthorizedDate: &auth, PostedDate: &posted,
	}
	in := InputFromTransaction(tx)
	if in.AccountID != acctA || in.Summary != "Coffee" || in.MerchantName != merchant ||
		in.OriginalDescription != orig || in.Day != 17 || in.Amount.String() != "-4.5" {
		t.Errorf("input = %+v", in)
	}
	tx.PostedDate = nil
	if in := InputFromTransaction(tx); in.Day != 15 {
		t.Errorf("pending day = %d, want the authorized date's 15", in.Day)
	}
	tx.AuthorizedDate, tx.MerchantName, tx.OriginalDescription = nil, nil, nil
	if in := InputFromTransaction(tx); in.Day != 0 || in.MerchantName != "" || in.OriginalDescription != "" {
		t.Errorf("bare input = %+v", in)
	}
}

func TestApplyDoesNotAllocate(t *testing.T) {
	doc := `{"conditions":[{"field":"Summary","operator":"matches","value":"(?i)coffee [0-9]+"},
		{"field":"MerchantName","operator":"oneOf","value":["Blue Bottle","Starbucks"]},
		{"field":"Amount","operator":"between","value":[-10, -1]},
		{"field":"Account","operator":"isNot","value":"` + acctC.String() + `"}],
		"outcomes":[{"action":"updateTransaction","field":"MerchantName","value":"Coffee"}],"priority":1}`
	s := NewSet(mustCompile(t, doc, Meta{AllowedAccountIDs: []uuid.UUID{acctA}}),
		setRule(t, 2, "coffee", 2, t0, categoryOutcome(catA, "Coffee"), nil))
	p := PrepareTransaction(&domain.Transaction{
		AccountID: acctA, Summary: "COFFEE 123", Amount: domain.MustMoney("-4.5"),
		MerchantName: func() *string { s := "blue bottle"; return &s }(),
	})
	var res Result
	allocs := testing.AllocsPerRun(1000, func() { res = s.Apply(&p) })
	if allocs != 0 {
		t.Errorf("Apply allocates %.1f times per run", allocs)
	}
	if res.MerchantName.Value != "Coffee" || res.Category.Value.ID != catA {
		t.Errorf("result = %+v", res)
	}
}
