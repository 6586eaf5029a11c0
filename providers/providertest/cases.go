package providertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/resilience"
)

func testAccounts(t *testing.T, s Suite) {
	e := newEnv(t, s, "accounts", 0)
	set := e.accounts(context.Background())
	if len(set.Accounts) == 0 {
		t.Fatal("no accounts")
	}
	seen := map[string]bool{}
	withBalance := 0
	for _, a := range set.Accounts {
		if a.ProviderAccountID == "" || seen[a.ProviderAccountID] {
			t.Errorf("account id %q empty or repeated", a.ProviderAccountID)
		}
		seen[a.ProviderAccountID] = true
		if a.Name == "" || a.Type == "" || len(a.Currency) != 3 || strings.ToUpper(a.Currency) != a.Currency {
			t.Errorf("account %+v lacks a name, type or ISO currency", a)
		}
		if a.CurrentBalance != nil {
			withBalance++
		}
	}
	if withBalance == 0 {
		t.Error("no account has a current balance")
	}
	if set.HasInvestments != s.Investments && s.Investments {
		t.Errorf("HasInvestments = %v, want %v", set.HasInvestments, s.Investments)
	}
}

// walk sizes the connection, reads the accounts and syncs everything.
func walk(t *testing.T, e *env) (providers.AccountSet, *Store, string, []providers.TransactionPage) {
	e.size(e.s.Transactions)
	ctx := context.Background()
	set := e.accounts(ctx)
	st := NewStore()
	final, pages := e.sync(ctx, "", st)
	return set, st, final, pages
}

func testWalk(t *testing.T, s Suite) {
	e := newEnv(t, s, "walk", 0)
	set, st, _, pages := walk(t, e)
	accounts := map[string]bool{}
	for _, a := range set.Accounts {
		accounts[a.ProviderAccountID] = true
	}
	seen := map[string]bool{}
	for _, p := range pages {
		for _, tx := range p.Upserts {
			if seen[tx.ProviderID] {
				t.Errorf("provider id %s delivered twice in one walk", tx.ProviderID)
			}
			seen[tx.ProviderID] = true
			checkTransaction(t, tx, accounts)
		}
	}
	if len(st.Tx) < s.Transactions/2 {
		t.Errorf("walk stored %d transactions, want about %d", len(st.Tx), s.Transactions)
	}
	checkSigns(t, s, st)
}

func checkTransaction(t *testing.T, tx providers.Transaction, accounts map[string]bool) {
	t.Helper()
	switch {
	case tx.ProviderID == "":
		t.Errorf("transaction without id: %s", describe(tx))
	case !accounts[tx.ProviderAccountID]:
		t.Errorf("transaction on unknown account: %s", describe(tx))
	case tx.Currency == "" || strings.ToUpper(tx.Currency) != tx.Currency:
		t.Errorf("transaction without ISO currency: %s", describe(tx))
	case tx.Status == domain.TxPosted && tx.PostedDate == nil:
		t.Errorf("posted transaction without posted date: %s", describe(tx))
	case tx.Status == domain.TxPending && tx.AuthorizedDate == nil:
		t.Errorf("pending transaction without authorized date: %s", describe(tx))
	case tx.Status != domain.TxPosted && tx.Status != domain.TxPending:
		t.Errorf("transaction with status %q: %s", tx.Status, describe(tx))
	case tx.CreatedAt.IsZero():
		t.Errorf("transaction without CreatedAt: %s", describe(tx))
	case tx.Summary == "":
		t.Errorf("transaction without summary: %s", describe(tx))
	}
}

