package openapitest_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/finsync/finsync/api/openapi/openapitest"
	"github.com/finsync/finsync/providers/all"
)

// tc is one response to validate.
type tc struct {
	name    string
	method  string
	target  string
	status  int
	header  http.Header
	body    any // a fixture, or a string sent as is
	wantErr string
}

func run(t *testing.T, v *openapitest.Validator, cases []tc) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // the Validator is shared by parallel tests
			req := httptest.NewRequest(c.method, c.target, nil)
			var body []byte
			if c.body != nil {
				body = mustJSON(t, c.body)
			}
			err := v.Validate(req, c.status, c.header, body)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case c.wantErr != "" && err == nil:
				t.Errorf("want an error containing %q, got none", c.wantErr)
			case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
				t.Errorf("want an error containing %q, got %v", c.wantErr, err)
			}
		})
	}
}

func TestV2GoodResponses(t *testing.T) {
	doc := openapitest.V2(t, all.NewRegistry().Profiles())
	v := openapitest.New(t, doc)
	lh, ph := limitedHeaders(), publicHeaders()
	acct := obj{"account": v2Account()}
	closed := obj{"account": edit(v2Account(), "status", "closed", "closedAt", "2026-11-22T06:00:00.123+01:00", "liability", nil)}
	run(t, v, []tc{
		{"health", "GET", "/v2/health", 200, ph, obj{"status": "ok", "timestamp": stamp}, ""},
		{"health down", "GET", "/v2/health", 503, headersWith(ph, "Retry-After", "5"), obj{"status": "degraded", "timestamp": stamp}, ""},
		{"503 before the limiter", "GET", "/v2/me", 503, headersWith(ph, "Retry-After", "5"), v2Error("SERVICE_UNAVAILABLE"), ""},
		{"503 from a write", "POST", "/v2/rules", 503, headersWith(lh, "Retry-After", "5"), v2Error("SERVICE_UNAVAILABLE"), ""},
		{"openapi", "GET", "/v2/openapi.json", 200, ph, string(doc), ""},
		{"me", "GET", "/v2/me", 200, lh, obj{"userId": userID, "email": "a@example.com", "storageMode": true}, ""},
		{"accounts", "GET", "/v2/accounts?status=all", 200, lh, obj{"accounts": list(v2Account()), "pageInfo": obj{"nextCursor": "abc", "hasMore": true}}, ""},
		{"account", "GET", "/v2/accounts/" + acctID, 200, lh, acct, ""},
		{"create account", "POST", "/v2/accounts", 201, lh, acct, ""},
		{"update account", "PATCH", "/v2/accounts/" + acctID, 200, lh, acct, ""},
		{"close account", "DELETE", "/v2/accounts/" + acctID, 200, lh, closed, ""},
		{"balance history beats {accountId}", "GET", "/v2/accounts/balance-history", 200, lh, obj{
			"balanceHistory": list(obj{"id": txID, "bankAccountId": acctID, "accountName": "Visa", "date": "2024-02-29", "balance": 1, "currency": "EUR", "derived": false}),
			"pageInfo":       pageInfo(),
		}, ""},
		{"transactions", "GET", "/v2/transactions", 200, lh, obj{"transactions": list(v2Transaction(), edit(v2Transaction(), "status", "pending", "postedDate", nil, "bankConnectionId", nil)), "pageInfo": pageInfo()}, ""},
		{"patch transaction", "PATCH", "/v2/transactions/" + txID, 200, lh, edit(v2Transaction(), "categoryId", nil), ""},
		{"bank connections", "GET", "/v2/bank-connections", 200, lh, obj{"bankConnections": list(v2BankConnection())}, ""},
		{"categories", "GET", "/v2/categories", 200, lh, obj{"categories": list(v2Category(), edit(v2Category(), "provider", "manual", "providerId", nil, "group", nil, "categoryGroupId", nil))}, ""},
		{"create category", "POST", "/v2/categories", 201, lh, v2Category(), ""},
		{"update category", "PATCH", "/v2/categories/" + catID, 200, lh, v2Category(), ""},
		{"category groups", "GET", "/v2/category-groups", 200, lh, obj{"categoryGroups": list(obj{"id": groupID, "name": "Food", "provider": "plaid"})}, ""},
		{"holdings", "GET", "/v2/holdings", 200, lh, obj{"holdings": list(v2Holding()), "securities": list(v2Security(), edit(v2Security(), "symbol", nil, "closePrice", nil, "currency", nil)), "pageInfo": pageInfo()}, ""},
		{"investment transactions", "GET", "/v2/investment-transactions", 200, lh, obj{"investmentTransactions": list(v2InvestmentTransaction()), "securities": list(), "pageInfo": pageInfo()}, ""},
		{"rules", "GET", "/v2/rules?includeArchived=true", 200, lh, obj{"rules": list(v2Rule(), edit(v2Rule(), "allowedAccountIds", nil, "archivedAt", stamp))}, ""},
		{"create rule", "POST", "/v2/rules", 201, lh, v2Rule(), ""},
		{"update rule", "PATCH", "/v2/rules/" + ruleID, 200, lh, v2Rule(), ""},
		{"archive rule", "DELETE", "/v2/rules/" + ruleID, 200, lh, edit(v2Rule(), "archivedAt", stamp), ""},
		{"400", "GET", "/v2/transactions?limit=0", 400, lh, v2Error("BAD_REQUEST"), ""},
		{"401", "GET", "/v2/me", 401, ph, obj{"error": "Missing or invalid Authorization header"}, ""},
		{"403 storage", "GET", "/v2/me", 403, ph, v2Error("STORAGE_MODE_REQUIRED"), ""},
		{"403 subscription", "GET", "/v2/accounts", 403, lh, v2Error("SUBSCRIPTION_REQUIRED"), ""},
		{"404", "GET", "/v2/accounts/" + acctID, 404, lh, v2Error("NOT_FOUND"), ""},
		{"429", "POST", "/v2/rules", 429, headersWith(lh, "Retry-After", "30"), edit(v2Error("RATE_LIMITED"), "retryAfter", 30), ""},
		{"500", "GET", "/v2/categories", 500, ph, v2Error("INTERNAL_ERROR"), ""},
		{"502", "GET", "/v2/holdings", 502, lh, v2Error("PROVIDER_UNAVAILABLE"), ""},
		{"405 on a known path", "PUT", "/v2/accounts", 405, ph, v2Error("METHOD_NOT_ALLOWED"), ""},
		{"404 on an unknown path", "GET", "/v2/nope", 404, ph, v2Error("NOT_FOUND"), ""},
	})
}

