package rules

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

const (
	okCond    = `{"field":"Summary","operator":"is","value":"x"}`
	okOutcome = `{"action":"hideTransaction","value":true}`
)

// doc builds a rule document from its parts.
func doc(conditions, outcomes, priority string) string {
	return fmt.Sprintf(`{"conditions":%s,"outcomes":%s,"priority":%s}`, conditions, outcomes, priority)
}

func withCond(c string) string    { return doc("["+c+"]", "["+okOutcome+"]", "1") }
func withOutcome(o string) string { return doc("["+okCond+"]", "["+o+"]", "1") }

func TestValidationMessages(t *testing.T) {
	long := strings.Repeat("a", MaxPatternBytes+1)
	tests := []struct {
		name string
		doc  string
		want string
	}{
		// document
		{"not JSON", `{"conditions":`, "invalid JSON: unexpected EOF"},
		{"not an object", `[1]`, "must be a JSON object"},
		{"trailing data", doc("["+okCond+"]", "["+okOutcome+"]", "1") + `{}`, "unexpected data after the JSON object"},
		{"trailing brace", doc("["+okCond+"]", "["+okOutcome+"]", "1") + ` }`, "unexpected data after the JSON object"},
		{"trailing word", doc("["+okCond+"]", "["+okOutcome+"]", "1") + ` x`, "unexpected data after the JSON object"},
		{"empty body", ``, "invalid JSON: EOF"},
		{"unknown top-level key", `{"conditions":[` + okCond + `],"outcomes":[` + okOutcome + `],"priority":1,"name":"x"}`, `unknown key "name"`},
		{"duplicate top-level key", `{"priority":1,"priority":2,"conditions":[` + okCond + `],"outcomes":[` + okOutcome + `]}`, `duplicate key "priority"`},
		// conditions list
		{"conditions missing", `{"outcomes":[` + okOutcome + `],"priority":1}`, "conditions: must have at least 1 item"},
		{"conditions empty", doc(`[]`, "["+okOutcome+"]", "1"), "conditions: must have at least 1 item"},
		{"conditions null", doc(`null`, "["+okOutcome+"]", "1"), "conditions: must be an array"},
		{"conditions object", doc(`{}`, "["+okOutcome+"]", "1"), "conditions: must be an array"},
		{"condition not object", doc(`[`+okCond+`, 3]`, "["+okOutcome+"]", "1"), "conditions[1]: must be an object"},
		{"condition null", doc(`[null]`, "["+okOutcome+"]", "1"), "conditions[0]: must be an object"},
		// condition keys
		{"condition extra key", withCond(`{"field":"Summary","operator":"is","value":"x","negate":true}`), `conditions[0]: unknown key "negate"`},
		{"condition duplicate key", withCond(`{"field":"Summary","field":"Amount","operator":"is","value":"x"}`), `conditions[0]: duplicate key "field"`},
		{"field missing", withCond(`{"operator":"is","value":"x"}`), "conditions[0].field: is required"},
		{"field not string", withCond(`{"field":1,"operator":"is","value":"x"}`), "conditions[0].field: must be a string"},
		{"field unknown", withCond(`{"field":"summary","operator":"is","value":"x"}`), `conditions[0].field: unknown field "summary"; must be one of ` + fieldList},
		{"operator missing", withCond(`{"field":"Summary","value":"x"}`), "conditions[0].operator: is required"},
		{"operator not string", withCond(`{"field":"Summary","operator":["is"],"value":"x"}`), "conditions[0].operator: must be a string"},
		{"text operator unknown", withCond(`{"field":"Summary","operator":"gt","value":"x"}`), `conditions[0].operator: unknown operator "gt" for field Summary; must be one of ` + textOpList},
		{"account operator unknown", withCond(`{"field":"Account","operator":"contains","value":"x"}`), `conditions[0].operator: unknown operator "contains" for field Account; must be one of ` + accountOpList},
		{"amount operator unknown", withCond(`{"field":"Amount","operator":"oneOf","value":[1]}`), `conditions[0].operator: unknown operator "oneOf" for field Amount; must be one of ` + numberOpList},
		{"day operator unknown", withCond(`{"field":"transactionDay","operator":"matches","value":"1"}`), `conditions[0].operator: unknown operator "matches" for field transactionDay; must be one of ` + numberOpList},
		{"value missing", withCond(`{"field":"Summary","operator":"is"}`), "conditions[0].value: is required"},
		// text values
		{"text value number", withCond(`{"field":"Summary","operator":"is","value":1}`), "conditions[0].value: must be a string"},
		{"text value null", withCond(`{"field":"MerchantName","operator":"isNot","value":null}`), "conditions[0].value: must be a string"},
		{"contains empty", withCond(`{"field":"Summary","operator":"contains","value":""}`), "conditions[0].value: must be a non-empty string"},
		{"startsWith empty", withCond(`{"field":"Summary","operator":"startsWith","value":""}`), "conditions[0].value: must be a non-empty string"},
		{"oneOf not array", withCond(`{"field":"Summary","operator":"oneOf","value":"x"}`), "conditions[0].value: must be an array of strings"},
		{"oneOf empty", withCond(`{"field":"Summary","operator":"oneOf","value":[]}`), "conditions[0].value: must have at least 1 item"},
		{"oneOf item not string", withCond(`{"field":"Summary","operator":"oneOf","value":["a",2]}`), "conditions[0].value[1]: must be a string"},
		{"regex not string", withCond(`{"field":"Summary","operator":"matches","value":true}`), "conditions[0].value: must be a string"},
		{"regex empty", withCond(`{"field":"Summary","operator":"matches","value":""}`), "conditions[0].value: must be a non-empty regular expression"},
		{"regex invalid", withCond(`{"field":"Summary","operator":"matches","value":"(abc"}`), "conditions[0].value: invalid regular expression: missing closing ): `(abc`"},
		{"regex backreference", withCond(`{"field":"Summary","operator":"matches","value":"(a)\\1"}`), "conditions[0].value: invalid regular expression: invalid escape sequence: `\\1`"},
		{"regex too long", withCond(`{"field":"Summary","operator":"matches","value":"` + long + `"}`), "conditions[0].value: regular expression is longer than 512 bytes (the limit on a pattern's length)"},
		{"regex too complex", withCond(`{"field":"Summary","operator":"matches","value":"(?:abcdef){400}"}`), "conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		// account values
		{"account not string", withCond(`{"field":"Account","operator":"is","value":5}`), "conditions[0].value: must be a string holding an account id"},
		{"account bad uuid", withCond(`{"field":"Account","operator":"is","value":"acc_123"}`), "conditions[0].value: must be a UUID"},
		{"account braced uuid", withCond(`{"field":"Account","operator":"isNot","value":"{` + acctA.String() + `}"}`), "conditions[0].value: must be a UUID"},
		{"account oneOf not array", withCond(`{"field":"Account","operator":"oneOf","value":"` + acctA.String() + `"}`), "conditions[0].value: must be an array of account ids"},
		{"account oneOf empty", withCond(`{"field":"Account","operator":"oneOf","value":[]}`), "conditions[0].value: must have at least 1 item"},
		{"account oneOf bad item", withCond(`{"field":"Account","operator":"oneOf","value":["` + acctA.String() + `","x"]}`), "conditions[0].value[1]: must be a UUID"},
		// amount values
		{"amount string", withCond(`{"field":"Amount","operator":"lt","value":"-100"}`), "conditions[0].value: must be a number"},
		{"amount too many decimals", withCond(`{"field":"Amount","operator":"lt","value":-100.00001}`), "conditions[0].value: " + amountMessage},
		{"amount too large", withCond(`{"field":"Amount","operator":"gt","value":1e15}`), "conditions[0].value: " + amountMessage},
		{"amount huge exponent", withCond(`{"field":"Amount","operator":"gt","value":1e999999999}`), "conditions[0].value: " + amountMessage},
		{"amount tiny exponent", withCond(`{"field":"Amount","operator":"gt","value":1e-999999999}`), "conditions[0].value: " + amountMessage},
		{"between not array", withCond(`{"field":"Amount","operator":"between","value":5}`), "conditions[0].value: must be an array of two numbers [low, high]"},
		{"between three items", withCond(`{"field":"Amount","operator":"between","value":[1,2,3]}`), "conditions[0].value: must be an array of two numbers [low, high]"},
		{"between item not number", withCond(`{"field":"Amount","operator":"between","value":[1,"2"]}`), "conditions[0].value[1]: must be a number"},
		{"between low > high", withCond(`{"field":"Amount","operator":"between","value":[-10,-50]}`), "conditions[0].value: low must not be greater than high"},
		// transactionDay values
		{"day zero", withCond(`{"field":"transactionDay","operator":"is","value":0}`), "conditions[0].value: must be an integer between 1 and 31"},
		{"day 32", withCond(`{"field":"transactionDay","operator":"lt","value":32}`), "conditions[0].value: must be an integer between 1 and 31"},
		{"day fraction", withCond(`{"field":"transactionDay","operator":"gt","value":1.5}`), "conditions[0].value: must be an integer between 1 and 31"},
		{"day string", withCond(`{"field":"transactionDay","operator":"gt","value":"5"}`), "conditions[0].value: must be an integer between 1 and 31"},
		{"day between out of range", withCond(`{"field":"transactionDay","operator":"between","value":[1,40]}`), "conditions[0].value[1]: must be an integer between 1 and 31"},
		{"day between low > high", withCond(`{"field":"transactionDay","operator":"between","value":[20,10]}`), "conditions[0].value: low must not be greater than high"},
		{"second condition reported with its index", doc(`[`+okCond+`,{"field":"Amount","operator":"is","value":"x"}]`, "["+okOutcome+"]", "1"), "conditions[1].value: must be a number"},
		// outcomes list
		{"outcomes missing", `{"conditions":[` + okCond + `],"priority":1}`, "outcomes: must have at least 1 item"},
		{"outcomes empty", doc("["+okCond+"]", `[]`, "1"), "outcomes: must have at least 1 item"},
		{"outcomes not array", doc("["+okCond+"]", `"hide"`, "1"), "outcomes: must be an array"},
		{"outcome not object", doc("["+okCond+"]", `[true]`, "1"), "outcomes[0]: must be an object"},
		// outcome keys and values
		{"outcome extra key", withOutcome(`{"action":"hideTransaction","value":true,"note":"x"}`), `outcomes[0]: unknown key "note"`},
		{"outcome duplicate key", withOutcome(`{"action":"hideTransaction","action":"hideTransaction","value":true}`), `outcomes[0]: duplicate key "action"`},
		{"action missing", withOutcome(`{"value":true}`), "outcomes[0].action: is required"},
		{"action not string", withOutcome(`{"action":null,"value":true}`), "outcomes[0].action: must be a string"},
		{"action unknown", withOutcome(`{"action":"deleteTransaction","value":true}`), `outcomes[0].action: unknown action "deleteTransaction"; must be updateTransaction or hideTransaction`},
		{"hide with field", withOutcome(`{"action":"hideTransaction","field":"Category","value":true}`), "outcomes[0].field: must be absent for hideTransaction"},
		{"hide without value", withOutcome(`{"action":"hideTransaction"}`), "outcomes[0].value: is required"},
		{"hide false", withOutcome(`{"action":"hideTransaction","value":false}`), "outcomes[0].value: must be true"},
		{"hide string", withOutcome(`{"action":"hideTransaction","value":"true"}`), "outcomes[0].value: must be true"},
		{"update field missing", withOutcome(`{"action":"updateTransaction","value":"x"}`), "outcomes[0].field: is required"},
		{"update field not string", withOutcome(`{"action":"updateTransaction","field":2,"value":"x"}`), "outcomes[0].field: must be a string"},
		{"update field unknown", withOutcome(`{"action":"updateTransaction","field":"Notes","value":"x"}`), `outcomes[0].field: unknown field "Notes"; must be Category or MerchantName`},
		{"update value missing", withOutcome(`{"action":"updateTransaction","field":"Category"}`), "outcomes[0].value: is required"},
		{"merchant empty", withOutcome(`{"action":"updateTransaction","field":"MerchantName","value":"  "}`), "outcomes[0].value: must be a non-empty string"},
		{"merchant not string", withOutcome(`{"action":"updateTransaction","field":"MerchantName","value":{"value":"x"}}`), "outcomes[0].value: must be a non-empty string"},
		{"category not object", withOutcome(`{"action":"updateTransaction","field":"Category","value":"` + catA.String() + `"}`), "outcomes[0].value: must be an object with id and value"},
		{"category id missing", withOutcome(`{"action":"updateTransaction","field":"Category","value":{"value":"Coffee"}}`), "outcomes[0].value.id: is required"},
		{"category id not string", withOutcome(`{"action":"updateTransaction","field":"Category","value":{"id":7}}`), "outcomes[0].value.id: must be a string holding a category id"},
		{"category id bad", withOutcome(`{"action":"updateTransaction","field":"Category","value":{"id":"cat_1"}}`), "outcomes[0].value.id: must be a UUID"},
		{"category name not string", withOutcome(`{"action":"updateTransaction","field":"Category","value":{"id":"` + catA.String() + `","value":1}}`), "outcomes[0].value.value: must be a string"},
		{"category extra key", withOutcome(`{"action":"updateTransaction","field":"Category","value":{"id":"` + catA.String() + `","group":"x"}}`), `outcomes[0].value: unknown key "group"`},
		{"category duplicate key", withOutcome(`{"action":"updateTransaction","field":"Category","value":{"id":"` + catA.String() + `","id":"` + catB.String() + `"}}`), `outcomes[0].value: duplicate key "id"`},
		{"two categories", doc("["+okCond+"]", `[{"action":"updateTransaction","field":"Category","value":{"id":"`+catA.String()+`"}},`+okOutcome+`,{"action":"updateTransaction","field":"Category","value":{"id":"`+catB.String()+`"}}]`, "1"), "outcomes[2]: sets Category, already set by outcomes[0]"},
		{"two merchant names", doc("["+okCond+"]", `[{"action":"updateTransaction","field":"MerchantName","value":"a"},{"action":"updateTransaction","field":"MerchantName","value":"b"}]`, "1"), "outcomes[1]: sets MerchantName, already set by outcomes[0]"},
		{"two hides", doc("["+okCond+"]", `[`+okOutcome+`,`+okOutcome+`]`, "1"), "outcomes[1]: sets Hidden, already set by outcomes[0]"},
		// priority
		{"priority missing", `{"conditions":[` + okCond + `],"outcomes":[` + okOutcome + `]}`, "priority: is required"},
		{"priority zero", doc("["+okCond+"]", "["+okOutcome+"]", "0"), "priority: must be between 1 and 100"},
		{"priority 101", doc("["+okCond+"]", "["+okOutcome+"]", "101"), "priority: must be between 1 and 100"},
		{"priority huge", doc("["+okCond+"]", "["+okOutcome+"]", "1e400"), "priority: must be an integer"},
		{"priority fraction", doc("["+okCond+"]", "["+okOutcome+"]", "1.5"), "priority: must be an integer"},
		{"priority string", doc("["+okCond+"]", "["+okOutcome+"]", `"10"`), "priority: must be an integer"},
		{"priority null", doc("["+okCond+"]", "["+okOutcome+"]", `null`), "priority: must be an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ValidateJSON([]byte(tt.doc), Options{})
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error = %v (%T), want *ValidationError %q", err, err, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err.Error(), tt.want)
			}
		})
	}
}

