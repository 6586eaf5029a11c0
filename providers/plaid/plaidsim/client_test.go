package plaidsim

import (
	"context"
	"net/http"
	"testing"

	"github.com/plaid/plaid-go/v20/plaid"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// plaidClient returns the official Plaid client pointed at the simulator.
func plaidClient(url string, c map[string]string) *plaid.APIClient {
	cfg := plaid.NewConfiguration()
	cfg.UseEnvironment(plaid.Environment(url))
	cfg.AddDefaultHeader("PLAID-CLIENT-ID", c["client_id"])
	cfg.AddDefaultHeader("PLAID-SECRET", c["secret"])
	return plaid.NewAPIClient(cfg)
}

// plaidSyncAll runs a /transactions/sync loop from cursor with the official
// client and returns the collected changes and the final cursor.
func plaidSyncAll(t *testing.T, cl *plaid.APIClient, token, cursor string, count int32) (added, modified []plaid.Transaction, removed []plaid.RemovedTransaction, next string) {
	t.Helper()
	ctx := context.Background()
	for pages := 0; ; pages++ {
		req := plaid.NewTransactionsSyncRequest(token)
		req.SetCount(count)
		if cursor != "" {
			req.SetCursor(cursor)
		}
		resp, _, err := cl.PlaidApi.TransactionsSync(ctx).TransactionsSyncRequest(*req).Execute()
		if err != nil {
			t.Fatalf("transactions/sync page %d: %v", pages, err)
		}
		added = append(added, resp.GetAdded()...)
		modified = append(modified, resp.GetModified()...)
		removed = append(removed, resp.GetRemoved()...)
		cursor = resp.GetNextCursor()
		if !resp.GetHasMore() {
			return added, modified, removed, cursor
		}
		if pages > 100000 {
			t.Fatal("sync loop does not end")
		}
	}
}

func TestPlaidOfficialClient(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "alice")
	cl := plaidClient(srv.URL, c)
	ctx := context.Background()

	acc, _, err := cl.PlaidApi.AccountsGet(ctx).AccountsGetRequest(*plaid.NewAccountsGetRequest(c["access_token"])).Execute()
	if err != nil {
		t.Fatalf("accounts/get: %v", err)
	}
	types := map[string]int{}
	for _, a := range acc.GetAccounts() {
		types[string(a.GetType())]++
	}
	if len(acc.GetAccounts()) != 6 || types["depository"] != 2 || types["credit"] != 1 || types["investment"] != 1 || types["loan"] != 2 {
		t.Fatalf("accounts = %v", types)
	}
	if acc.Item.GetInstitutionId() == "" {
		t.Fatal("item without institution_id")
	}

	added, _, removed, cursor := plaidSyncAll(t, cl, c["access_token"], "", 50)
	if len(added) < 250 || len(added) > 300 || len(removed) != 0 {
		t.Fatalf("initial sync: %d added, %d removed", len(added), len(removed))
	}
	ids := map[string]bool{}
	pending := 0
	for _, tx := range added {
		if ids[tx.TransactionId] {
			t.Fatalf("duplicate id %s", tx.TransactionId)
		}
		ids[tx.TransactionId] = true
		if tx.Pending {
			pending++
		}
		if tx.PersonalFinanceCategory.Get() == nil || tx.PersonalFinanceCategory.Get().Primary == "" {
			t.Fatalf("transaction %s without personal_finance_category", tx.TransactionId)
		}
	}
	if pending == 0 {
		t.Fatal("no pending transactions near today")
	}

	again, _, _, cursor2 := plaidSyncAll(t, cl, c["access_token"], cursor, 100)
	if len(again) != 0 || cursor2 != cursor {
		t.Fatalf("sync without changes: %d added, cursor changed %v", len(again), cursor2 != cursor)
	}

	if err := s.Advance(4); err != nil {
		t.Fatal(err)
	}
	added2, _, removed2, _ := plaidSyncAll(t, cl, c["access_token"], cursor, 100)
	if len(added2) == 0 || len(removed2) == 0 {
		t.Fatalf("after advance: %d added, %d removed", len(added2), len(removed2))
	}
	linked := 0
	for _, tx := range added2 {
		if p := tx.PendingTransactionId.Get(); p != nil && ids[*p] {
			linked++
		}
	}
	if linked == 0 {
		t.Fatal("no posted transaction links its pending predecessor")
	}

	h, _, err := cl.PlaidApi.InvestmentsHoldingsGet(ctx).InvestmentsHoldingsGetRequest(*plaid.NewInvestmentsHoldingsGetRequest(c["access_token"])).Execute()
	if err != nil {
		t.Fatalf("investments/holdings/get: %v", err)
	}
	if len(h.GetHoldings()) == 0 || len(h.GetSecurities()) != len(h.GetHoldings()) {
		t.Fatalf("holdings %d, securities %d", len(h.GetHoldings()), len(h.GetSecurities()))
	}
}

