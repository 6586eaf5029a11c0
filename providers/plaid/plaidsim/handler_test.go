package plaidsim

import (
	"net/http"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// plaidBody returns a request body with the credentials of c plus extra
// fields.
func plaidBody(c map[string]string, extra map[string]any) map[string]any {
	b := map[string]any{"client_id": c["client_id"], "secret": c["secret"], "access_token": c["access_token"]}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// syncResp is the part of a /transactions/sync response the tests read.
type syncResp struct {
	Added      []map[string]any `json:"added"`
	Modified   []map[string]any `json:"modified"`
	Removed    []map[string]any `json:"removed"`
	NextCursor string           `json:"next_cursor"`
	HasMore    bool             `json:"has_more"`
	ErrorCode  string           `json:"error_code"`
	Status     string           `json:"transactions_update_status"`
}

func TestPlaidSyncMutationDuringPagination(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "mut")
	var p1 syncResp
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 10}), nil, &p1)
	if !p1.HasMore || p1.Status != "HISTORICAL_UPDATE_COMPLETE" {
		t.Fatalf("first page: %+v", p1)
	}
	// An injected mutation answers once.
	if err := s.SetFault(sim.Fault{Provider: Name, Mode: sim.FaultMutation}); err != nil {
		t.Fatal(err)
	}
	var e syncResp
	resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 10, "cursor": p1.NextCursor}), nil, &e)
	if resp.StatusCode != http.StatusBadRequest || e.ErrorCode != "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION" {
		t.Fatalf("injected mutation: %d %+v", resp.StatusCode, e)
	}
	var p2 syncResp
	if resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 10, "cursor": p1.NextCursor}), nil, &p2); resp.StatusCode != http.StatusOK {
		t.Fatalf("retry after the injected mutation: %d", resp.StatusCode)
	}
	// A real mutation: the clock moves mid-loop.
	if err := s.Advance(1); err != nil {
		t.Fatal(err)
	}
	resp = simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 10, "cursor": p2.NextCursor}), nil, &e)
	if resp.StatusCode != http.StatusBadRequest || e.ErrorCode != "TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION" {
		t.Fatalf("advance mid-loop: %d %+v", resp.StatusCode, e)
	}
	var restart syncResp
	if resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 500}), nil, &restart); resp.StatusCode != http.StatusOK || len(restart.Added) == 0 {
		t.Fatalf("restart from the loop's first cursor: %d", resp.StatusCode)
	}
}

func TestPlaidSyncPerAccountAndModified(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "stream")
	var acc struct {
		Accounts []map[string]any `json:"accounts"`
	}
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/accounts/get", plaidBody(c, nil), nil, &acc)
	savings := acc.Accounts[plaidSavings]["account_id"].(string)
	var r syncResp
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 500, "options": map[string]any{"account_id": savings, "personal_finance_category_version": "v2"}}), nil, &r)
	if len(r.Added) < 90 || len(r.Added) > 100 {
		t.Fatalf("savings stream has %d rows", len(r.Added))
	}
	for _, tx := range r.Added {
		if tx["account_id"] != savings || tx["personal_finance_category"].(map[string]any)["version"] != "v2" {
			t.Fatalf("row %v", tx)
		}
	}
	// A cursor of one stream is not valid for the whole item.
	var e syncResp
	if resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"cursor": r.NextCursor}), nil, &e); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("foreign cursor accepted: %d", resp.StatusCode)
	}
	var all syncResp
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 500}), nil, &all)
	cursor := all.NextCursor
	modified := 0
	for day := 0; day < 10; day++ {
		resp, err := http.Post(srv.URL+"/_sim/advance", "application/json", strings.NewReader(`{"days":1}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var inc syncResp
		simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"count": 500, "cursor": cursor}), nil, &inc)
		if inc.HasMore {
			t.Fatal("incremental page unexpectedly large")
		}
		modified += len(inc.Modified)
		cursor = inc.NextCursor
	}
	if modified == 0 {
		t.Fatal("no modified transactions over 10 days")
	}
	if s.State().Day != 10 {
		t.Fatalf("clock = %d", s.State().Day)
	}
}

func TestPlaidLiabilitiesItemInvestments(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	c := creds(t, "liab")
	var l struct {
		Liabilities map[string][]map[string]any `json:"liabilities"`
		Accounts    []map[string]any            `json:"accounts"`
	}
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/liabilities/get", plaidBody(c, nil), nil, &l)
	for _, k := range []string{"credit", "student", "mortgage"} {
		if len(l.Liabilities[k]) != 1 {
			t.Fatalf("liabilities %s = %v", k, l.Liabilities[k])
		}
	}
	if len(l.Accounts) != 3 {
		t.Fatalf("liability accounts = %d", len(l.Accounts))
	}
	var it struct {
		Item map[string]any `json:"item"`
	}
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/item/get", plaidBody(c, nil), nil, &it)
	if it.Item["institution_id"] == nil || !contains(it.Item["products"].([]any), "investments") {
		t.Fatalf("item = %v", it.Item)
	}
	var inv struct {
		Transactions []map[string]any `json:"investment_transactions"`
		Total        int              `json:"total_investment_transactions"`
	}
	body := plaidBody(c, map[string]any{"start_date": "2025-01-01", "end_date": "2026-03-10", "options": map[string]any{"count": 7, "offset": 21}})
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/investments/transactions/get", body, nil, &inv)
	if inv.Total != 30 || len(inv.Transactions) != 7 {
		t.Fatalf("investment transactions: total %d, page %d", inv.Total, len(inv.Transactions))
	}
	var e map[string]any
	if resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/investments/transactions/get", plaidBody(c, nil), nil, &e); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("missing dates: %d", resp.StatusCode)
	}
}

// contains reports whether list holds v.
func contains(list []any, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestPlaidSyncNowCursor(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "now")
	var r syncResp
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"cursor": "now"}), nil, &r)
	if len(r.Added) != 0 || r.HasMore || r.NextCursor == "" {
		t.Fatalf("now: %+v", r)
	}
	if err := s.Advance(1); err != nil {
		t.Fatal(err)
	}
	var inc syncResp
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(c, map[string]any{"cursor": r.NextCursor}), nil, &inc)
	if len(inc.Added) == 0 {
		t.Fatal("no changes after the now cursor and an advance")
	}
	for _, tx := range inc.Added {
		if tx["date"].(string) < "2026-03-06" {
			t.Fatalf("old transaction %v after a now cursor", tx["date"])
		}
	}
}

func TestInstitutionGetByID(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	p := creds(t, "inst")
	it := (&server{h: sim.New(sim.Options{Seed: 42, Start: simtest.Start})}).plaidItemFor(p["access_token"])
	var pi struct {
		Institution map[string]any `json:"institution"`
	}
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/institutions/get_by_id", map[string]any{"client_id": p["client_id"], "secret": p["secret"], "institution_id": it.institutionID, "country_codes": []string{"US"}}, nil, &pi)
	if pi.Institution["name"] != it.institutionName {
		t.Fatalf("plaid institution = %v", pi)
	}
}
