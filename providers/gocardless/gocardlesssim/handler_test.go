package gocardlesssim

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// gcLogin obtains GoCardless tokens for credentials c.
func gcLogin(t *testing.T, url string, c map[string]string) (access, refresh string) {
	t.Helper()
	var tok map[string]any
	resp := simtest.DoJSON(t, http.MethodPost, url+"/api/v2/token/new/", map[string]string{"secret_id": c["secret_id"], "secret_key": c["secret_key"]}, nil, &tok)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token/new: %d %v", resp.StatusCode, tok)
	}
	return tok["access"].(string), tok["refresh"].(string)
}

// gcRequisition is the part of a requisition the tests read.
type gcRequisitionBody struct {
	Status        string   `json:"status"`
	InstitutionID string   `json:"institution_id"`
	Accounts      []string `json:"accounts"`
}

// gcTxBody is GoCardless's transactions response.
type gcTxBody struct {
	Transactions struct {
		Booked  []map[string]any `json:"booked"`
		Pending []map[string]any `json:"pending"`
	} `json:"transactions"`
}

func TestGoCardlessFlow(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "carol")
	access, _ := gcLogin(t, srv.URL, c)
	auth := map[string]string{"Authorization": "Bearer " + access}
	var req gcRequisitionBody
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/requisitions/"+c["requisition_id"]+"/", nil, auth, &req)
	if req.Status != "LN" || len(req.Accounts) != 3 || req.InstitutionID == "" {
		t.Fatalf("requisition = %+v", req)
	}
	base := srv.URL + "/api/v2/accounts/" + req.Accounts[0]
	var det map[string]map[string]any
	simtest.DoJSON(t, http.MethodGet, base+"/details/", nil, auth, &det)
	if det["account"]["cashAccountType"] != "CACC" {
		t.Fatalf("details = %v", det)
	}
	var bal map[string][]map[string]any
	simtest.DoJSON(t, http.MethodGet, base+"/balances/", nil, auth, &bal)
	if len(bal["balances"]) == 0 {
		t.Fatalf("balances = %v", bal)
	}
	var tx gcTxBody
	resp := simtest.DoJSON(t, http.MethodGet, base+"/transactions/", nil, auth, &tx)
	if len(tx.Transactions.Booked) < 50 || len(tx.Transactions.Pending) == 0 {
		t.Fatalf("booked %d pending %d", len(tx.Transactions.Booked), len(tx.Transactions.Pending))
	}
	if got := resp.Header.Get("HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING"); got != "3" {
		t.Fatalf("remaining = %q", got)
	}
	if _, ok := tx.Transactions.Booked[0]["transactionAmount"].(map[string]any)["amount"].(string); !ok {
		t.Fatal("amount is not a string")
	}
	pendingIDs := map[string]bool{}
	for _, p := range tx.Transactions.Pending {
		pendingIDs[fmt.Sprint(p)] = true
	}
	if err := s.Advance(5); err != nil {
		t.Fatal(err)
	}
	var tx2 gcTxBody
	simtest.DoJSON(t, http.MethodGet, base+"/transactions/", nil, auth, &tx2)
	for _, p := range tx2.Transactions.Pending {
		if pendingIDs[fmt.Sprint(p)] {
			t.Fatalf("pending row %v still pending after 5 days", p)
		}
	}
	if len(tx2.Transactions.Booked) <= len(tx.Transactions.Booked) {
		t.Fatalf("booked did not grow: %d -> %d", len(tx.Transactions.Booked), len(tx2.Transactions.Booked))
	}
}

func TestGoCardlessQuota(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "dave")
	access, _ := gcLogin(t, srv.URL, c)
	auth := map[string]string{"Authorization": "Bearer " + access}
	var req gcRequisitionBody
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/requisitions/"+c["requisition_id"]+"/", nil, auth, &req)
	url := srv.URL + "/api/v2/accounts/" + req.Accounts[1] + "/balances/"
	for n := 0; n < 4; n++ {
		if resp := simtest.DoJSON(t, http.MethodGet, url, nil, auth, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d", n, resp.StatusCode)
		}
	}
	var e map[string]any
	resp := simtest.DoJSON(t, http.MethodGet, url, nil, auth, &e)
	if resp.StatusCode != http.StatusTooManyRequests || e["type"] != "RateLimitError" || resp.Header.Get("HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING") != "0" || resp.Header.Get("HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_RESET") == "" {
		t.Fatalf("5th call: %d %v %v", resp.StatusCode, e, resp.Header)
	}
	// Other kinds keep their own quota; failed calls do not count.
	bad := srv.URL + "/api/v2/accounts/" + req.Accounts[1] + "/transactions/?date_from=bad"
	if resp := simtest.DoJSON(t, http.MethodGet, bad, nil, auth, nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad date: %d", resp.StatusCode)
	}
	tx := srv.URL + "/api/v2/accounts/" + req.Accounts[1] + "/transactions/"
	if resp := simtest.DoJSON(t, http.MethodGet, tx, nil, auth, nil); resp.Header.Get("HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING") != "3" {
		t.Fatalf("transactions remaining = %q", resp.Header.Get("HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING"))
	}
	if err := s.Advance(1); err != nil {
		t.Fatal(err)
	}
	if resp := simtest.DoJSON(t, http.MethodGet, url, nil, auth, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the day reset: %d", resp.StatusCode)
	}
}