func TestPlaidAuthErrors(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	c := creds(t, "bob")
	tests := []struct {
		name string
		body map[string]any
		code string
	}{
		{"missing keys", map[string]any{"access_token": c["access_token"]}, "MISSING_FIELDS"},
		{"bad keys", map[string]any{"client_id": "x", "secret": "y", "access_token": c["access_token"]}, "INVALID_API_KEYS"},
		{"bad token", map[string]any{"client_id": c["client_id"], "secret": c["secret"], "access_token": "public-sandbox-123"}, "INVALID_ACCESS_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e map[string]any
			resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/accounts/get", tt.body, nil, &e)
			if resp.StatusCode != http.StatusBadRequest || e["error_code"] != tt.code {
				t.Fatalf("status %d, body %v", resp.StatusCode, e)
			}
		})
	}
}

func TestPlaidOfficialClientOtherProducts(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	c := creds(t, "products")
	cl := plaidClient(srv.URL, c)
	ctx := context.Background()
	tok := c["access_token"]

	item, _, err := cl.PlaidApi.ItemGet(ctx).ItemGetRequest(*plaid.NewItemGetRequest(tok)).Execute()
	if err != nil {
		t.Fatalf("item/get: %v", err)
	}
	if item.Item.GetInstitutionId() == "" || len(item.Item.GetBilledProducts()) == 0 {
		t.Fatalf("item = %+v", item.Item)
	}
	liab, _, err := cl.PlaidApi.LiabilitiesGet(ctx).LiabilitiesGetRequest(*plaid.NewLiabilitiesGetRequest(tok)).Execute()
	if err != nil {
		t.Fatalf("liabilities/get: %v", err)
	}
	l := liab.GetLiabilities()
	if len(l.GetCredit()) != 1 || len(l.GetStudent()) != 1 || len(l.GetMortgage()) != 1 {
		t.Fatalf("liabilities = %+v", l)
	}
	if l.GetCredit()[0].Aprs[0].AprPercentage == 0 || l.GetMortgage()[0].InterestRate.GetPercentage() == 0 {
		t.Fatal("liability details missing")
	}
	req := plaid.NewInvestmentsTransactionsGetRequest(tok, "2025-01-01", "2026-03-10")
	opts := plaid.NewInvestmentsTransactionsGetRequestOptions()
	opts.SetCount(10)
	var got int
	for offset := int32(0); ; offset += 10 {
		opts.SetOffset(offset)
		req.SetOptions(*opts)
		inv, _, err := cl.PlaidApi.InvestmentsTransactionsGet(ctx).InvestmentsTransactionsGetRequest(*req).Execute()
		if err != nil {
			t.Fatalf("investments/transactions/get: %v", err)
		}
		got += len(inv.GetInvestmentTransactions())
		if int(offset)+10 >= int(inv.GetTotalInvestmentTransactions()) {
			if got != int(inv.GetTotalInvestmentTransactions()) || got == 0 {
				t.Fatalf("paged %d of %d", got, inv.GetTotalInvestmentTransactions())
			}
			break
		}
	}
	bal, _, err := cl.PlaidApi.AccountsBalanceGet(ctx).AccountsBalanceGetRequest(*plaid.NewAccountsBalanceGetRequest(tok)).Execute()
	if err != nil || len(bal.GetAccounts()) != 6 {
		t.Fatalf("accounts/balance/get: %v", err)
	}
}