// checkSigns checks outflows are negative and inflows positive wherever the
// direction is known, and that both directions were seen.
func checkSigns(t *testing.T, s Suite, st *Store) {
	t.Helper()
	var out, in int
	for _, tx := range st.Tx {
		outflow, known := s.Outflow(tx)
		if !known || tx.Amount.IsZero() {
			continue
		}
		neg := tx.Amount.Decimal().IsNegative()
		if neg != outflow {
			t.Errorf("sign: outflow=%v but amount %s: %s", outflow, tx.Amount, describe(tx))
		}
		if outflow {
			out++
		} else {
			in++
		}
	}
	if out == 0 || in == 0 {
		t.Errorf("signs checked on %d outflows and %d inflows; want both", out, in)
	}
}

// inflowNames are the simulator's merchants that pay money in.
var inflowNames = []string{"acme corp", "check deposit", "mobile deposit", "interest payment", "transfer from checking",
	"transfer from chk", "payment thank you"}

// outflowNames are some of the simulator's merchants that take money out.
var outflowNames = []string{"whole foods", "wholefds", "starbucks", "shell", "uber", "amazon", "netflix", "chipotle",
	"cvs", "marriott", "delta air", "office depot", "comcast", "pg&e", "pgande", "overdraft"}

// OutflowByName tells a transaction's direction from the simulator's
// merchant names in its summary, merchant name or original description.
func OutflowByName(tx providers.Transaction) (outflow, known bool) {
	text := strings.ToLower(tx.Summary)
	if tx.MerchantName != nil {
		text += " " + strings.ToLower(*tx.MerchantName)
	}
	if tx.OriginalDescription != nil {
		text += " " + strings.ToLower(*tx.OriginalDescription)
	}
	for _, n := range inflowNames {
		if strings.Contains(text, n) {
			return false, true
		}
	}
	for _, n := range outflowNames {
		if strings.Contains(text, n) {
			return true, true
		}
	}
	return false, false
}

func testResync(t *testing.T, s Suite) {
	e := newEnv(t, s, "resync", 0)
	_, st, final, _ := walk(t, e)
	before := map[string]string{}
	for id, tx := range st.Tx {
		before[id] = describe(tx)
	}
	_, pages := e.sync(context.Background(), final, st)
	for _, p := range pages {
		for _, id := range p.Removed {
			if _, live := before[id]; live {
				t.Errorf("re-sync removed live transaction %s", id)
			}
		}
		for _, tx := range p.Upserts {
			if was, ok := before[tx.ProviderID]; !ok || was != describe(tx) {
				t.Errorf("re-sync delivered something new:\n got %s\nwant %s", describe(tx), was)
			}
		}
	}
	if len(st.Tx) != len(before) {
		t.Errorf("re-sync changed the store from %d to %d transactions", len(before), len(st.Tx))
	}
}

func testPendingPosts(t *testing.T, s Suite) {
	e := newEnv(t, s, "pending", 0)
	_, st, final, _ := walk(t, e)
	pending := st.PendingIDs()
	if len(pending) == 0 {
		t.Fatal("the walk found no pending transactions")
	}
	count := len(st.Tx)
	was := map[string]providers.Transaction{}
	for id, tx := range st.Tx {
		was[id] = tx
	}
	if err := e.sim.Advance(s.AdvanceDays); err != nil {
		t.Fatal(err)
	}
	_, pages := e.sync(context.Background(), final, st)
	replacedBy := map[string]bool{}
	for _, p := range pages {
		for _, tx := range p.Upserts {
			if tx.PendingProviderID != nil {
				replacedBy[*tx.PendingProviderID] = true
			}
		}
	}
	// Rows that posted under a new id without naming their pending one, by
	// account, amount and currency: a provider that books a pending row
	// under another id (GoCardless) replaces it this way.
	booked := map[string]int{}
	for id, tx := range st.Tx {
		if _, old := was[id]; !old && tx.Status == domain.TxPosted {
			booked[contentKey(tx)]++
		}
	}
	stillPending, posted := 0, 0
	for _, id := range pending {
		tx, ok := st.Tx[id]
		switch {
		case ok && tx.Status == domain.TxPending:
			stillPending++
		case ok && tx.Status == domain.TxPosted, replacedBy[id]:
			posted++
		case !ok && booked[contentKey(was[id])] > 0:
			booked[contentKey(was[id])]--
			posted++
		}
	}
	// Deleting every formerly pending row without a posted row in its place
	// loses them end to end: at least one must have posted.
	if stillPending == len(pending) || posted == 0 {
		t.Errorf("after %d days %d of %d pending transactions are still pending, %d posted (deleted: %d)",
			s.AdvanceDays, stillPending, len(pending), posted, len(pending)-stillPending-posted)
	}
	if len(st.Tx) <= count-len(pending) {
		t.Errorf("no new transactions after advancing: %d before, %d after", count, len(st.Tx))
	}
	for _, tx := range st.Tx {
		if tx.PendingProviderID != nil {
			if _, ok := st.Tx[*tx.PendingProviderID]; ok {
				t.Errorf("pending %s still stored beside its posted %s", *tx.PendingProviderID, tx.ProviderID)
			}
		}
	}
}

