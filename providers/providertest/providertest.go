// Package providertest is the conformance suite every provider adapter
// passes against the simulator (providers/sim) over real HTTP: accounts, a
// full transaction walk, idempotent re-syncs, pending transactions posting,
// and the classification of every simulated fault, through the shared
// resilience layer where breakers are involved.
//
// An adapter package calls Run from a test:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Suite{
//			Provider: "mercury",
//			New:      func(c *http.Client) providers.Provider { return mercury.New(c) },
//			BaseURL:  func(root string) string { return root + "/api/v1" },
//			LoginCodes: []string{"UNAUTHORIZED"},
//		})
//	}
package providertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
)

// Suite describes the adapter under test.
type Suite struct {
	// Provider is the provider name, as the simulator and domain know it.
	Provider string
	// New builds the adapter under test around client.
	New func(client *http.Client) providers.Provider
	// BaseURL maps the simulator's root URL to the connection's base URL
	// (default: the root itself).
	BaseURL func(root string) string
	// LoginCodes are the Codes the adapter may report for the simulator's
	// login_required fault (e.g. ITEM_LOGIN_REQUIRED); empty: any.
	LoginCodes []string
	// Outflow tells whether tx must be negative; known is false when the
	// transaction's direction cannot be told (default: by the simulator's
	// merchant names, see OutflowByName).
	Outflow func(tx providers.Transaction) (outflow, known bool)
	// Investments reports that the provider offers holdings and investment
	// transactions (otherwise both must return ErrNotSupported).
	Investments bool
	// InstitutionDown and Mutation enable the Plaid-only faults.
	InstitutionDown bool
	Mutation        bool
	// AdvanceDays is how far the clock moves for pending transactions to
	// post (default 5).
	AdvanceDays int
	// Transactions is the history size of the walked connection (default
	// 1200, enough for several pages everywhere).
	Transactions int
}

// Start is the simulator's first day in every test: a fixed past date, so
// that runs are reproducible and no date is in the real future.
var Start = time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)

func (s Suite) withDefaults() Suite {
	if s.BaseURL == nil {
		s.BaseURL = func(root string) string { return root }
	}
	if s.Outflow == nil {
		s.Outflow = OutflowByName
	}
	if s.AdvanceDays == 0 {
		s.AdvanceDays = 5
	}
	if s.Transactions == 0 {
		s.Transactions = 1200
	}
	return s
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, s Suite) {
	t.Helper()
	s = s.withDefaults()
	t.Run("Accounts", func(t *testing.T) { t.Parallel(); testAccounts(t, s) })
	t.Run("Walk", func(t *testing.T) { t.Parallel(); testWalk(t, s) })
	t.Run("Resync", func(t *testing.T) { t.Parallel(); testResync(t, s) })
	t.Run("PendingPosts", func(t *testing.T) { t.Parallel(); testPendingPosts(t, s) })
	t.Run("Investments", func(t *testing.T) { t.Parallel(); testInvestments(t, s) })
	t.Run("Fault/Outage", func(t *testing.T) { t.Parallel(); testOutage(t, s) })
	t.Run("Fault/RateLimit", func(t *testing.T) { t.Parallel(); testRateLimit(t, s) })
	t.Run("Fault/LoginRequired", func(t *testing.T) { t.Parallel(); testLoginRequired(t, s) })
	t.Run("Fault/Malformed", func(t *testing.T) { t.Parallel(); testMalformed(t, s) })
	t.Run("Fault/Latency", func(t *testing.T) { t.Parallel(); testLatency(t, s) })
	if s.InstitutionDown {
		t.Run("Fault/InstitutionDown", func(t *testing.T) { t.Parallel(); testInstitutionDown(t, s) })
	}
	if s.Mutation {
		t.Run("Fault/Mutation", func(t *testing.T) { t.Parallel(); testMutation(t, s) })
		t.Run("Fault/AdvanceMidLoop", func(t *testing.T) { t.Parallel(); testAdvanceMidLoop(t, s) })
	}
}

