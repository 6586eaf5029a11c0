package plaid_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/plaid"
	"github.com/finsync/finsync/resilience"
)

// canned serves fixed bodies by path and records request bodies.
func canned(t *testing.T, bodies map[string]string, status map[string]int) (*httptest.Server, *[]map[string]any) {
	t.Helper()
	var seen []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		seen = append(seen, m)
		if s, ok := status[r.URL.Path]; ok {
			w.WriteHeader(s)
		}
		_, _ = w.Write([]byte(bodies[r.URL.Path]))
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func conn(srv *httptest.Server) providers.Connection {
	return providers.Connection{
		Provider: plaid.Name, BaseURL: srv.URL, InstitutionID: "ins_1",
		Credentials: json.RawMessage(`{"client_id":"cid","secret":"sec","access_token":"access-sandbox-1"}`),
	}
}

const accountsBody = `{"accounts":[
 {"account_id":"chk","name":"Checking","mask":"0000","type":"depository","subtype":"checking","balances":{"available":100.1,"current":110.10,"limit":null,"iso_currency_code":"USD","unofficial_currency_code":null}},
 {"account_id":"cc","name":"Card","mask":"3333","type":"credit","subtype":"credit card","balances":{"available":null,"current":410.23,"limit":2000,"iso_currency_code":"USD"}},
 {"account_id":"stu","name":"Loan","type":"loan","subtype":"student","balances":{"current":65262,"iso_currency_code":"USD"}},
 {"account_id":"mtg","name":"Mortgage","type":"loan","subtype":"mortgage","balances":{"current":56302.06,"iso_currency_code":"USD"}}],
 "item":{"item_id":"it","institution_id":"ins_109508","institution_name":"First Platypus Bank"},"request_id":"r"}`

const liabilitiesBody = `{"liabilities":{
 "credit":[{"account_id":"cc","aprs":[{"apr_percentage":15.24,"apr_type":"purchase_apr","balance_subject_to_apr":1562.32,"interest_charge_amount":130.22}],"is_overdue":false,"last_payment_amount":168.25,"last_payment_date":"2019-05-22","last_statement_balance":1708.77,"minimum_payment_amount":20,"next_payment_due_date":"2020-05-28"}],
 "student":[{"account_id":"stu","loan_name":"Consolidation","loan_status":{"type":"repayment","end_date":"2032-07-28"},"interest_rate_percentage":5.25,"is_overdue":false,"minimum_payment_amount":25,"next_payment_due_date":"2019-05-28","origination_date":"2013-08-15","origination_principal_amount":25000,"outstanding_interest_amount":6227.36,"expected_payoff_date":"2032-07-28","repayment_plan":{"type":"standard","description":"Standard Repayment"},"pslf_status":{"estimated_eligibility_date":"2021-01-01","payments_made":200,"payments_remaining":160},"ytd_interest_paid":280.55,"ytd_principal_paid":271.65}],
 "mortgage":[{"account_id":"mtg","interest_rate":{"percentage":3.99,"type":"fixed"},"loan_type_description":"conventional","maturity_date":"2045-07-31","next_monthly_payment":3141.54,"next_payment_due_date":"2019-11-15","escrow_balance":3141.54,"has_pmi":true,"has_prepayment_penalty":true,"past_due_amount":2304,"property_address":{"city":"Malakoff","country":"US","postal_code":"14236","region":"NY","street":"2992 Cameron Road"}}]}}`

func TestAccountsAndLiabilities(t *testing.T) {
	srv, _ := canned(t, map[string]string{"/accounts/get": accountsBody, "/liabilities/get": liabilitiesBody}, nil)
	set, err := plaid.New(srv.Client()).Accounts(context.Background(), conn(srv))
	if err != nil {
		t.Fatal(err)
	}
	if set.Institution.ID != "ins_109508" || set.Institution.Name != "First Platypus Bank" || len(set.Accounts) != 4 {
		t.Fatalf("set = %+v", set)
	}
	chk, cc, stu, mtg := set.Accounts[0], set.Accounts[1], set.Accounts[2], set.Accounts[3]
	if chk.CurrentBalance.String() != "110.1" || chk.AvailableBalance.String() != "100.1" || chk.Mask != "0000" || chk.Liability != nil {
		t.Errorf("checking = %+v", chk)
	}
	if cc.CreditLimit.String() != "2000" || cc.Liability == nil || cc.Liability.Type != "credit" ||
		cc.Liability.Aprs[0].AprPercentage.String() != "15.24" || cc.Liability.NextPaymentDueDate.String() != "2020-05-28" ||
		cc.Liability.LastStatementBalance.String() != "1708.77" {
		t.Errorf("credit liability = %+v", cc.Liability)
	}
	if l := stu.Liability; l == nil || l.Type != "student" || l.InterestRate.String() != "5.25" || l.LoanStatus.Type != "repayment" ||
		l.RepaymentPlan.Description != "Standard Repayment" || l.PslfStatus.PaymentsRemaining.String() != "160" ||
		l.OriginationDate.String() != "2013-08-15" {
		t.Errorf("student liability = %+v", l)
	}
	if l := mtg.Liability; l == nil || l.Type != "mortgage" || *l.InterestRateType != "fixed" || l.EscrowBalance.String() != "3141.54" ||
		l.PropertyAddress.City != "Malakoff" || !*l.HasPmi || l.MaturityDate.String() != "2045-07-31" {
		t.Errorf("mortgage liability = %+v", l)
	}
}

const syncBody = `{"added":[
 {"transaction_id":"t1","account_id":"chk","amount":12.3,"iso_currency_code":"USD","date":"2026-01-10","authorized_date":"2026-01-09","pending":false,"pending_transaction_id":"p1","merchant_name":"Starbucks","name":"STARBUCKS 123","payment_channel":"in store","personal_finance_category":{"primary":"FOOD_AND_DRINK","detailed":"FOOD_AND_DRINK_COFFEE","confidence_level":"HIGH"}},
 {"transaction_id":"t2","account_id":"chk","amount":-2500.005,"iso_currency_code":null,"unofficial_currency_code":"DOGE","date":"2026-01-11","pending":true,"name":"PAYROLL","merchant_name":null}],
 "modified":[],"removed":[{"transaction_id":"p1","account_id":"chk"}],"next_cursor":"c2","has_more":true}`

func TestSyncMapping(t *testing.T) {
	srv, seen := canned(t, map[string]string{"/transactions/sync": syncBody}, nil)
	page, err := plaid.New(srv.Client()).Transactions(context.Background(), conn(srv), providers.TransactionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if (*seen)[0]["count"] != float64(500) || (*seen)[0]["client_id"] != "cid" || (*seen)[0]["cursor"] != nil {
		t.Errorf("request = %v", (*seen)[0])
	}
	if len(page.Upserts) != 2 || len(page.Removed) != 1 || page.Removed[0] != "p1" || page.Done {
		t.Fatalf("page = %+v", page)
	}
	t1, t2 := page.Upserts[0], page.Upserts[1]
	if t1.Amount.String() != "-12.3" || t1.Status != domain.TxPosted || t1.PostedDate.String() != "2026-01-10" ||
		t1.AuthorizedDate.String() != "2026-01-09" || t1.Summary != "Starbucks" || *t1.PendingProviderID != "p1" {
		t.Errorf("t1 = %+v", t1)
	}
	if c := t1.Category; c == nil || c.ProviderID != "FOOD_AND_DRINK_COFFEE" || c.Name != "Coffee" || c.Group != "FOOD_AND_DRINK" {
		t.Errorf("category = %+v", c)
	}
	if t2.Amount.String() != "2500.005" || t2.Status != domain.TxPending || t2.PostedDate != nil ||
		t2.AuthorizedDate.String() != "2026-01-11" || t2.Currency != "DOGE" || t2.Summary != "PAYROLL" {
		t.Errorf("t2 = %+v", t2)
	}
	// The next call continues from c2 and keeps the loop start.
	_, err = plaid.New(srv.Client()).Transactions(context.Background(), conn(srv), providers.TransactionRequest{Cursor: page.Next})
	if err != nil || (*seen)[1]["cursor"] != "c2" {
		t.Fatalf("second call cursor = %v (%v)", (*seen)[1]["cursor"], err)
	}
}

func TestMutationRestartsFromLoopStart(t *testing.T) {
	mutation := `{"error_type":"TRANSACTIONS_ERROR","error_code":"TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION","error_message":"x","request_id":"r"}`
	done := `{"added":[],"modified":[],"removed":[],"next_cursor":"end","has_more":false}`
	body := map[string]string{"/transactions/sync": syncBody}
	status := map[string]int{}
	srv, seen := canned(t, body, status)
	p := plaid.New(srv.Client())
	ctx := context.Background()
	first, _ := p.Transactions(ctx, conn(srv), providers.TransactionRequest{})
	body["/transactions/sync"], status["/transactions/sync"] = mutation, 400
	restart, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Cursor: first.Next})
	if err != nil || len(restart.Upserts) != 0 || restart.Done {
		t.Fatalf("restart = %+v, %v", restart, err)
	}
	body["/transactions/sync"] = done
	delete(status, "/transactions/sync")
	last, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Cursor: restart.Next})
	if err != nil || !last.Done {
		t.Fatalf("last = %+v, %v", last, err)
	}
	if (*seen)[2]["cursor"] != nil {
		t.Errorf("restart sent cursor %v, want the loop start (none)", (*seen)[2]["cursor"])
	}
}