// contentKey is what a pending row and the posted row replacing it share
// whatever their ids: account, amount and currency.
func contentKey(tx providers.Transaction) string {
	return tx.ProviderAccountID + "|" + tx.Amount.String() + "|" + tx.Currency
}

func testInvestments(t *testing.T, s Suite) {
	e := newEnv(t, s, "investments", 0)
	ctx := context.Background()
	h, err := e.p.Holdings(ctx, e.conn)
	end := e.today()
	start := domain.Date{Time: end.AddDate(0, 0, -90)}
	it, err2 := e.p.InvestmentTransactions(ctx, e.conn, start, end)
	if !s.Investments {
		if !errors.Is(err, providers.ErrNotSupported) || !errors.Is(err2, providers.ErrNotSupported) {
			t.Fatalf("want ErrNotSupported, got %v / %v", err, err2)
		}
		return
	}
	if err != nil || err2 != nil {
		t.Fatalf("Holdings: %v; InvestmentTransactions: %v", err, err2)
	}
	secs := map[string]bool{}
	for _, sec := range h.Securities {
		secs[sec.ProviderSecurityID] = true
	}
	if len(h.Holdings) == 0 {
		t.Fatal("no holdings")
	}
	for _, x := range h.Holdings {
		if !secs[x.ProviderSecurityID] || x.Currency == "" {
			t.Errorf("holding %+v: unknown security or no currency", x)
		}
	}
	if len(it.Transactions) == 0 {
		t.Fatal("no investment transactions in 90 days")
	}
	ids := map[string]bool{}
	for _, x := range it.Transactions {
		if ids[x.ProviderID] || x.Date.Before(start.Time) || x.Date.After(end.Time) {
			t.Errorf("investment transaction %+v repeated or outside the window", x)
		}
		ids[x.ProviderID] = true
	}
}

// resilient wraps the env's adapter with fast breakers and no local limits.
func resilient(e *env) *providers.Resilient {
	return providers.NewResilient(e.p, resilience.Config{
		Limits:      &resilience.Limits{},
		Retries:     1,
		Backoff:     time.Millisecond,
		MaxBackoff:  2 * time.Millisecond,
		Provider:    resilience.BreakerConfig{Failures: 3, OpenFor: 200 * time.Millisecond},
		Institution: resilience.BreakerConfig{Failures: 3, OpenFor: 200 * time.Millisecond},
	})
}

func wantClass(t *testing.T, err error, class resilience.Class) *resilience.Error {
	t.Helper()
	pe := resilience.AsError(err)
	if pe == nil || pe.Class != class {
		t.Fatalf("want %v, got %v", class, err)
	}
	return pe
}

