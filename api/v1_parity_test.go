package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	v1 "github.com/finsync/finsync/api/v1"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage/storagetest"
)

// rawField returns the raw JSON at a dotted path of a row, "null" when any
// step is missing or null (version 2 omits empty liability fields).
func rawField(t *testing.T, row map[string]json.RawMessage, path string) string {
	t.Helper()
	parts := strings.Split(path, ".")
	raw, ok := row[parts[0]]
	for _, p := range parts[1:] {
		if !ok || string(raw) == "null" {
			return "null"
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %s is not an object", path, raw)
		}
		raw, ok = m[p]
	}
	if !ok {
		return "null"
	}
	return string(raw)
}

// v2Rows returns body[key] as rows of raw fields.
func v2Rows(t *testing.T, r response, key string) []map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(m[key], &rows); err != nil {
		t.Fatalf("no %s rows in %s", key, r.body)
	}
	return rows
}

// byField indexes rows by the string value of a field.
func byField(t *testing.T, rows []map[string]json.RawMessage, field string) map[string]map[string]json.RawMessage {
	t.Helper()
	out := make(map[string]map[string]json.RawMessage, len(rows))
	for _, row := range rows {
		out[v1Str(t, row[field])] = row
	}
	return out
}

// sameFacts asserts that each v1 field (key) holds exactly the JSON of the
// v2 field (value) it shows.
func sameFacts(t *testing.T, what string, a, b map[string]json.RawMessage, fields map[string]string) {
	t.Helper()
	for f1, f2 := range fields {
		if got, want := rawField(t, a, f1), rawField(t, b, f2); got != want {
			t.Errorf("%s: v1 %s = %s, v2 %s = %s", what, f1, got, f2, want)
		}
	}
}