func TestClassification(t *testing.T) {
	tests := []struct {
		status int
		body   string
		class  resilience.Class
		inst   bool
	}{
		{400, `{"error_type":"ITEM_ERROR","error_code":"ITEM_LOGIN_REQUIRED"}`, resilience.ReauthRequired, false},
		{400, `{"error_type":"INVALID_INPUT","error_code":"INVALID_ACCESS_TOKEN","error_code_reason":"OAUTH_CONSENT_EXPIRED"}`, resilience.ReauthRequired, false},
		{400, `{"error_type":"INSTITUTION_ERROR","error_code":"INSTITUTION_DOWN"}`, resilience.Unavailable, true},
		{500, `{"error_type":"API_ERROR","error_code":"INTERNAL_SERVER_ERROR"}`, resilience.Unavailable, false},
		{429, `{"error_type":"RATE_LIMIT_EXCEEDED","error_code":"RATE_LIMIT"}`, resilience.RateLimited, false},
		{400, `{"error_type":"INVALID_INPUT","error_code":"INVALID_API_KEYS"}`, resilience.Permanent, false},
		{502, `<html>bad gateway</html>`, resilience.Unavailable, false},
		{200, `{"accounts":[`, resilience.Unavailable, false},
	}
	for _, tt := range tests {
		srv, _ := canned(t, map[string]string{"/accounts/get": tt.body}, map[string]int{"/accounts/get": tt.status})
		_, err := plaid.New(srv.Client()).Accounts(context.Background(), conn(srv))
		pe := resilience.AsError(err)
		if pe == nil || pe.Class != tt.class || (pe.InstitutionID != "") != tt.inst {
			t.Errorf("%d %s: got %v", tt.status, tt.body, err)
		}
		if tt.class == resilience.RateLimited && pe.RetryAfter <= 0 {
			t.Errorf("429 without RetryAfter")
		}
	}
}

func TestHumanise(t *testing.T) {
	for in, want := range map[string]string{"FOOD_AND_DRINK": "Food and drink", "GAS": "Gas", "": ""} {
		if got := plaid.Humanise(in); got != want {
			t.Errorf("Humanise(%q) = %q, want %q", in, got, want)
		}
	}
}
