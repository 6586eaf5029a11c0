package rules

import (
	"testing"

	"github.com/google/uuid"
)

// TestDuplicateKeysAtEveryDepth: a key given twice is refused in the rule,
// in a condition, in an outcome and in an outcome's category, each named
// where it is, whatever other problem the rule has after it; the same key
// in sibling objects is no duplicate.
func TestDuplicateKeysAtEveryDepth(t *testing.T) {
	cat := uuid.NewString()
	ref := `{"id":"` + cat + `","value":"Food"}`
	set := func(v string) string {
		return withOutcome(`{"action":"updateTransaction","field":"Category","value":` + v + `}`)
	}
	refused := map[string]string{
		`{"priority":1,"priority":1,"conditions":[],"outcomes":[]}`:                                             `duplicate key "priority"`,
		withCond(`{"field":"Summary","operator":"is","operator":"is","value":"x"}`):                             `conditions[0]: duplicate key "operator"`,
		doc("["+okCond+`,{"field":"Summary","operator":"is","value":"x","value":"y"}]`, "["+okOutcome+"]", "1"): `conditions[1]: duplicate key "value"`,
		withOutcome(`{"action":"hideTransaction","value":true,"value":true}`):                                   `outcomes[0]: duplicate key "value"`,
		set(`{"id":"` + cat + `","value":"Food","value":"Rent"}`):                                               `outcomes[0].value: duplicate key "value"`,
		withCond(`{"field":"Summary","operator":"is","value":{"a":1,"a":2}}`):                                   `conditions[0].value: duplicate key "a"`,
	}
	for in, want := range refused {
		_, _, err := ValidateJSON([]byte(in), Options{})
		if err == nil || err.Error() != want {
			t.Errorf("ValidateJSON(%s) = %v, want %q", in, err, want)
		}
	}
	accepted := []string{
		doc("["+okCond+","+okCond+"]", "["+okOutcome+"]", "1"),
		set(ref),
	}
	for _, in := range accepted {
		if _, _, err := ValidateJSON([]byte(in), Options{}); err != nil {
			t.Errorf("ValidateJSON(%s): %v", in, err)
		}
	}
}
