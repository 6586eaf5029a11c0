package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

func TestV1Accounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	manual := v1ManualAccount(t, e.fx, w.a.ID, "Cash jar")
	credit := e.fx.Account(w.a.ID, w.connA1, "plaid", "A1 card")
	_, err := e.fx.Pool.Exec(t.Context(), `UPDATE accounts SET type = 'credit', subtype = 'credit card', credit_limit = 5000,
		mask = NULL, liability = $2 WHERE id = $1`, credit,
		`{"type":"credit","interestRate":19.99,"lastPaymentAmount":120.5,"lastPaymentDate":"2026-02-15",
		  "nextPaymentDueDate":"2026-03-15","lastStatementBalance":640.12,"minimumPaymentAmount":35}`)
	if err != nil {
		t.Fatal(err)
	}
	closed := e.fx.Account(w.a.ID, w.connA2, "mercury", "closed")
	if _, err := e.fx.Pool.Exec(t.Context(), `UPDATE accounts SET status = 'closed', closed_at = now() WHERE id = $1`, closed); err != nil {
		t.Fatal(err)
	}

	r := e.get("/v1/accounts", key)
	e.expect(r, http.StatusOK, "")
	rows := v1Rows(t, r, "")
	if got, want := v1IDs(t, rows), v1UUIDs(w.acctA1, w.acctA2, manual, credit); !slices.Equal(got, want) {
		t.Fatalf("accounts %v, want %v", got, want)
	}
	if v1MetaInt(t, r, "count") != 4 || v1MetaInt(t, r, "totalCount") != 4 || v1MetaBool(t, r, "hasMore") {
		t.Fatalf("meta %s", r.body)
	}
	checkJSON(t, rows[0], map[string]string{
		"bankConnectionId": `"` + w.connA1.String() + `"`, "name": `"A1 checking"`, "provider": `"Plaid"`,
		"balance":  `{"current":100.5,"available":90.25,"limit":null,"interestRate":null}`,
		"currency": `"USD"`, "mask": `"1234"`, "type": `"depository"`, "subtype": `"checking"`,
		"payment": "null", "loanOrigination": "null",
	})
	checkJSON(t, rows[1], map[string]string{"provider": `"Mercury"`})
	checkJSON(t, rows[2], map[string]string{"provider": `"Manual"`, "bankConnectionId": "null"})
	checkJSON(t, rows[3], map[string]string{
		"type": `"credit"`, "subtype": `"credit card"`, "mask": "null",
		"balance": `{"current":100.5,"available":90.25,"limit":5000,"interestRate":19.99}`,
		"payment": `{"lastPaymentAmount":120.5,"lastPaymentDate":"2026-02-15","nextPaymentDueDate":"2026-03-15",` +
			`"lastStatementBalance":640.12,"minimumPaymentAmount":35,"nextMonthlyPayment":null}`,
		"loanOrigination": "null",
	})

	r = e.get("/v1/accounts?connectionId="+w.connA1.String(), key)
	e.expect(r, http.StatusOK, "")
	if got := v1IDs(t, v1Rows(t, r, "")); !slices.Equal(got, v1UUIDs(w.acctA1, credit)) {
		t.Fatalf("connection filter %v", got)
	}
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA2})
	r = e.get("/v1/accounts", scoped)
	if got := v1IDs(t, v1Rows(t, r, "")); !slices.Equal(got, v1UUIDs(w.acctA2)) {
		t.Fatalf("scoped key sees %v", got)
	}
}

