package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// send makes a request with a JSON body (none when body is "").
func (e *env) send(method, path, key, body string) response {
	e.t.Helper()
	if body == "" {
		return e.do(method, path, key, nil)
	}
	return e.do(method, path, key, strings.NewReader(body))
}

// expectMessage asserts a 400 BAD_REQUEST whose message is msg.
func (e *env) expectMessage(r response, msg string) {
	e.t.Helper()
	e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
	got := r.json(e.t)["error"].(map[string]any)["message"]
	if got != msg {
		e.t.Fatalf("message %q, want %q", got, msg)
	}
}

// object returns the named object of a response, or the body itself when
// name is "".
func object(t *testing.T, r response, name string) map[string]any {
	t.Helper()
	m := r.json(t)
	if name == "" {
		return m
	}
	o, ok := m[name].(map[string]any)
	if !ok {
		t.Fatalf("no %s object in %s", name, r.body)
	}
	return o
}

const loanBody = `{"name":"Car loan","type":"loan","subtype":"auto","currency":"EUR","mask":"0042",
	"institutionName":"Family","currentBalance":1200.50,"availableBalance":0,
	"liability":{"type":"student","minimumPaymentAmount":50.25,"nextPaymentDueDate":"2026-04-01",
	"loanStatus":{"type":"repayment","endDate":"2030-01-01"},"aprs":[{"aprType":"purchase","aprPercentage":4.5}]}}`

func TestCreateManualAccount(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	r := e.send(http.MethodPost, "/v2/accounts", key, loanBody)
	e.expect(r, http.StatusCreated, "")
	a := object(t, r, "account")
	if a["provider"] != "manual" || a["name"] != "Car loan" || a["currency"] != "EUR" || a["status"] != "active" ||
		a["bankConnectionId"] != nil || a["mask"] != "0042" || a["subtype"] != "auto" || a["institutionName"] != "Family" {
		t.Fatalf("account: %v", a)
	}
	if string(mustObjectField(t, r.body, "account", "currentBalance")) != "1200.5" {
		t.Fatalf("balance: %s", r.body)
	}
	l := a["liability"].(map[string]any)
	if l["type"] != "student" || l["minimumPaymentAmount"].(float64) != 50.25 || l["nextPaymentDueDate"] != "2026-04-01" {
		t.Fatalf("liability: %v", l)
	}
	id := a["id"].(string)
	e.expect(e.get("/v2/accounts/"+id, key), http.StatusOK, "")
	hist := e.get("/v2/accounts/balance-history?bankAccountId="+id, key)
	entries := hist.json(t)["balanceHistory"].([]any)
	if len(entries) != 1 || entries[0].(map[string]any)["date"] != time.Now().UTC().Format(domain.DateLayout) {
		t.Fatalf("history: %s", hist.body)
	}
	// Another user cannot see it.
	e.expect(e.get("/v2/accounts/"+id, e.fx.Key(w.b.ID, nil)), http.StatusNotFound, "NOT_FOUND")
}

func mustObjectField(t *testing.T, body []byte, name, field string) string {
	t.Helper()
	r := response{body: body}
	o := object(t, r, name)
	if _, ok := o[field]; !ok {
		t.Fatalf("no %s.%s in %s", name, field, body)
	}
	i := strings.Index(string(body), `"`+field+`":`)
	rest := string(body[i+len(field)+3:])
	end := strings.IndexAny(rest, ",}")
	return rest[:end]
}

func TestCreateManualAccountWithScopedKeyJoinsScope(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA1})
	other := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA2})
	r := e.send(http.MethodPost, "/v2/accounts", scoped, `{"name":"Cash","type":"cash","currency":"USD"}`)
	e.expect(r, http.StatusCreated, "")
	id := object(t, r, "account")["id"].(string)
	deadline := time.Now().Add(3 * time.Second)
	for e.get("/v2/accounts/"+id, scoped).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("new account not reachable with the scoped key that created it")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.expect(e.get("/v2/accounts/"+id, other), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.get("/v2/accounts/"+id, e.fx.Key(w.a.ID, nil)), http.StatusOK, "")
}