// parityWorld enriches seedWorld with the fields the comparison needs.
func parityWorld(t *testing.T, e *env) (world, uuid.UUID) {
	w := seedWorld(e.fx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.fx.Pool.Exec(t.Context(), sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE transactions SET posted_at = '2026-03-05T22:15:00Z', merchant_name = 'Acme', fees = 0.3,
		fee_type = 'card', net_amount = 999.8, sub_account = 'main', source = 'pos', type = 'debit' WHERE id = $1`, w.txA1[4])
	exec(`UPDATE transactions SET amount = -0.0100, merchant_name = 'Beans' WHERE id = $1`, w.txA1[0])
	card := e.fx.Account(w.a.ID, w.connA1, "plaid", "A1 card")
	exec(`UPDATE accounts SET type = 'credit', subtype = 'credit card', current_balance = 640.1200, available_balance = NULL,
		liability = $2 WHERE id = $1`, card, `{"type":"credit","interestRate":21.5,"lastPaymentAmount":100,
		"lastPaymentDate":"2026-02-20","nextPaymentDueDate":"2026-03-20","minimumPaymentAmount":25.5,"lastStatementBalance":640.12}`)
	stripe := e.fx.Connection(w.a.ID, "stripe", "active")
	acct := e.fx.Account(w.a.ID, stripe, "stripe", "Stripe balance")
	ids := e.fx.Transactions(w.a.ID, stripe, acct, "stripe", []storagetest.Tx{
		{Date: time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), Amount: "250.00", CategoryID: &w.catA},
		{Date: time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), Amount: "-3.1415", Status: domain.TxPending},
	})
	exec(`UPDATE transactions SET fees = 7.55, net_amount = 242.45, fee_type = 'stripe_fee', source = 'ch_1', type = 'charge' WHERE id = $1`, ids[0])
	return w, stripe
}

func TestV1AndV2ReportTheSameFacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w, stripe := parityWorld(t, e)
	key := e.fx.Key(w.a.ID, nil)
	get := func(path string) response {
		t.Helper()
		r := e.get(path, key)
		e.expect(r, http.StatusOK, "")
		return r
	}

	t.Run("accounts and balances", func(t *testing.T) {
		one, two := v1Rows(t, get("/v1/accounts"), ""), byField(t, v2Rows(t, get("/v2/accounts"), "accounts"), "id")
		if len(one) != len(two) {
			t.Fatalf("v1 lists %d accounts, v2 %d", len(one), len(two))
		}
		for _, a := range one {
			b := two[v1Str(t, a["id"])]
			if b == nil {
				t.Fatalf("account %s missing from v2", a["id"])
			}
			sameFacts(t, "account "+v1Str(t, a["id"]), a, b, map[string]string{
				"bankConnectionId": "bankConnectionId", "name": "name", "currency": "currency", "mask": "mask",
				"type": "type", "subtype": "subtype", "balance.current": "currentBalance",
				"balance.available": "availableBalance", "balance.interestRate": "liability.interestRate",
				"payment.lastPaymentAmount": "liability.lastPaymentAmount", "payment.lastPaymentDate": "liability.lastPaymentDate",
				"payment.nextPaymentDueDate": "liability.nextPaymentDueDate", "payment.lastStatementBalance": "liability.lastStatementBalance",
				"payment.minimumPaymentAmount": "liability.minimumPaymentAmount", "payment.nextMonthlyPayment": "liability.nextMonthlyPayment",
			})
			if got, want := v1Str(t, a["provider"]), v1.NewProviderNames(all.NewRegistry().Profiles()).Of(v1Str(t, b["provider"])); got != want {
				t.Errorf("provider %s, v2 says %s", got, want)
			}
		}
	})

	t.Run("transactions, dates and categories", func(t *testing.T) {
		v2Cats := byField(t, v2Rows(t, get("/v2/categories"), "categories"), "id")
		for _, conn := range []uuid.UUID{w.connA1, w.connA2, stripe} {
			q := "bankConnectionId=" + conn.String() + "&startDate=2026-03-01&endDate=2026-03-31"
			r1 := get("/v1/transactions?" + q)
			one := v1Rows(t, r1, "transactions")
			var two []map[string]json.RawMessage
			for _, row := range v2Rows(t, get("/v2/transactions?status=all&"+q), "transactions") {
				if v1Str(t, row["status"]) != domain.TxDeleted {
					two = append(two, row)
				}
			}
			if got, want := v1IDs(t, one), v1IDs(t, two); !slices.Equal(got, want) {
				t.Fatalf("connection %s: v1 lists %v, v2 %v", conn, got, want)
			}
			for i, a := range one {
				b := two[i]
				what := "transaction " + v1Str(t, a["id"])
				sameFacts(t, what, a, b, map[string]string{
					"summary": "summary", "amount": "amount", "currency": "currency", "merchantName": "merchantName",
					"categoryId": "categoryId", "fees": "fees", "feeType": "feeType", "netAmount": "netAmount",
					"subAccount": "subAccount", "source": "source", "accountId": "bankAccountId",
				})
				if pending := v1Str(t, b["status"]) == domain.TxPending; string(a["isPending"]) != map[bool]string{true: "true", false: "false"}[pending] {
					t.Errorf("%s: isPending %s, v2 status %s", what, a["isPending"], b["status"])
				}
				postedAt, postedDate := v1Str(t, a["postedAt"]), v1Str(t, b["postedDate"])
				if (postedAt == "") != (postedDate == "") || postedAt != "" && postedAt[:10] != postedDate {
					t.Errorf("%s: postedAt %q, v2 postedDate %q", what, postedAt, postedDate)
				}
			}
			for _, c := range v1Rows(t, r1, "categories") {
				b := v2Cats[v1Str(t, c["id"])]
				if b == nil {
					t.Fatalf("category %s missing from v2", c["id"])
				}
				sameFacts(t, "category "+v1Str(t, c["id"]), c, b, map[string]string{"name": "name", "group": "group", "description": "description"})
			}
		}
	})

	t.Run("holdings and securities", func(t *testing.T) {
		q := "bankConnectionId=" + w.connA1.String()
		r1, r2 := get("/v1/holdings?"+q), get("/v2/holdings?"+q)
		two := make(map[string]map[string]json.RawMessage)
		for _, h := range v2Rows(t, r2, "holdings") {
			two[v1Str(t, h["accountId"])+":"+v1Str(t, h["securityId"])] = h
		}
		one := v1Rows(t, r1, "holdings")
		if len(one) != len(two) || len(one) == 0 {
			t.Fatalf("v1 %d holdings, v2 %d", len(one), len(two))
		}
		for _, a := range one {
			b := two[v1Str(t, a["id"])]
			if b == nil {
				t.Fatalf("holding %s missing from v2", a["id"])
			}
			sameFacts(t, "holding "+v1Str(t, a["id"]), a, b, map[string]string{
				"accountId": "accountId", "securityId": "securityId", "quantity": "quantity", "costBasis": "costBasis",
				"institutionPrice": "institutionPrice", "institutionValue": "institutionValue", "currency": "currency", "priceAsOf": "priceAsOf",
			})
		}
		secs2 := byField(t, v2Rows(t, r2, "securities"), "id")
		for _, s := range v1Rows(t, r1, "securities") {
			sameFacts(t, "security "+v1Str(t, s["id"]), s, secs2[v1Str(t, s["id"])], map[string]string{"symbol": "symbol", "name": "name", "type": "type"})
		}
	})

	t.Run("investment transactions", func(t *testing.T) {
		q := "bankConnectionId=" + w.connA1.String() + "&startDate=2026-03-01&endDate=2026-03-31"
		one, two := v1Rows(t, get("/v1/investment-transactions?"+q), "investmentTransactions"), v2Rows(t, get("/v2/investment-transactions?"+q), "investmentTransactions")
		if got, want := v1IDs(t, one), v1IDs(t, two); !slices.Equal(got, want) || len(got) == 0 {
			t.Fatalf("v1 %v, v2 %v", got, want)
		}
		for i, a := range one {
			sameFacts(t, "investment transaction "+v1Str(t, a["id"]), a, two[i], map[string]string{
				"accountId": "accountId", "securityId": "securityId", "type": "type", "subtype": "subtype", "date": "date",
				"quantity": "quantity", "price": "price", "amount": "amount", "fees": "fees", "currency": "currency", "description": "description",
			})
		}
	})
}
