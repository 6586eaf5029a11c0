package mercurysim

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// mercuryTxList is Mercury's per-account transactions response.
type mercuryTxList struct {
	Total        int              `json:"total"`
	Transactions []map[string]any `json:"transactions"`
}

func TestMercuryAccountsAndPaging(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	c := creds(t, "ivy")
	auth := map[string]string{"Authorization": "Bearer " + c["token"]}
	var accts struct {
		Accounts []map[string]any `json:"accounts"`
	}
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/accounts", nil, auth, &accts)
	if len(accts.Accounts) != 2 || accts.Accounts[0]["kind"] != "checking" {
		t.Fatalf("accounts = %v", accts)
	}
	var credit struct {
		Accounts []map[string]any `json:"accounts"`
	}
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/credit", nil, auth, &credit)
	if len(credit.Accounts) != 1 {
		t.Fatalf("credit = %v", credit)
	}
	id := accts.Accounts[0]["id"].(string)
	base := srv.URL + "/api/v1/account/" + id + "/transactions?start=2025-12-01"
	var all mercuryTxList
	simtest.DoJSON(t, http.MethodGet, base, nil, auth, &all)
	if all.Total != 100 || len(all.Transactions) != 100 {
		t.Fatalf("total %d, rows %d", all.Total, len(all.Transactions))
	}
	for k := 1; k < len(all.Transactions); k++ {
		if all.Transactions[k]["createdAt"].(string) > all.Transactions[k-1]["createdAt"].(string) {
			t.Fatal("not newest first")
		}
	}
	var page mercuryTxList
	simtest.DoJSON(t, http.MethodGet, base+"&limit=7&offset=14", nil, auth, &page)
	if page.Total != 100 || len(page.Transactions) != 7 || page.Transactions[0]["id"] != all.Transactions[14]["id"] {
		t.Fatalf("offset page: total %d rows %d", page.Total, len(page.Transactions))
	}
	var pending mercuryTxList
	simtest.DoJSON(t, http.MethodGet, base+"&status=pending", nil, auth, &pending)
	if pending.Total == 0 || pending.Total >= all.Total {
		t.Fatalf("pending total %d", pending.Total)
	}
	for _, tx := range pending.Transactions {
		if tx["status"] != "pending" || tx["postedAt"] != nil {
			t.Fatalf("status filter leaked %v", tx)
		}
	}
	var def mercuryTxList
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/account/"+id+"/transactions", nil, auth, &def)
	if def.Total >= all.Total || def.Total == 0 {
		t.Fatalf("default window (30 days) total %d of %d", def.Total, all.Total)
	}
	for _, bad := range []string{"&limit=0", "&order=sideways", "&start=yesterday", "&status=lost"} {
		if resp := simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/account/"+id+"/transactions?x=1"+bad, nil, auth, nil); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %d", bad, resp.StatusCode)
		}
	}
	if resp := simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/account/00000000-0000-4000-8000-000000000000/transactions", nil, auth, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown account: %d", resp.StatusCode)
	}
}

func TestMercuryAdvanceAndOrgFeed(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "jack")
	auth := map[string]string{"Authorization": "Bearer " + c["token"]}
	feed := func() []map[string]any {
		var out []map[string]any
		after := ""
		for {
			var page struct {
				Transactions []map[string]any `json:"transactions"`
			}
			u := srv.URL + "/api/v1/transactions?limit=40"
			if after != "" {
				u += "&start_after=" + url.QueryEscape(after)
			}
			simtest.DoJSON(t, http.MethodGet, u, nil, auth, &page)
			out = append(out, page.Transactions...)
			if len(page.Transactions) < 40 {
				return out
			}
			after = page.Transactions[len(page.Transactions)-1]["id"].(string)
		}
	}
	before := feed()
	if len(before) != 300 {
		t.Fatalf("org feed has %d rows", len(before))
	}
	wasPending := map[string]bool{}
	for _, tx := range before {
		if tx["status"] == "pending" {
			wasPending[tx["id"].(string)] = true
		}
	}
	if err := s.Advance(4); err != nil {
		t.Fatal(err)
	}
	after := feed()
	if len(after) <= len(before) {
		t.Fatalf("no new rows after advance: %d", len(after))
	}
	sent, cancelled := 0, 0
	for _, tx := range after {
		if !wasPending[tx["id"].(string)] {
			continue
		}
		switch tx["status"] {
		case "sent":
			if tx["postedAt"] == nil {
				t.Fatalf("sent without postedAt: %v", tx)
			}
			sent++
		case "cancelled":
			cancelled++
		default:
			t.Fatalf("still %v after 4 days", tx["status"])
		}
	}
	if sent == 0 || sent+cancelled != len(wasPending) {
		t.Fatalf("sent %d cancelled %d of %d pending", sent, cancelled, len(wasPending))
	}
	var one map[string]any
	tx := after[0]
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v1/account/"+tx["accountId"].(string)+"/transaction/"+tx["id"].(string), nil, auth, &one)
	if one["id"] != tx["id"] {
		t.Fatalf("single transaction = %v", one)
	}
}

func TestMercuryAuth(t *testing.T) {
	_, srv := newTestSim(t, sim.Options{})
	c := creds(t, "kim")
	tests := []struct {
		name   string
		setup  func(*http.Request)
		status int
	}{
		{"missing", func(*http.Request) {}, http.StatusUnauthorized},
		{"malformed", func(r *http.Request) { r.Header.Set("Authorization", "Bearer mercury_token") }, http.StatusUnauthorized},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+c["token"]) }, http.StatusOK},
		{"basic", func(r *http.Request) { r.SetBasicAuth(c["token"], "") }, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/categories", nil)
			tt.setup(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}