// env is one simulator served over HTTP and one connection to it.
type env struct {
	t    *testing.T
	s    Suite
	sim  *sim.Simulator
	srv  *httptest.Server
	p    providers.Provider
	conn providers.Connection
}

// newEnv starts a simulator and builds the adapter with a client whose
// timeout is timeout (0: 10s).
func newEnv(t *testing.T, s Suite, name string, timeout time.Duration) *env {
	t.Helper()
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	sm := allsim.New(sim.Options{Seed: 42, Start: Start})
	srv := httptest.NewServer(sm)
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: timeout}
	return &env{
		t: t, s: s, sim: sm, srv: srv, p: s.New(client),
		conn: connection(s, srv.URL, name),
	}
}

func connection(s Suite, root, name string) providers.Connection {
	return providers.Connection{
		ID: "conn-" + name, Provider: s.Provider, BaseURL: s.BaseURL(root),
		Credentials: allsim.Credentials(s.Provider, name),
	}
}

// size sets the history size of the env's connection before first use.
func (e *env) size(n int) {
	e.t.Helper()
	key, err := allsim.CredentialKey(e.s.Provider, e.conn.Credentials)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.sim.SetConnection(sim.ConnectionSettings{Provider: e.s.Provider, Credential: key, Transactions: n, HistoryDays: 90}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) fault(mode string, mod func(*sim.Fault)) {
	e.t.Helper()
	f := sim.Fault{Provider: e.s.Provider, Mode: mode}
	if mod != nil {
		mod(&f)
	}
	if err := e.sim.SetFault(f); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) today() domain.Date {
	d, err := domain.ParseDate(e.sim.State().Today)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) accounts(ctx context.Context) providers.AccountSet {
	e.t.Helper()
	set, err := e.p.Accounts(ctx, e.conn)
	if err != nil {
		e.t.Fatalf("Accounts: %v", err)
	}
	return set
}

// sync runs Transactions from cursor until Done, applying every page to st,
// and returns the final cursor and the pages.
func (e *env) sync(ctx context.Context, cursor string, st *Store) (string, []providers.TransactionPage) {
	e.t.Helper()
	var pages []providers.TransactionPage
	for i := 0; ; i++ {
		if i > 10000 {
			e.t.Fatal("sync did not finish in 10000 pages")
		}
		req := providers.TransactionRequest{Cursor: cursor, Today: e.today()}
		if i == 0 { // as the worker does: on a sync's first page only
			req.PendingIDs = st.PendingIDs()
		}
		page, err := e.p.Transactions(ctx, e.conn, req)
		if err != nil {
			e.t.Fatalf("Transactions page %d: %v", i, err)
		}
		st.Apply(page)
		pages = append(pages, page)
		cursor = page.Next
		if page.Done {
			return cursor, pages
		}
	}
}

func describe(tx providers.Transaction) string {
	day := func(d *domain.Date) string {
		if d == nil {
			return "-"
		}
		return d.String()
	}
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s", tx.ProviderID, tx.ProviderAccountID, tx.Status,
		tx.Amount, tx.Currency, day(tx.AuthorizedDate), day(tx.PostedDate), tx.Summary)
}

// SimConnection serves a fresh simulator (seed, providertest.Start) over
// HTTP for the rest of tb and registers one connection of provider named
// name with txs transactions over days: the connection (its base URL the
// server's plus basePath) and the server's client.
func SimConnection(tb testing.TB, provider, name, basePath string, seed int64, txs, days int) (providers.Connection, *http.Client) {
	tb.Helper()
	sm := allsim.New(sim.Options{Seed: seed, Start: Start})
	srv := httptest.NewServer(sm)
	tb.Cleanup(srv.Close)
	creds := allsim.Credentials(provider, name)
	key, err := allsim.CredentialKey(provider, creds)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: provider, Credential: key, Transactions: txs, HistoryDays: days}); err != nil {
		tb.Fatal(err)
	}
	return providers.Connection{Provider: provider, BaseURL: srv.URL + basePath, Credentials: creds}, srv.Client()
}