func TestV2BadResponses(t *testing.T) {
	v := openapitest.New(t, openapitest.V2(t, all.NewRegistry().Profiles()))
	lh, ph := limitedHeaders(), publicHeaders()
	acct := func(changes ...any) obj { return obj{"account": edit(v2Account(), changes...)} }
	get := "/v2/accounts/" + acctID
	rule := func(changes ...any) obj { return edit(v2Rule(), changes...) }
	run(t, v, []tc{
		{"missing nullable field", "GET", get, 200, lh, acct("closedAt", absent{}), "closedAt"},
		{"unknown field", "GET", get, 200, lh, acct("balance", 1), "balance"},
		{"null in non-nullable field", "GET", get, 200, lh, acct("name", nil), "name"},
		{"money as string", "GET", get, 200, lh, acct("currentBalance", "410.50"), "currentBalance"},
		{"bad uuid", "GET", get, 200, lh, acct("id", "acct-1"), "id"},
		{"lowercase currency", "GET", get, 200, lh, acct("currency", "usd"), "currency"},
		{"bad status enum", "GET", get, 200, lh, acct("status", "deleted"), "status"},
		{"bad provider", "GET", get, 200, lh, acct("provider", "Plaid"), "provider"},
		{"date-time without zone", "GET", get, 200, lh, acct("balanceAsOf", "2026-11-22T06:00:00"), "balanceAsOf"},
		{"liability type", "GET", get, 200, lh, acct("liability.type", "auto"), "type"},
		{"liability null field", "GET", get, 200, lh, acct("liability.minimumPaymentAmount", nil), "minimumPaymentAmount"},
		{"liability unknown field", "GET", get, 200, lh, acct("liability.foo", 1), "foo"},
		{"liability date", "GET", get, 200, lh, acct("liability.nextPaymentDueDate", "2026-02-30"), "nextPaymentDueDate"},
		{"liability address incomplete", "GET", get, 200, lh, acct("liability.propertyAddress.city", absent{}), "liability"},
		{"wrapper missing", "GET", get, 200, lh, v2Account(), "account"},
		{"transaction date-time as date", "PATCH", "/v2/transactions/" + txID, 200, lh, edit(v2Transaction(), "postedDate", stamp), "postedDate"},
		{"transaction status", "PATCH", "/v2/transactions/" + txID, 200, lh, edit(v2Transaction(), "status", "cleared"), "status"},
		{"pageInfo missing", "GET", "/v2/transactions", 200, lh, obj{"transactions": list()}, "pageInfo"},
		{"hasMore missing", "GET", "/v2/transactions", 200, lh, obj{"transactions": list(), "pageInfo": obj{"nextCursor": nil}}, "hasMore"},
		{"connection status", "GET", "/v2/bank-connections", 200, lh, obj{"bankConnections": list(edit(v2BankConnection(), "status", "ok"))}, "status"},
		{"nextSyncAt missing", "GET", "/v2/bank-connections", 200, lh, obj{"bankConnections": list(edit(v2BankConnection(), "nextSyncAt", absent{}))}, "nextSyncAt"},
		{"rule priority 0", "POST", "/v2/rules", 201, lh, rule("priority", 0), "priority"},
		{"rule no conditions", "POST", "/v2/rules", 201, lh, rule("conditions", list()), "conditions"},
		{"rule operator", "POST", "/v2/rules", 201, lh, rule("conditions.0.operator", "like"), "operator"},
		{"rule condition field", "POST", "/v2/rules", 201, lh, rule("conditions.0.field", "Category"), "field"},
		{"rule hide false", "POST", "/v2/rules", 201, lh, rule("outcomes.2.value", false), "outcomes"},
		{"rule category outcome without id", "POST", "/v2/rules", 201, lh, rule("outcomes.0.value", obj{"value": "Coffee"}), "outcomes"},
		{"rule unknown action", "POST", "/v2/rules", 201, lh, rule("outcomes.1.action", "deleteTransaction"), "outcomes"},
		{"holding security id", "GET", "/v2/holdings", 200, lh, obj{"holdings": list(edit(v2Holding(), "securityId", nil)), "securities": list(), "pageInfo": pageInfo()}, "securityId"},
		{"undocumented status", "GET", "/v2/accounts", 502, lh, v2Error("PROVIDER_UNAVAILABLE"), "not documented"},
		{"wrong code for status", "GET", get, 404, lh, v2Error("BAD_REQUEST"), "code"},
		{"code outside the enum", "GET", get, 400, lh, v2Error("INVALID"), "code"},
		{"401 with another message", "GET", "/v2/me", 401, ph, obj{"error": "Unauthorized"}, "error"},
		{"outcome on another field", "POST", "/v2/rules", 201, lh, rule("outcomes.1.field", "Summary"), "outcomes"},
		{"401 in envelope shape", "GET", "/v2/me", 401, ph, v2Error("UNAUTHORIZED"), "error"},
		{"429 without retryAfter", "GET", "/v2/me", 429, headersWith(lh, "Retry-After", "30"), v2Error("RATE_LIMITED"), "retryAfter"},
		{"503 without Retry-After", "GET", "/v2/accounts", 503, ph, v2Error("SERVICE_UNAVAILABLE"), "Retry-After"},
		{"503 with another code", "GET", "/v2/accounts", 503, headersWith(ph, "Retry-After", "5"), v2Error("INTERNAL_ERROR"), "code"},
		{"429 without Retry-After header", "GET", "/v2/me", 429, lh, edit(v2Error("RATE_LIMITED"), "retryAfter", 30), "Retry-After"},
		{"missing x-request-id", "GET", "/v2/health", 200, headersWith(ph, "X-Request-Id", ""), obj{"status": "ok", "timestamp": stamp}, "x-request-id"},
		{"x-request-id outside its pattern", "GET", "/v2/health", 200, headersWith(ph, "X-Request-Id", "a b"), obj{"status": "ok", "timestamp": stamp}, "x-request-id"},
		{"missing rate-limit header", "GET", "/v2/me", 200, headersWith(lh, "X-RateLimit-Remaining", ""), obj{"userId": userID, "email": "a@example.com", "storageMode": true}, "X-RateLimit-Remaining"},
		{"rate-limit reset not an integer", "GET", "/v2/me", 200, headersWith(lh, "X-RateLimit-Reset", "soon"), obj{"userId": userID, "email": "a@example.com", "storageMode": true}, "X-RateLimit-Reset"},
		{"text content type", "GET", "/v2/health", 200, headersWith(ph, "Content-Type", "text/plain"), obj{"status": "ok", "timestamp": stamp}, "text/plain"},
		{"no content type", "GET", "/v2/health", 200, headersWith(ph, "Content-Type", ""), obj{"status": "ok", "timestamp": stamp}, "Content-Type"},
		{"empty body", "GET", "/v2/health", 200, ph, nil, "empty body"},
		{"not JSON", "GET", "/v2/health", 200, ph, "ok", "decode"},
		{"health status", "GET", "/v2/health", 200, ph, obj{"status": "up", "timestamp": stamp}, "status"},
		{"405 with another status", "PUT", "/v2/accounts", 404, ph, v2Error("NOT_FOUND"), "405"},
		{"405 with the wrong code", "PUT", "/v2/accounts", 405, ph, v2Error("BAD_REQUEST"), "code"},
		{"unknown path answering 200", "GET", "/v2/nope", 200, ph, obj{}, "404"},
	})
}