func TestValidDocuments(t *testing.T) {
	docs := []string{
		doc(`[{"field":"Summary","operator":"contains","value":"coffee"}]`,
			`[{"action":"updateTransaction","field":"Category","value":{"id":"`+catA.String()+`","value":"Coffee"}}]`, "10"),
		doc(`[{"field":"MerchantName","operator":"is","value":""}]`,
			`[{"action":"updateTransaction","field":"Category","value":{"id":"`+catA.String()+`","value":null}}]`, "1"),
		doc(`[{"field":"Amount","operator":"between","value":[-100,-100]}]`, "["+okOutcome+"]", "100"),
		doc(`[{"field":"transactionDay","operator":"between","value":[1,31]}]`, "["+okOutcome+"]", "1e1"),
		doc(`[{"field":"Summary","operator":"matches","value":"(?i)^uber \\*trip"}]`, "["+okOutcome+"]", "50.0"),
		` { "priority" : 1 , "conditions" : [ ` + okCond + ` ] , "outcomes" : [ ` + okOutcome + ` ] } `,
	}
	for _, d := range docs {
		if _, _, err := ValidateJSON([]byte(d), Options{}); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

func TestScope(t *testing.T) {
	scope := []uuid.UUID{acctA, acctB}
	tests := []struct {
		name  string
		cond  string
		scope []uuid.UUID
		want  string
	}{
		{"is inside", `{"field":"Account","operator":"is","value":"` + acctA.String() + `"}`, scope, ""},
		{"is outside", `{"field":"Account","operator":"is","value":"` + acctC.String() + `"}`, scope,
			"conditions[0].value: account " + acctC.String() + " is outside this key's scope"},
		{"isNot outside", `{"field":"Account","operator":"isNot","value":"` + acctC.String() + `"}`, scope,
			"conditions[0].value: account " + acctC.String() + " is outside this key's scope"},
		{"oneOf partly outside", `{"field":"Account","operator":"oneOf","value":["` + acctB.String() + `","` + acctC.String() + `"]}`, scope,
			"conditions[0].value[1]: account " + acctC.String() + " is outside this key's scope"},
		{"upper-case id reported canonical", `{"field":"Account","operator":"is","value":"` + strings.ToUpper(acctC.String()) + `"}`, scope,
			"conditions[0].value: account " + acctC.String() + " is outside this key's scope"},
		{"nil scope allows all", `{"field":"Account","operator":"is","value":"` + acctC.String() + `"}`, nil, ""},
		{"empty scope allows none", `{"field":"Account","operator":"is","value":"` + acctA.String() + `"}`, []uuid.UUID{},
			"conditions[0].value: account " + acctA.String() + " is outside this key's scope"},
		{"text conditions unaffected", okCond, []uuid.UUID{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ValidateJSON([]byte(withCond(tt.cond)), Options{Scope: tt.scope})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompileJSONWrapsError(t *testing.T) {
	id := uuid.New()
	_, err := CompileJSON([]byte(doc("[]", "["+okOutcome+"]", "1")), Meta{ID: id})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Path != "conditions" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), id.String()) {
		t.Errorf("error %q does not name the rule", err)
	}
}

func TestRegexpLimits(t *testing.T) {
	tests := []struct {
		pattern string
		want    string
	}{
		{`(a{1,100}b{1,100}){1,20}`, "conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{`[a-z]{1,1001}`, "conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{`((x{999}){999}){999}`, "conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{`(?:abcdef){400}`, "conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{`\pL{1000}\pN{1000}`, "conditions[0].value: regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"},
		{`x{2,1}`, "conditions[0].value: invalid regular expression: invalid repeat count: `{2,1}`"},
		{`[a-z]{1,100}`, ""},
	}
	for _, tt := range tests {
		_, _, err := ValidateJSON([]byte(withCond(ruleCond("matches", tt.pattern))), Options{})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: error = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}

func ruleCond(op, value string) string {
	return fmt.Sprintf(`{"field":"Summary","operator":%q,"value":%q}`, op, value)
}
