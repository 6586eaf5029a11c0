package simplefin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
	"github.com/finsync/finsync/providers/simplefin"
	"github.com/finsync/finsync/providers/simplefin/simplefinsim"
	"github.com/finsync/finsync/resilience"
)

// mint asks the simulator for a fresh setup token.
func mint(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	resp, err := http.Get(srv.URL + "/_sim/simplefin/token")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func today(s *sim.Simulator) domain.Date { return domain.DateOf(s.DateOf(s.Clock())) }

func TestSetupTokenIsExchangedOnceForAnAccessURL(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, simplefinsim.Sim{})
	token, _ := json.Marshal(map[string]string{"setup_token": mint(t, srv)})
	// The claimed access URL names the simulator: the default base URL
	// keeps it.
	conn := providers.Connection{Provider: simplefin.Name, BaseURL: simplefin.BridgeURL, Credentials: token}
	a := simplefin.New(srv.Client())
	ctx := context.Background()
	// A setup token is never claimed by a sync.
	if _, err := a.Accounts(ctx, conn); resilience.AsError(err) == nil || resilience.AsError(err).Code != "INVALID_CREDENTIALS" {
		t.Fatalf("accounts with an unclaimed setup token: %v, want INVALID_CREDENTIALS", err)
	}
	stored, err := a.(providers.CredentialExchanger).ExchangeCredentials(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]string
	if err := json.Unmarshal(stored, &c); err != nil || len(c) != 1 || !strings.Contains(c["access_url"], "@") {
		t.Fatalf("exchanged credentials %s: want only an access URL with its user", stored)
	}
	conn.Credentials = stored
	// Another adapter (a restarted worker) syncs with what was stored.
	set, err := simplefin.New(srv.Client()).Accounts(ctx, conn)
	if err != nil || len(set.Accounts) != 3 {
		t.Fatalf("accounts: %v, %+v", err, set)
	}
	page, err := a.Transactions(ctx, conn, providers.TransactionRequest{Today: today(s)})
	if err != nil || len(page.Upserts) == 0 || !page.Done {
		t.Fatalf("transactions: %v, %d rows, done %v", err, len(page.Upserts), page.Done)
	}
	// The token is spent.
	conn.Credentials = token
	_, err = a.(providers.CredentialExchanger).ExchangeCredentials(ctx, conn)
	if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.ReauthRequired || pe.HTTPStatus != http.StatusForbidden {
		t.Fatalf("second claim: %v, want ReauthRequired 403", err)
	}
}

func TestMapsSignsBalancesAndPending(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, simplefinsim.Sim{})
	conn := providers.Connection{Provider: simplefin.Name, BaseURL: srv.URL + "/simplefin", Credentials: simplefinsim.Sim{}.Credentials("map")}
	a := simplefin.New(srv.Client())
	set, err := a.Accounts(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, acc := range set.Accounts {
		types[acc.ProviderAccountID] = acc.Type
		if acc.Currency != "USD" || acc.CurrentBalance == nil || acc.BalancesUnknown {
			t.Errorf("account %+v", acc)
		}
		if acc.Type == "credit" && acc.CurrentBalance.Decimal().IsNegative() {
			t.Errorf("credit balance %s stored negative, want the amount owed", acc.CurrentBalance)
		}
	}
	if set.Institution.ID == "" || len(types) != 3 {
		t.Fatalf("set %+v", set)
	}
	page, err := a.Transactions(context.Background(), conn, providers.TransactionRequest{Today: today(s)})
	if err != nil {
		t.Fatal(err)
	}
	var pending, deposits, spends int
	for _, tx := range page.Upserts {
		switch tx.Status {
		case domain.TxPending:
			pending++
			if tx.PostedDate != nil || tx.AuthorizedDate == nil {
				t.Errorf("pending %s dated %v/%v", tx.ProviderID, tx.PostedDate, tx.AuthorizedDate)
			}
		case domain.TxPosted:
			if tx.PostedDate == nil {
				t.Errorf("posted %s without a posted date", tx.ProviderID)
			}
		}
		if tx.Amount.Decimal().IsPositive() {
			deposits++
		} else {
			spends++
		}
		if tx.Summary == "Payment Thank You" && types[tx.ProviderAccountID] == "credit" && !tx.Amount.Decimal().IsPositive() {
			t.Errorf("card payment %s is %s, want positive", tx.ProviderID, tx.Amount)
		}
	}
	if pending == 0 || deposits == 0 || spends == 0 {
		t.Errorf("pending %d, deposits %d, spends %d", pending, deposits, spends)
	}
	if len(page.ReplacePendingFor) != 3 {
		t.Errorf("ReplacePendingFor %v, want every account", page.ReplacePendingFor)
	}
}

func TestLongGapIsReadInBoundedWindows(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, simplefinsim.Sim{})
	conn := providers.Connection{Provider: simplefin.Name, BaseURL: srv.URL + "/simplefin", Credentials: simplefinsim.Sim{}.Credentials("gap")}
	a := simplefin.New(srv.Client(), simplefin.WithOverlapDays(0))
	first, err := a.Transactions(context.Background(), conn, providers.TransactionRequest{Today: today(s)})
	if err != nil || !first.Done {
		t.Fatal(err)
	}
	if err := s.Advance(100); err != nil {
		t.Fatal(err)
	}
	cursor, pages := first.Next, 0
	for done := false; !done; pages++ {
		page, err := a.Transactions(context.Background(), conn, providers.TransactionRequest{Cursor: cursor, Today: today(s)})
		if err != nil {
			t.Fatal(err)
		}
		if !page.Done && len(page.ReplacePendingFor) > 0 {
			t.Error("a window before the last replaced the pending set")
		}
		cursor, done = page.Next, page.Done
	}
	if pages != 2 {
		t.Errorf("101 days read in %d requests, want 2 of at most %d days", pages, simplefin.WindowDays)
	}
}

func TestStatusesNeedingTheUser(t *testing.T) {
	for status, class := range map[int]resilience.Class{
		http.StatusForbidden: resilience.ReauthRequired, http.StatusPaymentRequired: resilience.ReauthRequired,
		http.StatusTooManyRequests: resilience.RateLimited, http.StatusBadGateway: resilience.Unavailable,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, http.StatusText(status), status)
		}))
		creds, _ := json.Marshal(map[string]string{"access_url": "https://u:p@example.com/simplefin"})
		_, err := simplefin.New(&http.Client{Timeout: 5 * time.Second}).Accounts(context.Background(),
			providers.Connection{BaseURL: srv.URL, Credentials: creds})
		if pe := resilience.AsError(err); pe == nil || pe.Class != class || pe.HTTPStatus != status {
			t.Errorf("%d: %v, want class %v", status, err, class)
		}
		srv.Close()
	}
	_, err := simplefin.New(nil).Accounts(context.Background(), providers.Connection{Credentials: json.RawMessage(`{}`)})
	if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.Permanent {
		t.Errorf("no credentials: %v, want Permanent", err)
	}
}
