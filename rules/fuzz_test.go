package rules

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
)

func FuzzCompile(f *testing.F) {
	seeds := []string{
		withCond(okCond),
		withCond(`{"field":"Amount","operator":"between","value":[-100.5, 20]}`),
		withCond(`{"field":"transactionDay","operator":"gte","value":28}`),
		withCond(`{"field":"Account","operator":"oneOf","value":["` + acctA.String() + `"]}`),
		withCond(`{"field":"MerchantName","operator":"matches","value":"(?i)^caf[eé]"}`),
		withCond(`{"field":"Summary","operator":"oneOf","value":["Ünïcode","ΣΑΣ"]}`),
		withOutcome(`{"action":"updateTransaction","field":"Category","value":{"id":"` + catA.String() + `","value":"Coffee"}}`),
		withOutcome(`{"action":"updateTransaction","field":"MerchantName","value":"Rent"}`),
		withCond(`{"field":"Amount","operator":"lt","value":1e-99999999999}`),
		`{"conditions":[{"field":"Summary"}],"outcomes":[null],"priority":1e400}`,
		`[]`, `null`, `{}`, `{"conditions":{},"outcomes":"","priority":"1"}`, `{"a":1}{"b":2}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	inputs := []Prepared{
		Prepare(Input{}),
		Prepare(Input{AccountID: acctA, Summary: "COFFEE ΣΑΣ", MerchantName: "Café", Amount: amount("-100.5"), Day: 28}),
		Prepare(Input{AccountID: acctB, OriginalDescription: "x\xff", Amount: amount("999999999999999.9999"), Day: 1}),
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		def, r, err := ValidateJSON(raw, Options{Scope: []uuid.UUID{acctA}})
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is %T, not *ValidationError", err, err)
			}
			return
		}
		// A valid rule stores and compiles again to the same decisions.
		stored, err := json.Marshal(def)
		if err != nil {
			t.Fatalf("marshal valid definition: %v", err)
		}
		again, err := CompileJSON(stored, Meta{})
		if err != nil {
			t.Fatalf("stored form %s does not compile: %v", stored, err)
		}
		for i := range inputs {
			if r.Matches(&inputs[i]) != again.Matches(&inputs[i]) {
				t.Fatalf("stored form %s evaluates differently", stored)
			}
			NewSet(r, again).Apply(&inputs[i])
		}
	})
}
