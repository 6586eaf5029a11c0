package stripe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/stripe"
	"github.com/finsync/finsync/resilience"
)

func TestFromMinor(t *testing.T) {
	tests := []struct {
		amount   int64
		currency string
		want     string
	}{
		{-1234, "usd", "-12.34"},
		{500, "JPY", "500"},
		{12345, "kwd", "12.345"},
		{-5, "bhd", "-0.005"},
		{100000, "isk", "1000"},
		{1, "eur", "0.01"},
	}
	for _, tt := range tests {
		if got := stripe.FromMinor(tt.amount, tt.currency).String(); got != tt.want {
			t.Errorf("FromMinor(%d, %s) = %s, want %s", tt.amount, tt.currency, got, tt.want)
		}
	}
}

type fakeStripe struct {
	mu      sync.Mutex
	queries []url.Values
	gets    []string
	headers http.Header
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.headers = r.Header.Clone()
	switch {
	case r.URL.Path == "/v1/balance":
		_, _ = w.Write([]byte(`{"object":"balance","available":[{"amount":10050,"currency":"usd"},{"amount":700,"currency":"jpy"}],"pending":[{"amount":-50,"currency":"usd"}]}`))
	case r.URL.Path == "/v1/balance_transactions":
		f.queries = append(f.queries, r.URL.Query())
		if r.URL.Query().Get("starting_after") == "" {
			_, _ = w.Write([]byte(`{"object":"list","has_more":true,"data":[
			 {"id":"txn_2","amount":10000,"fee":320,"fee_details":[{"amount":320,"type":"stripe_fee"}],"net":9680,"currency":"usd","type":"charge","reporting_category":"charge","description":"Order 7","created":1768435200,"available_on":1768608000,"status":"pending"}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","has_more":false,"data":[
		 {"id":"txn_1","amount":-5000,"fee":0,"net":-5000,"currency":"jpy","type":"payout","reporting_category":"payout","description":null,"created":1768348800,"available_on":1768348800,"status":"available"}]}`))
	case strings.HasPrefix(r.URL.Path, "/v1/balance_transactions/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/balance_transactions/")
		f.gets = append(f.gets, id)
		if id == "txn_gone" {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such balance transaction"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"` + id + `","amount":300,"fee":0,"net":300,"currency":"usd","type":"charge","reporting_category":"charge","created":1760000000,"available_on":1760100000,"status":"available"}`))
	}
}

func conn(srv *httptest.Server) providers.Connection {
	return providers.Connection{Provider: stripe.Name, BaseURL: srv.URL,
		Credentials: json.RawMessage(`{"api_key":"sk_test_abc","account":"acct_1"}`)}
}

func TestAccountsPerCurrency(t *testing.T) {
	f := &fakeStripe{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	set, err := stripe.New(srv.Client()).Accounts(context.Background(), conn(srv))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Accounts) != 2 {
		t.Fatalf("accounts = %+v", set.Accounts)
	}
	jpy, usd := set.Accounts[0], set.Accounts[1]
	if jpy.Currency != "JPY" || jpy.CurrentBalance.String() != "700" {
		t.Errorf("jpy = %+v", jpy)
	}
	if usd.Currency != "USD" || usd.AvailableBalance.String() != "100.5" || usd.CurrentBalance.String() != "100" {
		t.Errorf("usd available %s current %s", usd.AvailableBalance, usd.CurrentBalance)
	}
	if f.headers.Get("Authorization") != "Bearer sk_test_abc" || f.headers.Get("Stripe-Account") != "acct_1" {
		t.Errorf("headers = %v", f.headers)
	}
}

func TestTransactionsPagingAndPendingRecheck(t *testing.T) {
	f := &fakeStripe{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := stripe.New(srv.Client(), stripe.WithOverlap(time.Hour))
	ctx := context.Background()
	first, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{PendingIDs: []string{"txn_old", "txn_gone"}})
	if err != nil {
		t.Fatal(err)
	}
	if first.Done || len(first.Upserts) != 2 || len(first.Removed) != 1 || first.Removed[0] != "txn_gone" {
		t.Fatalf("first = %+v", first)
	}
	charge, old := first.Upserts[0], first.Upserts[1]
	if charge.Amount.String() != "100" || charge.Fees.String() != "-3.2" || charge.NetAmount.String() != "96.8" ||
		*charge.FeeType != "stripe_fee" || charge.Status != domain.TxPending || charge.PostedDate != nil ||
		charge.Summary != "Order 7" || charge.Category.ProviderID != "charge" || charge.ProviderAccountID != "usd" {
		t.Errorf("charge = %+v", charge)
	}
	if old.ProviderID != "txn_old" || old.Status != domain.TxPosted || old.PostedDate == nil {
		t.Errorf("re-checked pending = %+v", old)
	}
	second, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Cursor: first.Next, PendingIDs: []string{"txn_old"}})
	if err != nil || !second.Done || len(second.Upserts) != 1 {
		t.Fatalf("second = %+v, %v", second, err)
	}
	payout := second.Upserts[0]
	if payout.Amount.String() != "-5000" || payout.Currency != "JPY" || payout.Summary != "payout" || payout.Status != domain.TxPosted {
		t.Errorf("payout = %+v", payout)
	}
	if f.queries[1].Get("starting_after") != "txn_2" || len(f.gets) != 2 {
		t.Errorf("second query = %v, gets = %v", f.queries[1], f.gets)
	}
	// The next sync lists from the newest created time minus the overlap.
	if _, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Cursor: second.Next}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.queries[2].Get("created[gte]"), "1768431600"; got != want {
		t.Errorf("created[gte] = %s, want %s", got, want)
	}
}

func TestClassification(t *testing.T) {
	tests := []struct {
		status int
		body   string
		header string
		class  resilience.Class
	}{
		{401, `{"error":{"type":"invalid_request_error","code":"api_key_expired"}}`, "", resilience.ReauthRequired},
		{429, `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`, "", resilience.RateLimited},
		{429, `{"error":{"type":"invalid_request_error","code":"lock_timeout"}}`, "", resilience.Unavailable},
		{500, `{"error":{"type":"api_error"}}`, "", resilience.Unavailable},
		{400, `{"error":{"type":"invalid_request_error","code":"parameter_invalid"}}`, "", resilience.Permanent},
		{400, `{"error":{"type":"invalid_request_error"}}`, "true", resilience.Unavailable},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tt.header != "" {
				w.Header().Set("Stripe-Should-Retry", tt.header)
			}
			w.WriteHeader(tt.status)
			_, _ = w.Write([]byte(tt.body))
		}))
		_, err := stripe.New(srv.Client()).Accounts(context.Background(), conn(srv))
		srv.Close()
		if pe := resilience.AsError(err); pe == nil || pe.Class != tt.class {
			t.Errorf("%d %s: got %v, want %v", tt.status, tt.body, err, tt.class)
		}
	}
}