func testOutage(t *testing.T, s Suite) {
	e := newEnv(t, s, "outage", 0)
	r := resilient(e)
	ctx := context.Background()
	e.fault(sim.FaultOutage, nil)
	var opened *resilience.Error
	for i := 0; i < 5 && opened == nil; i++ {
		_, err := r.Accounts(ctx, e.conn)
		if pe := wantClass(t, err, resilience.Unavailable); pe.Code == resilience.CodeCircuitOpen {
			opened = pe
		}
	}
	if opened == nil || opened.RetryAfter <= 0 {
		t.Fatalf("breaker did not open with a RetryAfter: %v", opened)
	}
	if st := r.States()[0]; st.State != "open" {
		t.Fatalf("breaker state %+v", st)
	}
	e.fault(sim.FaultNone, nil)
	time.Sleep(250 * time.Millisecond)
	if _, err := r.Accounts(ctx, e.conn); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if st := r.States()[0]; st.State != "closed" {
		t.Fatalf("breaker state after recovery %+v", st)
	}
}

func testRateLimit(t *testing.T, s Suite) {
	e := newEnv(t, s, "ratelimit", 0)
	ctx := context.Background()
	e.fault(sim.FaultRateLimit, nil)
	_, err := e.p.Accounts(ctx, e.conn)
	if pe := wantClass(t, err, resilience.RateLimited); pe.RetryAfter <= 0 {
		t.Errorf("RateLimited without RetryAfter: %v", pe)
	}
	_, err = e.p.Transactions(ctx, e.conn, providers.TransactionRequest{Today: e.today()})
	if pe := wantClass(t, err, resilience.RateLimited); pe.RetryAfter <= 0 {
		t.Errorf("RateLimited without RetryAfter: %v", pe)
	}
	r := resilient(e)
	for i := 0; i < 6; i++ {
		_, err := r.Accounts(ctx, e.conn)
		wantClass(t, err, resilience.RateLimited)
	}
	if st := r.States()[0]; st.State != "closed" {
		t.Errorf("rate limits opened the breaker: %+v", st)
	}
}

func testLoginRequired(t *testing.T, s Suite) {
	e := newEnv(t, s, "login", 0)
	ctx := context.Background()
	e.fault(sim.FaultLoginRequired, nil)
	_, err := e.p.Accounts(ctx, e.conn)
	if pe := wantClass(t, err, resilience.ReauthRequired); len(s.LoginCodes) > 0 && !slices.Contains(s.LoginCodes, pe.Code) {
		t.Errorf("code = %q, want one of %q", pe.Code, s.LoginCodes)
	}
	_, err = e.p.Transactions(ctx, e.conn, providers.TransactionRequest{Today: e.today()})
	wantClass(t, err, resilience.ReauthRequired)
}

func testMalformed(t *testing.T, s Suite) {
	e := newEnv(t, s, "malformed", 0)
	ctx := context.Background()
	e.fault(sim.FaultMalformed, nil)
	_, err := e.p.Accounts(ctx, e.conn)
	if pe := wantClass(t, err, resilience.Unavailable); pe.Code != resilience.CodeMalformed {
		t.Errorf("code = %q, want %q", pe.Code, resilience.CodeMalformed)
	}
	_, err = e.p.Transactions(ctx, e.conn, providers.TransactionRequest{Today: e.today()})
	wantClass(t, err, resilience.Unavailable)
}

func testLatency(t *testing.T, s Suite) {
	e := newEnv(t, s, "latency", 150*time.Millisecond)
	e.fault(sim.FaultLatency, func(f *sim.Fault) { f.LatencyMs = 600 })
	start := time.Now()
	_, err := e.p.Accounts(context.Background(), e.conn)
	if pe := wantClass(t, err, resilience.Unavailable); pe.Code != resilience.CodeTimeout {
		t.Errorf("code = %q, want %q", pe.Code, resilience.CodeTimeout)
	}
	// The caller's deadline is honoured too.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = e.p.Transactions(ctx, e.conn, providers.TransactionRequest{Today: e.today()})
	wantClass(t, err, resilience.Unavailable)
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("timeouts took %s", d)
	}
}