func TestCreateManualAccountValidation(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	tests := []struct{ body, msg string }{
		{`{"type":"cash","currency":"USD"}`, "name: is required"},
		{`{"name":"","type":"cash","currency":"USD"}`, "name: must not be empty"},
		{`{"name":"x","currency":"USD"}`, "type: is required"},
		{`{"name":"x","type":"cash"}`, "currency: is required"},
		{`{"name":"x","type":"cash","currency":"usd"}`, "currency: must be an ISO 4217 code such as USD"},
		{`{"name":"x","type":"cash","currency":"ABC"}`, `currency: "ABC" is not an ISO 4217 currency code`},
		{`{"name":"x","type":"cash","currency":"USD","currentBalance":"12.5"}`, "currentBalance: must be a JSON number"},
		{`{"name":"x","type":"cash","currency":"USD","colour":"red"}`, `body: unknown field "colour"`},
		{`{"name":"x","type":"cash","currency":"USD","name":"y"}`, `body: duplicate field "name"`},
		{`{"name":"x",`, "body: malformed JSON"},
		{`[1]`, "body: must be a JSON object"},
		{`{"name":"x","type":"cash","currency":"USD"} {}`, "body: unexpected data after the JSON object"},
		{`{"name":"x","type":"credit","currency":"USD","liability":{"type":"auto"}}`, "liability.type: must be one of credit, student, mortgage"},
		{`{"name":"x","type":"credit","currency":"USD","liability":{"minimumPaymentAmount":1}}`, "liability.type: is required"},
		{`{"name":"x","type":"credit","currency":"USD","liability":{"type":"credit","interestRateType":"fixed"}}`,
			"liability.interestRateType: is response-only and cannot be set"},
		{`{"name":"x","type":"credit","currency":"USD","liability":{"type":"credit","bogus":1}}`, `liability: unknown field "bogus"`},
		{`{"name":"x","type":"credit","currency":"USD","liability":{"type":"credit","isOverdue":"no"}}`, "liability: isOverdue: must be a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			e.expectMessage(e.send(http.MethodPost, "/v2/accounts", key, tt.body), tt.msg)
		})
	}
	t.Run("content type", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v2/accounts", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("too large", func(t *testing.T) {
		big := `{"name":"` + strings.Repeat("x", 1<<20) + `","type":"cash","currency":"USD"}`
		e.expect(e.send(http.MethodPost, "/v2/accounts", key, big), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	})
}