func TestV1Responses(t *testing.T) {
	doc := openapitest.V1(t, all.NewRegistry().Profiles())
	v := openapitest.New(t, doc)
	lh, ph := limitedHeaders(), publicHeaders()
	txs := func(tx obj, meta obj) obj {
		return obj{"data": obj{"transactions": list(tx), "categories": list(obj{"id": "cat_1", "name": "Coffee", "group": "Food", "description": "Coffee"})}, "meta": meta}
	}
	txMeta := obj{"count": 1, "nextPage": "http://127.0.0.1:8080/v1/transactions?cursor=1"}
	holdings := func(h obj) obj {
		return obj{"data": obj{"holdings": list(h), "securities": list(v1Security())}, "meta": edit(listMeta(), "nextPage", nil)}
	}
	credit := edit(v1Account(), "payment", obj{
		"lastPaymentAmount": 50, "lastPaymentDate": "2026-11-01", "nextPaymentDueDate": nil,
		"lastStatementBalance": 410.5, "minimumPaymentAmount": 25, "nextMonthlyPayment": nil,
	}, "loanOrigination", obj{"originationDate": nil, "originationPrincipalAmount": 1000})
	mw := func(msg string) obj { return obj{"error": msg, "requestId": reqID} }
	run(t, v, []tc{
		{"health", "GET", "/v1/health", 200, ph, obj{"data": obj{"status": "degraded", "timestamp": stamp}}, ""},
		{"health down", "GET", "/v1/health", 503, headersWith(ph, "Retry-After", "5"), v2Error("SERVICE_UNAVAILABLE"), ""},
		{"503 from auth", "GET", "/v1/accounts", 503, headersWith(ph, "Retry-After", "5"), v2Error("SERVICE_UNAVAILABLE"), ""},
		{"503 from endpoint", "GET", "/v1/transactions", 503, headersWith(lh, "Retry-After", "5"), v2Error("SERVICE_UNAVAILABLE"), ""},
		{"openapi", "GET", "/v1/openapi.json", 200, ph, string(doc), ""},
		{"accounts", "GET", "/v1/accounts?connectionId=" + connID, 200, lh, obj{"data": list(v1Account(), credit), "meta": listMeta()}, ""},
		{"bank connections", "GET", "/v1/bank-connections", 200, lh, obj{"bank_connections": list(
			obj{"id": connID, "name": "Chase", "provider": "Plaid", "error": nil},
			obj{"id": connID, "name": "Bank", "provider": "GoCardless", "error": obj{"code": "EXPIRED", "message": "consent expired"}},
		), "meta": listMeta()}, ""},
		{"transactions", "GET", "/v1/transactions", 200, lh, txs(v1Transaction(), txMeta), ""},
		{"holdings", "GET", "/v1/holdings", 200, lh, holdings(v1Holding()), ""},
		{"investment transactions", "GET", "/v1/investment-transactions", 200, lh, obj{"data": obj{"investmentTransactions": list(obj{
			"id": "it_1", "accountId": "acc_1", "securityId": "sec_1", "type": "buy", "subtype": "trade",
			"date": "2026-11-01", "quantity": 1, "price": 5, "amount": -5, "fees": nil, "currency": "USD",
			"description": "Buy", "provider": "Plaid",
		}), "securities": list(v1Security())}, "meta": edit(listMeta(), "nextPage", nil)}, ""},
		{"400", "GET", "/v1/transactions", 400, lh, v2Error("BAD_REQUEST"), ""},
		{"401", "GET", "/v1/accounts", 401, ph, mw("API key has expired"), ""},
		{"403", "GET", "/v1/accounts", 403, ph, mw("API access requires active pro subscription or trial"), ""},
		{"404", "GET", "/v1/transactions", 404, lh, v2Error("NOT_FOUND"), ""},
		{"429", "GET", "/v1/holdings", 429, lh, edit(mw("Rate limit exceeded"), "retryAfter", 1795327260000), ""},
		{"500 from auth", "GET", "/v1/accounts", 500, ph, mw("Internal error"), ""},
		{"500 from endpoint", "GET", "/v1/accounts", 500, lh, v2Error("INTERNAL_ERROR"), ""},
		{"502", "GET", "/v1/holdings", 502, lh, v2Error("PROVIDER_SERVICE_UNAVAILABLE"), ""},

		{"bad: v2 provider spelling", "GET", "/v1/accounts", 200, lh, obj{"data": list(edit(v1Account(), "provider", "plaid")), "meta": listMeta()}, "provider"},
		{"bad: balance flattened", "GET", "/v1/accounts", 200, lh, obj{"data": list(edit(v1Account(), "balance", 100.25)), "meta": listMeta()}, "balance"},
		{"bad: meta without totalCount", "GET", "/v1/accounts", 200, lh, obj{"data": list(), "meta": obj{"count": 0, "hasMore": false}}, "totalCount"},
		{"bad: data key on connections", "GET", "/v1/bank-connections", 200, lh, obj{"data": list(), "meta": listMeta()}, "bank_connections"},
		{"bad: relative nextPage", "GET", "/v1/transactions", 200, lh, txs(v1Transaction(), obj{"count": 1, "nextPage": "/v1/transactions?cursor=1"}), "nextPage"},
		{"bad: isPending as string", "GET", "/v1/transactions", 200, lh, txs(edit(v1Transaction(), "isPending", "true"), txMeta), "isPending"},
		{"bad: holding id without colon", "GET", "/v1/holdings", 200, lh, holdings(edit(v1Holding(), "id", "sec_1")), "id"},
		{"bad: 401 message", "GET", "/v1/accounts", 401, ph, mw("Unauthorized"), "error"},
		{"bad: 401 without requestId", "GET", "/v1/accounts", 401, ph, obj{"error": "Invalid API key"}, "requestId"},
		{"bad: x-request-id not a uuid", "GET", "/v1/accounts", 401, headersWith(ph, "X-Request-Id", "trace-1"), mw("Invalid API key"), "x-request-id"},
		{"bad: 502 with v2 code", "GET", "/v1/holdings", 502, lh, v2Error("PROVIDER_UNAVAILABLE"), "code"},
		{"bad: 502 on transactions", "GET", "/v1/transactions", 502, lh, v2Error("PROVIDER_SERVICE_UNAVAILABLE"), "not documented"},
		{"bad: 429 without retryAfter", "GET", "/v1/holdings", 429, lh, mw("Rate limit exceeded"), "retryAfter"},
		{"bad: write method", "POST", "/v1/accounts", 201, lh, obj{}, "405"},
		{"bad: 503 without Retry-After", "GET", "/v1/accounts", 503, ph, v2Error("SERVICE_UNAVAILABLE"), "Retry-After"},
		{"bad: 503 in the middleware shape", "GET", "/v1/accounts", 503, headersWith(ph, "Retry-After", "5"), mw("Service unavailable"), "error"},
	})
}

