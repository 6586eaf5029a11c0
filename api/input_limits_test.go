package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestBodyLimits: every limit a request body obeys answers 400 BAD_REQUEST
// (413 PAYLOAD_TOO_LARGE over 1 MiB) in the envelope, naming the field,
// before anything reaches the database; values at the limit are stored.
func TestBodyLimits(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	account := func(extra string) string { return `{"name":"x","type":"cash","currency":"USD"` + extra + `}` }
	long := func(n int) string { return strings.Repeat("é", n) }
	rule := func(value string) string {
		return `{"priority":1,"conditions":[{"field":"Summary","operator":"contains","value":` + value +
			`}],"outcomes":[{"action":"hideTransaction","value":true}]}`
	}
	tests := []struct {
		name, method, path, body, msg string
	}{
		{"balance overflows numeric(19,4)", "POST", "/v2/accounts", account(`,"currentBalance":1000000000000000`),
			"currentBalance: must be a number with at most 15 digits before and 4 after the decimal point"},
		{"negative overflow", "POST", "/v2/accounts", account(`,"availableBalance":-1e15`),
			"availableBalance: must be a number with at most 15 digits before and 4 after the decimal point"},
		{"five decimals", "POST", "/v2/accounts", account(`,"currentBalance":1.00001`),
			"currentBalance: must be a number with at most 15 digits before and 4 after the decimal point"},
		{"huge exponent", "POST", "/v2/accounts", account(`,"currentBalance":1e999999999`),
			"currentBalance: must be a number with at most 15 digits before and 4 after the decimal point"},
		{"liability amount", "POST", "/v2/accounts", account(`,"liability":{"type":"credit","aprs":[{"aprType":"p","aprPercentage":1e16}]}`),
			"liability.aprs[0].aprPercentage: must be a number with at most 15 digits before and 4 after the decimal point"},
		{"NUL in account name", "POST", "/v2/accounts", `{"name":"a\u0000b","type":"cash","currency":"USD"}`,
			"name: must not contain NUL characters"},
		{"NUL in mask", "POST", "/v2/accounts", account(`,"mask":"\u0000"`), "mask: must not contain NUL characters"},
		{"NUL in a liability string", "POST", "/v2/accounts", account(`,"liability":{"type":"credit","loanName":"\u0000"}`),
			"liability.loanName: must not contain NUL characters"},
		{"NUL in a member name", "POST", "/v2/accounts", account(`,"x\u0000":1`), "body: member name must not contain NUL characters"},
		{"account name too long", "POST", "/v2/accounts", `{"name":"` + long(201) + `","type":"cash","currency":"USD"}`,
			"name: must be at most 200 characters"},
		{"institution too long", "POST", "/v2/accounts", account(`,"institutionName":"` + long(201) + `"`),
			"institutionName: must be at most 200 characters"},
		{"patched name too long", "PATCH", "/v2/accounts/" + w.acctA1.String(), `{"name":"` + long(201) + `"}`,
			"name: must be at most 200 characters"},
		{"1 MB category name", "POST", "/v2/categories", `{"name":"` + strings.Repeat("x", 1_000_000) + `"}`,
			"name: must be at most 1000 characters"},
		{"category name too long", "POST", "/v2/categories", `{"name":"` + long(201) + `"}`,
			"name: must be at most 200 characters"},
		{"category group too long", "PATCH", "/v2/categories/" + w.catA.String(), `{"group":"` + long(201) + `"}`,
			"group: must be at most 200 characters"},
		{"category description too long", "POST", "/v2/categories", `{"name":"x","description":"` + long(1001) + `"}`,
			"description: must be at most 1000 characters"},
		{"NUL in category description", "POST", "/v2/categories", `{"name":"x","description":"\u0000"}`,
			"description: must not contain NUL characters"},
		{"NUL in a rule value", "POST", "/v2/rules", rule(`"\u0000"`), "conditions[0].value: must not contain NUL characters"},
		{"rule amount out of range", "POST", "/v2/rules",
			`{"priority":1,"conditions":[{"field":"Amount","operator":"gt","value":1e20}],"outcomes":[{"action":"hideTransaction","value":true}]}`,
			"conditions[0].value: must be a number with at most 15 digits before and 4 after the decimal point"},
		{"deep nesting", "POST", "/v2/rules", rule(strings.Repeat("[", 40) + strings.Repeat("]", 40)),
			"conditions[0].value" + strings.Repeat("[0]", 13) + ": nested more than 16 levels deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			e.expectMessage(e.send(tt.method, tt.path, key, tt.body), tt.msg)
		})
	}

	t.Run("values at the limits are stored", func(t *testing.T) {
		e := e.in(t)
		r := e.send("POST", "/v2/accounts", key, `{"name":"`+long(200)+`","type":"cash","currency":"USD",`+
			`"currentBalance":999999999999999.9999,"availableBalance":-999999999999999.99990}`)
		e.expect(r, http.StatusCreated, "")
		if got := string(mustObjectField(t, r.body, "account", "currentBalance")); got != "999999999999999.9999" {
			t.Fatalf("balance stored as %s", got)
		}
		e.expect(e.send("POST", "/v2/categories", key, `{"name":"`+long(200)+`","description":"`+long(1000)+`"}`),
			http.StatusCreated, "")
	})
	t.Run("over 1 MiB answers 413 on every body", func(t *testing.T) {
		e := e.in(t)
		big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
		for _, p := range []struct{ method, path string }{
			{"POST", "/v2/accounts"}, {"PATCH", "/v2/accounts/" + w.acctA1.String()},
			{"POST", "/v2/categories"}, {"PATCH", "/v2/categories/" + w.catA.String()},
			{"PATCH", "/v2/transactions/" + w.txA1[0].String()}, {"POST", "/v2/rules"},
		} {
			e.expect(e.send(p.method, p.path, key, big), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
		}
	})
}

// TestUndecodableQueryIsRefused: a query string that does not decode
// answers 400 on both versions rather than dropping the filter.
func TestUndecodableQueryIsRefused(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	e.expectMessage(e.get("/v2/transactions?categoryId=%zz", key), `query: cannot be decoded: invalid percent-encoding "%zz"`)
	e.expectMessage(e.get("/v2/accounts?status=all;limit=1", key), "query: cannot be decoded: semicolon separator in query")
	e.expectMessage(e.get("/v2/rules?includeArchived=%", key), `query: cannot be decoded: invalid percent-encoding "%"`)
	e.expectMessage(e.get("/v2/transactions?categoryId=%00", key), "categoryId: must be a UUID")
	e.expectMessage(e.get("/v1/transactions?bankConnectionId="+w.connA1.String()+
		"&startDate=2026-01-01&endDate=2026-12-31&accountIds=%G1", key), `query: cannot be decoded: invalid percent-encoding "%G1"`)
	e.expectMessage(e.get("/v1/accounts?connectionId=%zz", key), `query: cannot be decoded: invalid percent-encoding "%zz"`)
	// The same filter, well encoded, still filters.
	r := e.get("/v2/transactions?categoryId="+w.catA.String(), key)
	e.expect(r, http.StatusOK, "")
	if got := ids(t, r, "transactions"); len(got) != 1 || got[0] != w.txA1[0].String() {
		t.Fatalf("filtered: %v", got)
	}
}

// in returns the environment reporting to t (a subtest's).
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}