func TestUpdateManualAccount(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	id := object(t, e.send(http.MethodPost, "/v2/accounts", key, loanBody), "account")["id"].(string)
	path := "/v2/accounts/" + id

	r := e.send(http.MethodPatch, path, key, `{"name":"Auto loan","mask":null}`)
	e.expect(r, http.StatusOK, "")
	a := object(t, r, "account")
	if a["name"] != "Auto loan" || a["mask"] != nil || a["type"] != "loan" || a["currency"] != "EUR" || a["subtype"] != "auto" {
		t.Fatalf("only name and mask should change: %v", a)
	}
	if a["liability"].(map[string]any)["type"] != "student" {
		t.Fatalf("liability should be kept: %v", a)
	}

	r = e.send(http.MethodPatch, path, key, `{"currentBalance":999.9,"currency":"USD","type":"credit","subtype":"card",
		"liability":{"type":"credit","lastStatementBalance":10}}`)
	e.expect(r, http.StatusOK, "")
	a = object(t, r, "account")
	if a["currentBalance"].(float64) != 999.9 || a["currency"] != "USD" || a["type"] != "credit" ||
		a["liability"].(map[string]any)["type"] != "credit" || a["liability"].(map[string]any)["minimumPaymentAmount"] != nil {
		t.Fatalf("update: %v", a)
	}
	hist := e.get("/v2/accounts/balance-history?bankAccountId="+id, key).json(t)["balanceHistory"].([]any)
	if len(hist) != 1 || hist[0].(map[string]any)["balance"].(float64) != 999.9 || hist[0].(map[string]any)["currency"] != "USD" {
		t.Fatalf("today's snapshot should be upserted: %v", hist)
	}
	r = e.send(http.MethodPatch, path, key, `{"liability":null}`)
	if object(t, r, "account")["liability"] != nil {
		t.Fatalf("liability should be cleared: %s", r.body)
	}

	tests := []struct{ body, msg string }{
		{`{}`, "body: name at least one field to change"},
		{`{"name":null}`, "name: must be a string"},
		{`{"currency":"EURO"}`, "currency: must be an ISO 4217 code such as USD"},
		{`{"status":"closed"}`, `body: unknown field "status"`},
		{`{"availableBalance":"1"}`, "availableBalance: must be a JSON number"},
	}
	for _, tt := range tests {
		e.expectMessage(e.send(http.MethodPatch, path, key, tt.body), tt.msg)
	}
	e.expect(e.send(http.MethodPatch, path, e.fx.Key(w.b.ID, nil), `{"name":"x"}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodPatch, path, e.fx.Key(w.a.ID, []uuid.UUID{w.acctA1}), `{"name":"x"}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodPatch, "/v2/accounts/"+uuid.NewString(), key, `{"name":"x"}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodPatch, "/v2/accounts/not-a-uuid", key, `{"name":"x"}`), http.StatusBadRequest, "BAD_REQUEST")
}

func TestBankSyncedAccountsAreReadOnly(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	path := "/v2/accounts/" + w.acctA1.String()
	msg := "account: bank-synced accounts are read-only; only manual accounts can be changed"
	e.expectMessage(e.send(http.MethodPatch, path, key, `{"name":"x"}`), msg)
	e.expectMessage(e.send(http.MethodDelete, path, key, ""), msg)
	a := object(t, e.get(path, key), "account")
	if a["name"] != "A1 checking" || a["status"] != "active" {
		t.Fatalf("bank account changed: %v", a)
	}
}

func TestCloseManualAccount(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	id := object(t, e.send(http.MethodPost, "/v2/accounts", key, `{"name":"Cash","type":"cash","currency":"USD","currentBalance":5}`), "account")["id"].(string)
	acct := uuid.MustParse(id)
	if _, err := e.fx.Pool.Exec(context.Background(), `INSERT INTO transactions (user_id, account_id, provider, provider_id, status, amount, currency, posted_date)
		VALUES ($1, $2, 'manual', 'm1', 'posted', -3, 'USD', '2026-03-01')`, w.a.ID, acct); err != nil {
		t.Fatal(err)
	}
	path := "/v2/accounts/" + id
	e.expect(e.send(http.MethodDelete, path, e.fx.Key(w.b.ID, nil), ""), http.StatusNotFound, "NOT_FOUND")

	r := e.send(http.MethodDelete, path, key, "")
	e.expect(r, http.StatusOK, "")
	a := object(t, r, "account")
	closedAt, _ := a["closedAt"].(string)
	if a["status"] != "closed" || closedAt == "" {
		t.Fatalf("close: %v", a)
	}
	again := object(t, e.send(http.MethodDelete, path, key, ""), "account")
	if again["closedAt"] != closedAt || again["status"] != "closed" {
		t.Fatalf("second close should change nothing: %v", again)
	}
	e.expect(e.get(path, key), http.StatusOK, "")
	e.expectMessage(e.send(http.MethodPatch, path, key, `{"name":"x"}`), "account: the account is closed")
	txs := e.get("/v2/transactions?bankAccountId="+id, key).json(t)["transactions"].([]any)
	hist := e.get("/v2/accounts/balance-history?bankAccountId="+id, key).json(t)["balanceHistory"].([]any)
	if len(txs) != 1 || len(hist) != 1 {
		t.Fatalf("transactions and history must be kept: %d, %d", len(txs), len(hist))
	}
	closed := ids(t, e.get("/v2/accounts?status=closed", key), "accounts")
	if len(closed) != 1 || closed[0] != id {
		t.Fatalf("closed listing: %v", closed)
	}
}

func TestCategoryWrites(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	r := e.send(http.MethodPost, "/v2/categories", key, `{"name":"Rent","group":"Housing","description":"Monthly"}`)
	e.expect(r, http.StatusCreated, "")
	cat := object(t, r, "")
	if cat["provider"] != "manual" || cat["name"] != "Rent" || cat["group"] != "Housing" || cat["description"] != "Monthly" || cat["categoryGroupId"] == nil {
		t.Fatalf("create: %v", cat)
	}
	groups := e.get("/v2/category-groups", key).json(t)["categoryGroups"].([]any)
	names := []string{}
	for _, g := range groups {
		names = append(names, g.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "Food,Housing" {
		t.Fatalf("groups: %v", names)
	}
	path := "/v2/categories/" + cat["id"].(string)
	r = e.send(http.MethodPatch, path, key, `{"group":"Home"}`)
	e.expect(r, http.StatusOK, "")
	if got := object(t, r, ""); got["group"] != "Home" || got["name"] != "Rent" || got["description"] != "Monthly" {
		t.Fatalf("patch group: %v", got)
	}
	r = e.send(http.MethodPatch, path, key, `{"name":"Rent & bills","description":"","group":null}`)
	if got := object(t, r, ""); got["group"] != nil || got["name"] != "Rent & bills" || got["description"] != "" {
		t.Fatalf("patch: %v", got)
	}
	e.expect(e.send(http.MethodPatch, path, e.fx.Key(w.b.ID, nil), `{"name":"x"}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodPatch, "/v2/categories/"+uuid.NewString(), key, `{"name":"x"}`), http.StatusNotFound, "NOT_FOUND")
	for _, tt := range []struct{ path, body, msg string }{
		{"/v2/categories", `{"group":"x"}`, "name: is required"},
		{"/v2/categories", `{"name":" "}`, "name: must not be empty"},
		{"/v2/categories", `{"name":"x","icon":"y"}`, `body: unknown field "icon"`},
		{"/v2/categories", `{"name":"x","description":null}`, "description: must be a string"},
		{path, `{}`, "body: name at least one field to change"},
		{path, `{"name":5}`, "name: must be a string"},
	} {
		method := http.MethodPost
		if tt.path == path {
			method = http.MethodPatch
		}
		e.expectMessage(e.send(method, tt.path, key, tt.body), tt.msg)
	}
}

