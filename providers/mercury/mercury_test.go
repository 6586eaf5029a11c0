package mercury_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/mercury"
	"github.com/finsync/finsync/resilience"
)

type fakeMercury struct {
	mu      sync.Mutex
	queries []url.Values
}

const rows = `[
 {"id":"t1","accountId":"a1","amount":-42.1,"status":"sent","kind":"debitCardTransaction","createdAt":"2026-01-10T10:00:00Z","postedAt":"2026-01-11T08:00:00Z","counterpartyName":"Shell","counterpartyNickname":null,"bankDescription":"SHELL OIL 5744","mercuryCategory":"FuelAndGas"},
 {"id":"t2","accountId":"a1","amount":5000,"status":"pending","kind":"incomingDomesticWire","createdAt":"2026-01-12T10:00:00Z","postedAt":null,"counterpartyName":"ACME Corp","counterpartyNickname":"Acme","mercuryCategory":null,"currencyExchangeInfo":{"feeAmount":1.5}},
 {"id":"t3","accountId":"a1","amount":-10,"status":"cancelled","kind":"outgoingPayment","createdAt":"2026-01-12T10:00:00Z","counterpartyName":"X"}]`

func (f *fakeMercury) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/v1/accounts":
		_, _ = w.Write([]byte(`{"accounts":[{"id":"a1","name":"Mercury Checking ••1234","nickname":null,"status":"active","type":"mercury","kind":"checking","availableBalance":1000.5,"currentBalance":1100.25,"accountNumber":"202201234"}]}`))
	case "/api/v1/credit":
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"errors":{"message":"not found"}}`))
	case "/api/v1/account/a1/transactions":
		f.queries = append(f.queries, r.URL.Query())
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		if off == 0 {
			_, _ = w.Write([]byte(`{"total":4,"transactions":` + rows + `}`))
			return
		}
		_, _ = w.Write([]byte(`{"total":4,"transactions":[{"id":"t4","accountId":"a1","amount":1,"status":"sent","kind":"other","createdAt":"2026-01-13T00:00:00Z","postedAt":"2026-01-13T00:00:00Z","counterpartyName":"Y"}]}`))
	}
}

func conn(srv *httptest.Server) providers.Connection {
	return providers.Connection{Provider: mercury.Name, BaseURL: srv.URL + "/api/v1",
		Credentials: json.RawMessage(`{"token":"secret-token:mercury_sandbox_x"}`)}
}

func TestAccounts(t *testing.T) {
	srv := httptest.NewServer(&fakeMercury{})
	defer srv.Close()
	set, err := mercury.New(srv.Client()).Accounts(context.Background(), conn(srv))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Accounts) != 1 {
		t.Fatalf("accounts = %+v", set.Accounts)
	}
	a := set.Accounts[0]
	if a.Mask != "1234" || a.Currency != "USD" || a.Type != "depository" || a.Subtype != "checking" ||
		a.CurrentBalance.String() != "1100.25" || a.AvailableBalance.String() != "1000.5" {
		t.Errorf("account = %+v", a)
	}
}

func TestTransactions(t *testing.T) {
	f := &fakeMercury{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := mercury.New(srv.Client(), mercury.WithOverlapDays(3))
	ctx := context.Background()
	today, _ := domain.ParseDate("2026-01-14")
	first, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Today: today})
	if err != nil {
		t.Fatal(err)
	}
	if first.Done || len(first.Upserts) != 2 || len(first.Removed) != 1 || first.Removed[0] != "t3" {
		t.Fatalf("first = %+v", first)
	}
	t1, t2 := first.Upserts[0], first.Upserts[1]
	if t1.Amount.String() != "-42.1" || t1.Status != domain.TxPosted || t1.PostedDate.String() != "2026-01-11" ||
		t1.AuthorizedDate.String() != "2026-01-10" || *t1.MerchantName != "Shell" || t1.Category.Name != "Fuel and gas" ||
		t1.Category.ProviderID != "FuelAndGas" {
		t.Errorf("t1 = %+v", t1)
	}
	if t2.Status != domain.TxPending || t2.Summary != "Acme" || t2.MerchantName != nil || t2.Fees.String() != "-1.5" || t2.PostedDate != nil {
		t.Errorf("t2 = %+v", t2)
	}
	second, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Cursor: first.Next, Today: today})
	if err != nil || !second.Done || len(second.Upserts) != 1 {
		t.Fatalf("second = %+v, %v", second, err)
	}
	if q := f.queries[1]; q.Get("offset") != "3" {
		t.Errorf("second page query = %v", q)
	}
	// The next sync re-reads from the last sync minus the overlap.
	if _, err := p.Transactions(ctx, conn(srv), providers.TransactionRequest{Cursor: second.Next, Today: today}); err != nil {
		t.Fatal(err)
	}
	if q := f.queries[2]; q.Get("start") != "2026-01-11" || q.Get("end") != "2026-01-14" || q.Get("offset") != "0" {
		t.Errorf("incremental query = %v", q)
	}
}

func TestClassification(t *testing.T) {
	tests := []struct {
		status int
		class  resilience.Class
	}{
		{401, resilience.ReauthRequired}, {403, resilience.ReauthRequired}, {429, resilience.RateLimited},
		{503, resilience.Unavailable}, {408, resilience.Unavailable}, {400, resilience.Permanent}, {404, resilience.Permanent},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tt.status)
			_, _ = w.Write([]byte(`{"errors":{"message":"nope"}}`))
		}))
		_, err := mercury.New(srv.Client()).Accounts(context.Background(), conn(srv))
		srv.Close()
		if pe := resilience.AsError(err); pe == nil || pe.Class != tt.class {
			t.Errorf("%d: got %v, want %v", tt.status, err, tt.class)
		}
	}
}