// TestCheckHelpers drives the t-based helpers through a real handler and a
// real HTTP round trip.
func TestCheckHelpers(t *testing.T) {
	v := openapitest.New(t, openapitest.V2(t, all.NewRegistry().Profiles()))
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range publicHeaders() {
			w.Header()[k] = vs
		}
		_, _ = io.WriteString(w, `{"status":"ok","timestamp":"`+stamp+`"}`)
	})

	req := httptest.NewRequest(http.MethodGet, "/v2/health", nil)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	v.CheckRecorder(t, req, rec)

	srv := httptest.NewServer(handler)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v2/health")
	if err != nil {
		t.Fatal(err)
	}
	body := v.CheckResponse(t, resp)
	again, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) == 0 || !bytes.Equal(body, again) {
		t.Errorf("CheckResponse returned %q and left %q", body, again)
	}

	// Wrap and Transport check every response passing through them.
	wrapped := httptest.NewServer(v.Wrap(t, handler))
	defer wrapped.Close()
	client := &http.Client{Transport: v.Transport(t, nil)}
	resp, err = client.Get(wrapped.URL + "/v2/health")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != reqID {
		t.Errorf("Wrap changed the response: %d %v", resp.StatusCode, resp.Header)
	}
	badFake := &recordingTB{TB: t}
	badServer := httptest.NewServer(v.Wrap(badFake, http.NotFoundHandler()))
	defer badServer.Close()
	resp, err = badServer.Client().Get(badServer.URL + "/v2/health")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if !badFake.failed {
		t.Error("Wrap let a text/plain 404 from /v2/health through")
	}

	// A failing check must report through t.
	fake := &recordingTB{TB: t}
	v.Check(fake, req, http.StatusOK, publicHeaders(), []byte(`{"status":"ok"}`))
	if !fake.failed {
		t.Error("Check did not fail on a body missing timestamp")
	}
}

// recordingTB records Errorf calls instead of failing the test.
type recordingTB struct {
	testing.TB
	failed bool
}

func (r *recordingTB) Errorf(string, ...any) { r.failed = true }
func (r *recordingTB) Helper()               {}

func TestLoadRejectsInvalidDocuments(t *testing.T) {
	bad := map[string]string{
		"not JSON":        `{`,
		"no paths object": `{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Missing"}}}}}}}}}`,
		"bad type":        `{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"strin"}}}}}}}}}`,
	}
	for name, doc := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := openapitest.Load(t.Context(), []byte(doc)); err == nil {
				t.Error("Load accepted an invalid document")
			}
		})
	}
}