func TestProviderCategoryEdits(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	ctx := context.Background()
	var plaidCat, mercuryCat uuid.UUID
	if err := e.fx.Pool.QueryRow(ctx, `INSERT INTO categories (user_id, provider, provider_id, name) VALUES ($1, 'plaid', 'FOOD', 'Food') RETURNING id`, w.a.ID).Scan(&plaidCat); err != nil {
		t.Fatal(err)
	}
	if err := e.fx.Pool.QueryRow(ctx, `INSERT INTO categories (user_id, provider, provider_id, name, read_only) VALUES ($1, 'mercury', 'ops', 'Ops', true) RETURNING id`, w.a.ID).Scan(&mercuryCat); err != nil {
		t.Fatal(err)
	}
	r := e.send(http.MethodPatch, "/v2/categories/"+plaidCat.String(), key, `{"name":"Eating out"}`)
	e.expect(r, http.StatusOK, "")
	if got := object(t, r, ""); got["name"] != "Eating out" || got["provider"] != "plaid" || got["providerId"] != "FOOD" {
		t.Fatalf("plaid edit: %v", got)
	}
	var edited bool
	if err := e.fx.Pool.QueryRow(ctx, `SELECT user_edited FROM categories WHERE id = $1`, plaidCat).Scan(&edited); err != nil || !edited {
		t.Fatalf("user_edited must be set so syncs keep the edit: %v %v", edited, err)
	}
	e.expectMessage(e.send(http.MethodPatch, "/v2/categories/"+mercuryCat.String(), key, `{"name":"x"}`),
		"category: categories of the business bank are read-only")
}

func TestSetTransactionCategory(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	tx := w.txA1[4].String()
	path := "/v2/transactions/" + tx
	r := e.send(http.MethodPatch, path, key, `{"categoryId":"`+w.catA.String()+`"}`)
	e.expect(r, http.StatusOK, "")
	got := object(t, r, "")
	if got["id"] != tx || got["categoryId"] != w.catA.String() {
		t.Fatalf("set: %s", r.body)
	}
	var source string
	if err := e.fx.Pool.QueryRow(context.Background(), `SELECT category_source FROM transactions WHERE id = $1`, w.txA1[4]).Scan(&source); err != nil || source != "user" {
		t.Fatalf("source %q %v", source, err)
	}
	r = e.send(http.MethodPatch, "/v2/transactions/"+w.txA1[0].String(), key, `{"categoryId":null}`)
	e.expect(r, http.StatusOK, "")
	if object(t, r, "")["categoryId"] != nil {
		t.Fatalf("clear: %s", r.body)
	}
	for _, tt := range []struct{ body, msg string }{
		{`{"categoryId":"` + w.catB.String() + `"}`, "categoryId: no such category"},
		{`{"categoryId":"` + uuid.NewString() + `"}`, "categoryId: no such category"},
		{`{"categoryId":"abc"}`, "categoryId: must be a UUID or null"},
		{`{"categoryId":null,"summary":"x"}`, `body: unknown field "summary"`},
		{`{}`, "categoryId: is required (a category id, or null to clear)"},
	} {
		e.expectMessage(e.send(http.MethodPatch, path, key, tt.body), tt.msg)
	}
	e.expect(e.send(http.MethodPatch, "/v2/transactions/"+w.txB[0].String(), key, `{"categoryId":null}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodPatch, path, e.fx.Key(w.a.ID, []uuid.UUID{w.acctA2}), `{"categoryId":null}`), http.StatusNotFound, "NOT_FOUND")
}
