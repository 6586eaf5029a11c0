package gocardless_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/gocardless"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/resilience"
)

// recorder counts the answers the adapter gets, by path kind and status.
type recorder struct {
	mu      sync.Mutex
	h       http.Handler
	calls   map[string]int
	queries []string
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) { w.status = s; w.ResponseWriter.WriteHeader(s) }

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: 200}
	r.h.ServeHTTP(sw, req)
	kind := "other"
	for _, k := range []string{"transactions", "balances", "details", "token"} {
		if strings.Contains(req.URL.Path, "/"+k+"/") {
			kind = k
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[kind+" "+http.StatusText(sw.status)]++
	if kind == "transactions" {
		r.queries = append(r.queries, req.URL.RawQuery)
	}
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

func simEnv(t *testing.T) (*recorder, providers.Provider, providers.Connection, *sim.Simulator) {
	t.Helper()
	sm := allsim.New(sim.Options{Seed: 7, Start: providertest.Start})
	rec := &recorder{h: sm, calls: map[string]int{}}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	conn := providers.Connection{
		Provider: gocardless.Name, BaseURL: srv.URL + "/api/v2",
		Credentials: allsim.Credentials(gocardless.Name, "quota"),
	}
	return rec, gocardless.New(srv.Client()), conn, sm
}

func TestDailyQuotaIsNeverOverspent(t *testing.T) {
	rec, p, conn, sm := simEnv(t)
	ctx := context.Background()
	today, _ := domain.ParseDate(sm.State().Today)
	var last providers.TransactionPage
	cursor := ""
	for sync := 1; sync <= 6; sync++ {
		set, err := p.Accounts(ctx, conn)
		if err != nil {
			t.Fatalf("sync %d accounts: %v", sync, err)
		}
		for _, a := range set.Accounts {
			if spent := sync > 4; a.BalancesUnknown != spent || (!spent && a.CurrentBalance == nil) {
				t.Fatalf("sync %d: account %s balances unknown = %v, current %v", sync, a.ProviderAccountID, a.BalancesUnknown, a.CurrentBalance)
			}
		}
		if spent := sync > 4; spent != set.NextAllowedAt.After(time.Now()) {
			t.Fatalf("sync %d: NextAllowedAt = %v", sync, set.NextAllowedAt)
		}
		for {
			page, err := p.Transactions(ctx, conn, providers.TransactionRequest{Cursor: cursor, Today: today})
			if err != nil {
				t.Fatalf("sync %d: %v", sync, err)
			}
			cursor, last = page.Next, page
			if page.Done {
				break
			}
		}
	}
	if n := rec.count("transactions Too Many Requests") + rec.count("balances Too Many Requests") + rec.count("details Too Many Requests"); n != 0 {
		t.Errorf("the adapter spent %d calls the quota could not afford", n)
	}
	ok := rec.count("transactions OK")
	if ok == 0 || ok%4 != 0 {
		t.Errorf("successful transaction calls = %d, want 4 per account", ok)
	}
	if rec.count("details OK") == 0 || rec.count("details OK") > ok/4 {
		t.Errorf("details read %d times, want once per account (cached)", rec.count("details OK"))
	}
	if last.NextAllowedAt.IsZero() || !last.NextAllowedAt.After(time.Now()) {
		t.Errorf("NextAllowedAt = %v, want the quota reset", last.NextAllowedAt)
	}
	if rec.count("token OK") != 1 {
		t.Errorf("token/new called %d times, want 1 (cached JWT)", rec.count("token OK"))
	}
	// Incremental syncs ask for a window from the last booked date - 7 days.
	if q := rec.queries[len(rec.queries)-1]; !strings.Contains(q, "date_from=") || !strings.Contains(q, "date_to="+today.String()) {
		t.Errorf("incremental query = %q", q)
	}
	if q := rec.queries[0]; strings.Contains(q, "date_from=") {
		t.Errorf("first sync query = %q, want the whole history", q)
	}
}

// cannedServer answers token/new and one account's transactions.
func cannedServer(t *testing.T, body string, unauthorizedOnce bool) (*httptest.Server, *int) {
	t.Helper()
	tokens := 0
	var mu sync.Mutex
	failed := false
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v2/token/new/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens++
		mu.Unlock()
		_, _ = w.Write([]byte(`{"access":"jwt","access_expires":86400,"refresh":"r","refresh_expires":2592000}`))
	})
	mux.HandleFunc("POST /api/v2/token/refresh/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens += 10
		mu.Unlock()
		_, _ = w.Write([]byte(`{"access":"jwt2","access_expires":86400}`))
	})
	mux.HandleFunc("GET /api/v2/requisitions/{id}/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if unauthorizedOnce && !failed {
			failed = true
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"summary":"Invalid token","detail":"Token is invalid or expired","status_code":401}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"req","status":"LN","institution_id":"SANDBOXFINANCE_SFIN0000","accounts":["acc-1"]}`))
	})
	mux.HandleFunc("GET /api/v2/accounts/acc-1/transactions/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(body))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &tokens
}

func cannedConn(srv *httptest.Server) providers.Connection {
	creds, _ := json.Marshal(map[string]string{"secret_id": "id", "secret_key": "key", "requisition_id": "req"})
	return providers.Connection{Provider: gocardless.Name, BaseURL: srv.URL + "/api/v2", Credentials: creds}
}

const twoCoffees = `{"transactions":{"booked":[
 {"bookingDate":"2026-01-10","valueDate":"2026-01-10","transactionAmount":{"amount":"-3.50","currency":"EUR"},"creditorName":"Coffee Bar","remittanceInformationUnstructured":"COFFEE"},
 {"bookingDate":"2026-01-10","valueDate":"2026-01-10","transactionAmount":{"amount":"-3.50","currency":"EUR"},"creditorName":"Coffee Bar","remittanceInformationUnstructured":"COFFEE"},
 {"transactionId":"bank-1","bookingDate":"2026-01-11","transactionAmount":{"amount":"1200.00","currency":"EUR"},"debtorName":"Employer"},
 {"internalTransactionId":"int-9","bookingDate":"2026-01-12","transactionAmount":{"amount":"-0.10","currency":"EUR"},"remittanceInformationUnstructured":"fee"}
],"pending":[
 {"valueDate":"2026-01-13","transactionAmount":{"amount":"-20.00","currency":"EUR"},"creditorName":"Grocer"}
]}}`

func TestMapping(t *testing.T) {
	srv, _ := cannedServer(t, twoCoffees, false)
	p := gocardless.New(srv.Client())
	page, err := p.Transactions(context.Background(), cannedConn(srv), providers.TransactionRequest{Today: domain.DateOf(time.Date(2026, 1, 14, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Upserts) != 5 || !page.Done {
		t.Fatalf("page = %+v", page)
	}
	a, b := page.Upserts[0], page.Upserts[1]
	if a.ProviderID == b.ProviderID || !strings.HasSuffix(a.ProviderID, "_0") || !strings.HasSuffix(b.ProviderID, "_1") {
		t.Errorf("identical rows got ids %q and %q; want the same hash with occurrence 0 and 1", a.ProviderID, b.ProviderID)
	}
	tests := []struct {
		i                      int
		id, status, amount     string
		summary, posted, authd string
	}{
		{2, "bank-1", domain.TxPosted, "1200", "Employer", "2026-01-11", ""},
		{3, "int-9", domain.TxPosted, "-0.1", "fee", "2026-01-12", ""},
		{4, "", domain.TxPending, "-20", "Grocer", "", "2026-01-13"},
	}
	for _, tt := range tests {
		tx := page.Upserts[tt.i]
		if tt.id != "" && tx.ProviderID != tt.id {
			t.Errorf("row %d id = %q, want %q", tt.i, tx.ProviderID, tt.id)
		}
		if tx.Status != tt.status || tx.Amount.String() != tt.amount || tx.Summary != tt.summary || tx.Currency != "EUR" {
			t.Errorf("row %d = %s %s %q %s", tt.i, tx.Status, tx.Amount, tx.Summary, tx.Currency)
		}
		if tt.posted != "" && (tx.PostedDate == nil || tx.PostedDate.String() != tt.posted) {
			t.Errorf("row %d posted = %v, want %s", tt.i, tx.PostedDate, tt.posted)
		}
		if tt.authd != "" && (tx.AuthorizedDate == nil || tx.AuthorizedDate.String() != tt.authd) {
			t.Errorf("row %d authorized = %v, want %s", tt.i, tx.AuthorizedDate, tt.authd)
		}
	}
	if len(page.ReplacePendingFor) != 1 || page.ReplacePendingFor[0] != "acc-1" {
		t.Errorf("ReplacePendingFor = %v", page.ReplacePendingFor)
	}
	if m := page.Upserts[0].MerchantName; m == nil || *m != "Coffee Bar" {
		t.Errorf("merchant = %v", m)
	}
}

func TestRefreshesOurTokenOnceOn401(t *testing.T) {
	srv, tokens := cannedServer(t, `{"transactions":{"booked":[],"pending":[]}}`, true)
	p := gocardless.New(srv.Client())
	if _, err := p.Transactions(context.Background(), cannedConn(srv), providers.TransactionRequest{}); err != nil {
		t.Fatal(err)
	}
	if *tokens != 11 {
		t.Errorf("token calls = %d, want one token/new then one token/refresh (11)", *tokens)
	}
}

// TestBalancesUnknownWhenTheyCannotBeHad: an answer without a current
// balance, a balance without an amount, or a failing balance call leaves
// the account's balances unknown (never zero or null) without failing
// Accounts; an answer with a current balance and no available one is a
// bank that reports none. An expired consent still fails.
func TestBalancesUnknownWhenTheyCannotBeHad(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		unknown    bool
		current    string
		fails      bool
	}{
		{"booked only", `{"balances":[{"balanceAmount":{"amount":"12.30","currency":"EUR"},"balanceType":"closingBooked"}]}`, 200, false, "12.3", false},
		{"no balances", `{"balances":[]}`, 200, true, "", false},
		{"no amount", `{"balances":[{"balanceAmount":{"currency":"EUR"},"balanceType":"closingBooked"}]}`, 200, true, "", false},
		{"only available", `{"balances":[{"balanceAmount":{"amount":"5.00","currency":"EUR"},"balanceType":"interimAvailable"}]}`, 200, true, "", false},
		{"server error", `{"summary":"Internal Server Error","detail":"boom","status_code":500}`, 500, true, "", false},
		{"consent expired", `{"summary":"EUA expired","detail":"expired","type":"AccessExpiredError","status_code":401}`, 401, false, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := cannedServer(t, `{"transactions":{"booked":[],"pending":[]}}`, false)
			mux := http.NewServeMux()
			mux.HandleFunc("GET /api/v2/accounts/acc-1/details/", func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"account":{"currency":"EUR","name":"Main","cashAccountType":"CACC","iban":"LT000000000000001234"}}`))
			})
			mux.HandleFunc("GET /api/v2/accounts/acc-1/balances/", func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			mux.Handle("/", srv.Config.Handler)
			both := httptest.NewServer(mux)
			t.Cleanup(both.Close)
			set, err := gocardless.New(both.Client()).Accounts(context.Background(), cannedConn(both))
			if tc.fails {
				if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.ReauthRequired {
					t.Fatalf("Accounts = %v, want ReauthRequired", err)
				}
				return
			}
			if err != nil || len(set.Accounts) != 1 {
				t.Fatalf("Accounts = %+v, %v", set, err)
			}
			a := set.Accounts[0]
			if a.BalancesUnknown != tc.unknown {
				t.Fatalf("BalancesUnknown = %v, want %v (%+v)", a.BalancesUnknown, tc.unknown, a)
			}
			if tc.unknown && (a.CurrentBalance != nil || a.AvailableBalance != nil) {
				t.Fatalf("unknown balances carry values: %+v", a)
			}
			if !tc.unknown && (a.CurrentBalance == nil || a.CurrentBalance.String() != tc.current || a.AvailableBalance != nil) {
				t.Fatalf("balances = %v / %v, want %s / none", a.CurrentBalance, a.AvailableBalance, tc.current)
			}
		})
	}
}