// v1ManualAccount creates a manual account.
func v1ManualAccount(t *testing.T, fx *storagetest.Fixtures, userID uuid.UUID, name string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := fx.Pool.QueryRow(t.Context(), `INSERT INTO accounts (user_id, provider, manual, name, type, currency, current_balance)
		VALUES ($1, 'manual', true, $2, 'depository', 'USD', 12) RETURNING id`, userID, name).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// checkJSON compares fields of a row with their expected JSON text.
func checkJSON(t *testing.T, row map[string]json.RawMessage, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := string(row[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
}

func TestV1BankConnections(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	broken := e.fx.Connection(w.a.ID, "gocardless", "error")
	_, err := e.fx.Pool.Exec(t.Context(), `UPDATE bank_connections SET last_provider_error_code = 'EUA_EXPIRED',
		last_provider_error_message = 'Consent expired' WHERE id = $1`, broken)
	if err != nil {
		t.Fatal(err)
	}
	e.fx.Connection(w.a.ID, "stripe", "disabled")
	r := e.get("/v1/bank-connections", e.fx.Key(w.a.ID, nil))
	e.expect(r, http.StatusOK, "")
	b := decodeV1(t, r)
	want := []map[string]any{
		{"id": w.connA1.String(), "name": "Bank of plaid", "provider": "Plaid", "error": nil},
		{"id": w.connA2.String(), "name": "Bank of mercury", "provider": "Mercury", "error": nil},
		{"id": broken.String(), "name": "Bank of gocardless", "provider": "GoCardless",
			"error": map[string]any{"code": "EUA_EXPIRED", "message": "Consent expired"}},
	}
	gotJSON, _ := json.Marshal(b.Conns)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("connections\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if v1MetaInt(t, r, "count") != 3 || v1MetaInt(t, r, "totalCount") != 3 || v1MetaBool(t, r, "hasMore") {
		t.Fatalf("meta %s", r.body)
	}
}

func TestV1Transactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	postedAt := time.Date(2026, 3, 5, 14, 30, 0, 0, time.UTC)
	_, err := e.fx.Pool.Exec(t.Context(), `UPDATE transactions SET posted_at = $2, merchant_name = 'Acme', fees = 1.5,
		fee_type = 'card', net_amount = 998.6, sub_account = 'main', source = 'card', type = 'charge' WHERE id = $1`,
		w.txA1[4], postedAt)
	if err != nil {
		t.Fatal(err)
	}
	base := "/v1/transactions?bankConnectionId=" + w.connA1.String() + "&startDate=2026-03-01&endDate=2026-03-31"
	tests := []struct {
		name, query string
		want        []uuid.UUID
	}{
		{"pending and posted, never deleted or hidden", "", []uuid.UUID{w.txA1[4], w.txA1[1], w.txA1[0]}},
		{"startDate inclusive", "&startDate=2026-03-02", []uuid.UUID{w.txA1[4], w.txA1[1]}},
		{"endDate inclusive", "&endDate=2026-03-02", []uuid.UUID{w.txA1[1], w.txA1[0]}},
		{"accountIds of the connection", "&accountIds=" + w.acctA1.String(), []uuid.UUID{w.txA1[4], w.txA1[1], w.txA1[0]}},
		{"accountIds of another connection match nothing", "&accountIds=" + w.acctA2.String(), nil},
		{"several accountIds", "&accountIds=" + w.acctA2.String() + "," + w.acctA1.String(), []uuid.UUID{w.txA1[4], w.txA1[1], w.txA1[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.get(dedupeQuery(t, base+tt.query), key)
			e.expect(r, http.StatusOK, "")
			if got := v1IDs(t, v1Rows(t, r, "transactions")); !slices.Equal(got, v1UUIDs(tt.want...)) {
				t.Fatalf("got %v\nwant %v", got, v1UUIDs(tt.want...))
			}
			if v1MetaInt(t, r, "count") != len(tt.want) || e.v1Next(r) != "" {
				t.Fatalf("meta %s", r.body)
			}
		})
	}

	r := e.get(base, key)
	rows := v1Rows(t, r, "transactions")
	checkJSON(t, rows[0], map[string]string{
		"summary": `"Purchase 4"`, "postedAt": `"2026-03-05T14:30:00Z"`, "amount": "1000.1", "currency": `"USD"`,
		"isPending": "false", "subAccount": `"main"`, "merchantName": `"Acme"`, "categoryId": "null",
		"fees": "1.5", "feeType": `"card"`, "netAmount": "998.6", "source": `"card"`, "type": `"charge"`,
		"provider": `"Plaid"`, "accountId": `"` + w.acctA1.String() + `"`,
	})
	checkJSON(t, rows[1], map[string]string{"isPending": "true", "postedAt": "null", "amount": "-12.34"})
	checkJSON(t, rows[2], map[string]string{
		"isPending": "false", "postedAt": `"2026-03-01T00:00:00Z"`, "amount": "-4.5",
		"categoryId": `"` + w.catA.String() + `"`, "fees": "null", "type": "null",
	})
	if created, err := time.Parse(time.RFC3339, v1Str(t, rows[0]["createdAt"])); err != nil || time.Since(created) > time.Hour {
		t.Fatalf("createdAt %s", rows[0]["createdAt"])
	}
	cats := v1Rows(t, r, "categories")
	if len(cats) != 1 {
		t.Fatalf("categories %s", r.body)
	}
	checkJSON(t, cats[0], map[string]string{"id": `"` + w.catA.String() + `"`, "name": `"Coffee"`, "group": `"Food"`, "description": `""`})

	// Categories are exactly those the returned rows reference.
	r = e.get(dedupeQuery(t, base+"&startDate=2026-03-02"), key)
	if cats := v1Rows(t, r, "categories"); len(cats) != 0 {
		t.Fatalf("categories of rows without one: %s", r.body)
	}
}

// dedupeQuery keeps the last value of each repeated query parameter, so
// that table tests can override a base query.
func dedupeQuery(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := req.URL.Query()
	for k, v := range q {
		q[k] = v[len(v)-1:]
	}
	return req.URL.Path + "?" + q.Encode()
}

func TestV1Holdings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	r := e.get("/v1/holdings?bankConnectionId="+w.connA1.String(), key)
	e.expect(r, http.StatusOK, "")
	var secID string
	if err := e.fx.Pool.QueryRow(t.Context(), `SELECT security_id::text FROM holdings WHERE id = $1`, w.holdingA1).Scan(&secID); err != nil {
		t.Fatal(err)
	}
	rows := v1Rows(t, r, "holdings")
	if len(rows) != 1 {
		t.Fatalf("holdings %s", r.body)
	}
	checkJSON(t, rows[0], map[string]string{
		"id": `"` + w.acctA1.String() + ":" + secID + `"`, "accountId": `"` + w.acctA1.String() + `"`,
		"securityId": `"` + secID + `"`, "quantity": "3", "costBasis": "25", "institutionPrice": "10.5",
		"institutionValue": "31.5", "currency": `"USD"`, "priceAsOf": `"2026-01-02"`, "provider": `"Plaid"`,
	})
	secs := v1Rows(t, r, "securities")
	if len(secs) != 1 {
		t.Fatalf("securities %s", r.body)
	}
	checkJSON(t, secs[0], map[string]string{"id": `"` + secID + `"`, "symbol": `"AAPL"`, "name": `"AAPL Inc"`, "type": `"equity"`})
	if v1MetaInt(t, r, "count") != 1 || v1MetaInt(t, r, "totalCount") != 1 || v1MetaBool(t, r, "hasMore") || e.v1Next(r) != "" {
		t.Fatalf("meta %s", r.body)
	}
	r = e.get("/v1/holdings?bankConnectionId="+w.connA1.String()+"&accountIds="+w.acctA2.String(), key)
	e.expect(r, http.StatusOK, "")
	if len(v1Rows(t, r, "holdings")) != 0 || len(v1Rows(t, r, "securities")) != 0 || v1MetaInt(t, r, "totalCount") != 0 {
		t.Fatalf("holdings of another connection's account: %s", r.body)
	}
}

func TestV1InvestmentTransactions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	today := time.Now().UTC()
	recent := e.fx.InvestmentTransaction(w.a.ID, w.connA1, w.acctA1, today.AddDate(0, 0, -1))
	edge := e.fx.InvestmentTransaction(w.a.ID, w.connA1, w.acctA1, today.AddDate(0, 0, -30))
	e.fx.InvestmentTransaction(w.a.ID, w.connA1, w.acctA1, today.AddDate(0, 0, -31))
	base := "/v1/investment-transactions?bankConnectionId=" + w.connA1.String()

	r := e.get(base, key)
	e.expect(r, http.StatusOK, "")
	if got := v1IDs(t, v1Rows(t, r, "investmentTransactions")); !slices.Equal(got, v1UUIDs(recent, edge)) {
		t.Fatalf("default window (30 days ago to today): %v", got)
	}
	if v1MetaInt(t, r, "totalCount") != 2 || v1MetaInt(t, r, "count") != 2 {
		t.Fatalf("meta %s", r.body)
	}
	rows := v1Rows(t, r, "investmentTransactions")
	checkJSON(t, rows[0], map[string]string{
		"accountId": `"` + w.acctA1.String() + `"`, "securityId": "null", "type": `"buy"`, "subtype": `"buy"`,
		"date": `"` + today.AddDate(0, 0, -1).Format(domain.DateLayout) + `"`, "quantity": "2", "price": "10",
		"amount": "-20", "fees": "0.5", "currency": `"USD"`, "description": `"Buy"`, "provider": `"Plaid"`,
	})
	r = e.get(base+"&startDate=2026-03-01&endDate=2026-03-31", key)
	e.expect(r, http.StatusOK, "")
	if n := len(v1Rows(t, r, "investmentTransactions")); n != 1 {
		t.Fatalf("March: %d rows: %s", n, r.body)
	}
	r = e.get(base+"&startDate=2026-03-01", key)
	if n := len(v1Rows(t, r, "investmentTransactions")); n != 4 {
		t.Fatalf("since March (endDate defaults to today): %d rows", n)
	}
}

func TestV1HealthAndDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.get("/v1/health", "")
	e.expect(r, http.StatusOK, "")
	var h struct {
		Data struct {
			Status    string `json:"status"`
			Timestamp string `json:"timestamp"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil || h.Data.Status != "degraded" {
		t.Fatalf("no worker has reported, want degraded: %s", r.body)
	}
	if ts, err := time.Parse(time.RFC3339, h.Data.Timestamp); err != nil || time.Since(ts) > time.Minute {
		t.Fatalf("timestamp %q", h.Data.Timestamp)
	}
	// A River leader elected within its TTL means a worker is running.
	_, err := e.fx.Pool.Exec(t.Context(), `INSERT INTO river_leader (elected_at, expires_at, leader_id) VALUES (now(), now() + interval '10 seconds', 'worker-1')`)
	if err != nil {
		t.Fatal(err)
	}
	r = e.get("/v1/health", "")
	if err := json.Unmarshal(r.body, &h); err != nil || h.Data.Status != "ok" {
		t.Fatalf("with a leader, want ok: %s", r.body)
	}
	if _, err := e.fx.Pool.Exec(t.Context(), `UPDATE river_leader SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	r = e.get("/v1/health", "")
	if err := json.Unmarshal(r.body, &h); err != nil || h.Data.Status != "degraded" {
		t.Fatalf("with an expired leader, want degraded: %s", r.body)
	}

	r = e.get("/v1/openapi.json", "")
	e.expect(r, http.StatusOK, "")
	info := r.json(t)["info"].(map[string]any)
	if info["version"] != "1.0.0" {
		t.Fatalf("info %v", info)
	}
	paths := r.json(t)["paths"].(map[string]any)
	for _, p := range []string{"/health", "/accounts", "/bank-connections", "/transactions", "/holdings", "/investment-transactions"} {
		if paths[p] == nil {
			t.Errorf("document lacks %s", p)
		}
	}
}