func TestGoCardlessValidation(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	c := creds(t, "erin")
	access, _ := gcLogin(t, srv.URL, c)
	auth := map[string]string{"Authorization": "Bearer " + access}
	var req gcRequisitionBody
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/requisitions/"+c["requisition_id"]+"/", nil, auth, &req)
	base := srv.URL + "/api/v2/accounts/" + req.Accounts[0] + "/transactions/"
	future := s.DateOf(3).Format(time.DateOnly)
	tests := []struct {
		name, query string
		field       string
	}{
		{"bad format", "?date_from=2026-13-01", "date_from"},
		{"future", "?date_to=" + future, "date_to"},
		{"reversed", "?date_from=2026-03-05&date_to=2026-03-01", "summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e map[string]any
			resp := simtest.DoJSON(t, http.MethodGet, base+tt.query, nil, auth, &e)
			if resp.StatusCode != http.StatusBadRequest || e[tt.field] == nil {
				t.Fatalf("%d %v", resp.StatusCode, e)
			}
		})
	}
	var tx gcTxBody
	simtest.DoJSON(t, http.MethodGet, base+"?date_from=2026-03-01&date_to=2026-03-03", nil, auth, &tx)
	for _, b := range tx.Transactions.Booked {
		if d := b["bookingDate"].(string); d < "2026-03-01" || d > "2026-03-03" {
			t.Fatalf("booking date %s outside the range", d)
		}
	}
}

func TestGoCardlessAuth(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clock := &now
	_, srv := newTestSim(t, sim.Options{AccessTokenTTL: time.Minute, Now: func() time.Time { return *clock }})
	c := creds(t, "frank")
	var e map[string]any
	resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/api/v2/token/new/", map[string]string{"secret_id": "x", "secret_key": "y"}, nil, &e)
	if resp.StatusCode != http.StatusUnauthorized || e["summary"] != "Authentication failed" {
		t.Fatalf("bad secrets: %d %v", resp.StatusCode, e)
	}
	access, refresh := gcLogin(t, srv.URL, c)
	url := srv.URL + "/api/v2/requisitions/" + c["requisition_id"] + "/"
	if resp := simtest.DoJSON(t, http.MethodGet, url, nil, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	*clock = now.Add(2 * time.Minute)
	if resp := simtest.DoJSON(t, http.MethodGet, url, nil, map[string]string{"Authorization": "Bearer " + access}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired token: %d", resp.StatusCode)
	}
	var tok map[string]any
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/api/v2/token/refresh/", map[string]string{"refresh": refresh}, nil, &tok)
	fresh, _ := tok["access"].(string)
	if resp := simtest.DoJSON(t, http.MethodGet, url, nil, map[string]string{"Authorization": "Bearer " + fresh}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("refreshed token: %d", resp.StatusCode)
	}
	if resp := simtest.DoJSON(t, http.MethodGet, url, nil, map[string]string{"Authorization": "Bearer " + refresh}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("refresh token used as access: %d", resp.StatusCode)
	}
}

func TestGoCardlessDuplicateRowsWithoutIDs(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	// Find a requisition at a bank that sends no ids.
	var c map[string]string
	for n := 0; ; n++ {
		c = creds(t, fmt.Sprintf("nodup-%d", n))
		if newServer(s).gcConnFor(c["requisition_id"]).bank.id == "NORDEA_NDEAFIHH" {
			break
		}
	}
	access, _ := gcLogin(t, srv.URL, c)
	auth := map[string]string{"Authorization": "Bearer " + access}
	var req gcRequisitionBody
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/requisitions/"+c["requisition_id"]+"/", nil, auth, &req)
	dups := 0
	for _, acct := range req.Accounts {
		var tx gcTxBody
		simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/accounts/"+acct+"/transactions/", nil, auth, &tx)
		seen := map[string]int{}
		for _, b := range tx.Transactions.Booked {
			if b["transactionId"] != nil || b["internalTransactionId"] != nil {
				t.Fatalf("row with an id at a bank without ids: %v", b)
			}
			seen[fmt.Sprint(b)]++
		}
		for _, n := range seen {
			if n > 1 {
				dups++
			}
		}
	}
	if dups == 0 {
		t.Fatal("no identical rows on the same day")
	}
}

func TestInstitutions(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	g := creds(t, "inst")
	access, _ := gcLogin(t, srv.URL, g)
	bank := newServer(s).gcConnFor(g["requisition_id"]).bank
	var inst map[string]any
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/api/v2/institutions/"+bank.id+"/", nil, map[string]string{"Authorization": "Bearer " + access}, &inst)
	if inst["name"] != bank.name || inst["logo"] == nil {
		t.Fatalf("gocardless institution = %v", inst)
	}
}
