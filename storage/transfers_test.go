package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// txID returns the stored id of the user's transaction providerID.
func (su *scenarioUser) txID(t *testing.T, providerID string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := su.f.Pool.QueryRow(context.Background(), `SELECT id FROM transactions WHERE user_id = $1 AND provider_id = $2`,
		su.user, providerID).Scan(&id); err != nil {
		t.Fatalf("transaction %s: %v", providerID, err)
	}
	return id
}

// transferID returns the id of the user's transfer whose outflow is
// providerID.
func (su *scenarioUser) transferID(t *testing.T, providerID string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	if err := su.f.Pool.QueryRow(context.Background(), `SELECT tr.id FROM transfers tr
		JOIN transactions o ON o.id = tr.outflow_transaction_id WHERE tr.user_id = $1 AND o.provider_id = $2`,
		su.user, providerID).Scan(&id); err != nil {
		t.Fatalf("transfer of %s: %v", providerID, err)
	}
	return id
}

// smallScenario is a checking and a savings account at one bank and a
// checking account at another, with the transactions given.
func smallScenario(txs ...simkit.ScenarioTransaction) simkit.TransferScenario {
	return simkit.TransferScenario{
		Accounts: []simkit.ScenarioAccount{
			{Key: "chk", Connection: 0, Name: "Checking", Mask: "1111", Type: "depository", Subtype: "checking", Currency: "USD"},
			{Key: "sav", Connection: 0, Name: "Savings", Mask: "2222", Type: "depository", Subtype: "savings", Currency: "USD"},
			{Key: "chk2", Connection: 1, Name: "Other Checking", Mask: "3333", Type: "depository", Subtype: "checking", Currency: "USD"},
		},
		Transactions: txs,
	}
}

// TestRejectedTransferNeverComesBack unpairs a detected transfer and runs
// ten re-syncs that write every row again (so detection sees them all) and
// a detection pass over every row: the pair never comes back, and the
// other pairs stay.
func TestRejectedTransferNeverComesBack(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	su := newScenarioUser(t, f, simkit.NewTransferScenario(7, 1))
	su.firstSyncs(t)
	before := su.pairs(t)
	if len(before) < 5 {
		t.Fatalf("only %d pairs detected", len(before))
	}
	rejected := before[0]
	out := strings.Split(rejected, ">")[0]
	if err := f.St.DeleteTransfer(ctx, storage.Scope{UserID: su.user}, su.transferID(t, out)); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		su.resync(t, true)
		if got := su.pairs(t); slices.Contains(got, rejected) || len(got) != len(before)-1 {
			t.Fatalf("re-sync %d: pairs %v; the rejected %s must stay unpaired and the others stay", i+1, got, rejected)
		}
	}
	var all []uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT array_agg(id) FROM transactions WHERE user_id = $1`, su.user).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if n, err := f.St.DetectTransfers(ctx, su.user, all); err != nil || n != 0 {
		t.Fatalf("a detection pass paired %d (%v)", n, err)
	}
	// The user may pair it by hand, which forgets the rejection.
	ids := strings.Split(rejected, ">")
	tr, err := f.St.CreateTransfer(ctx, storage.Scope{UserID: su.user}, su.txID(t, ids[0]), su.txID(t, ids[1]))
	if err != nil || tr.Source != "user" || tr.Confidence != 1 {
		t.Fatalf("pair by hand: %+v, %v", tr, err)
	}
}

// TestTransferFollowsPendingToPosted pairs a pending outflow, then posts
// it: the pair moves to the posted transaction, and stays when the pending
// one is removed; removing the inflow drops the pair.
func TestTransferFollowsPendingToPosted(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	su := newScenarioUser(t, f, smallScenario(
		simkit.ScenarioTransaction{ID: "p1", Account: "chk", Amount: -25000, Currency: "USD", Day: 3, Description: "XFER TO SAVINGS", Pending: true, PostsAs: "t1"},
		simkit.ScenarioTransaction{ID: "t1", Account: "chk", Amount: -25000, Currency: "USD", Day: 4, Description: "XFER TO SAVINGS", Replaces: "p1"},
		simkit.ScenarioTransaction{ID: "in1", Account: "sav", Amount: 25000, Currency: "USD", Day: 4, Description: "XFER FROM CHECKING"},
	))
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return x.Replaces == "" }, nil, false)
	if got := su.pairs(t); !slices.Equal(got, []string{"p1>in1"}) {
		t.Fatalf("pending pair: %v", got)
	}
	tr := su.transferID(t, "p1")
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return x.ID == "t1" }, nil, false)
	if got := su.pairs(t); !slices.Equal(got, []string{"t1>in1"}) || su.transferID(t, "t1") != tr {
		t.Fatalf("after posting: %v", got)
	}
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return false }, []string{"p1"}, false)
	if got := su.pairs(t); !slices.Equal(got, []string{"t1>in1"}) {
		t.Fatalf("after the pending row's removal: %v", got)
	}
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return false }, []string{"in1"}, false)
	if got := su.pairs(t); len(got) != 0 {
		t.Fatalf("after the inflow's removal: %v", got)
	}
}

// TestTransferAmbiguityAndRefunds: two equal transfers on one day stay
// unpaired, a refund in the purchase's account is never a transfer, and a
// transfer across connections pairs.
func TestTransferAmbiguityAndRefunds(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	su := newScenarioUser(t, f, smallScenario(
		simkit.ScenarioTransaction{ID: "o1", Account: "chk", Amount: -50000, Currency: "USD", Day: 3, Description: "TRANSFER"},
		simkit.ScenarioTransaction{ID: "o2", Account: "chk", Amount: -50000, Currency: "USD", Day: 3, Description: "TRANSFER"},
		simkit.ScenarioTransaction{ID: "i1", Account: "sav", Amount: 50000, Currency: "USD", Day: 3, Description: "TRANSFER"},
		simkit.ScenarioTransaction{ID: "i2", Account: "sav", Amount: 50000, Currency: "USD", Day: 3, Description: "TRANSFER"},
		simkit.ScenarioTransaction{ID: "buy", Account: "chk", Amount: -4599, Currency: "USD", Day: 5, Description: "STORE"},
		simkit.ScenarioTransaction{ID: "refund", Account: "chk", Amount: 4599, Currency: "USD", Day: 6, Description: "REFUND STORE"},
		simkit.ScenarioTransaction{ID: "ach-out", Account: "chk2", Amount: -123456, Currency: "USD", Day: 8, Description: "ACH DEBIT"},
		simkit.ScenarioTransaction{ID: "ach-in", Account: "chk", Amount: 123456, Currency: "USD", Day: 10, Description: "ACH CREDIT 3333"},
	))
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return true }, nil, false)
	if got := su.pairs(t); !slices.Equal(got, []string{"ach-out>ach-in"}) {
		t.Fatalf("pairs %v, want only ach-out>ach-in", got)
	}
}

// TestCrossCurrencyTransferNeedsTheMask: across currencies, an outflow
// that names the receiving account by its mask pairs; one that names it
// only by a name many accounts share ("savings") does not, however well
// both sides say transfer, and neither does one whose inflow says nothing.
func TestCrossCurrencyTransferNeedsTheMask(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	sc := smallScenario(
		simkit.ScenarioTransaction{ID: "by-mask", Account: "chk", Amount: -100000, Currency: "USD", Day: 3, Description: "INTL WIRE TRANSFER TO ...4444"},
		simkit.ScenarioTransaction{ID: "in-mask", Account: "gbp", Amount: 78912, Currency: "GBP", Day: 4, Description: "INCOMING TRANSFER"},
		simkit.ScenarioTransaction{ID: "by-name", Account: "chk", Amount: -61367, Currency: "USD", Day: 10, Description: "ONLINE TRANSFER TO SAVINGS"},
		simkit.ScenarioTransaction{ID: "in-name", Account: "gbp", Amount: 83213, Currency: "GBP", Day: 10, Description: "TRANSFER FROM MAIN"},
		simkit.ScenarioTransaction{ID: "mute-out", Account: "chk", Amount: -50000, Currency: "USD", Day: 20, Description: "WIRE TRANSFER TO ...4444"},
		simkit.ScenarioTransaction{ID: "mute-in", Account: "gbp", Amount: 39456, Currency: "GBP", Day: 20, Description: "CREDIT"},
	)
	sc.Accounts = append(sc.Accounts, simkit.ScenarioAccount{Key: "gbp", Connection: 1, Name: "Savings", Mask: "4444",
		Type: "depository", Subtype: "savings", Currency: "GBP"})
	su := newScenarioUser(t, f, sc)
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return true }, nil, false)
	if got := su.pairs(t); !slices.Equal(got, []string{"by-mask>in-mask"}) {
		t.Fatalf("pairs %v, want only by-mask>in-mask", got)
	}
}

// TestCreateTransferChecks: a manual pair must be an outflow and an inflow
// of two of the scope's accounts, neither paired yet.
func TestCreateTransferChecks(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	su := newScenarioUser(t, f, smallScenario(
		simkit.ScenarioTransaction{ID: "out", Account: "chk", Amount: -1000, Currency: "USD", Day: 1, Description: "A"},
		simkit.ScenarioTransaction{ID: "out2", Account: "chk", Amount: -2000, Currency: "USD", Day: 1, Description: "B"},
		simkit.ScenarioTransaction{ID: "in", Account: "sav", Amount: 3000, Currency: "USD", Day: 20, Description: "C"},
		simkit.ScenarioTransaction{ID: "in-same", Account: "chk", Amount: 3000, Currency: "USD", Day: 20, Description: "D"},
	))
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return true }, nil, false)
	sc := storage.Scope{UserID: su.user}
	invalid := func(out, in uuid.UUID) {
		t.Helper()
		var e *storage.TransferInvalidError
		if _, err := f.St.CreateTransfer(ctx, sc, out, in); !errors.As(err, &e) {
			t.Errorf("pair %s, %s: %v, want TransferInvalidError", out, in, err)
		}
	}
	out, out2, in, same := su.txID(t, "out"), su.txID(t, "out2"), su.txID(t, "in"), su.txID(t, "in-same")
	invalid(in, out)
	invalid(out, same)
	invalid(out, uuid.New())
	other := storage.Scope{UserID: f.User(domain.PlanPro, true).ID}
	if _, err := f.St.CreateTransfer(ctx, other, out, in); err == nil {
		t.Error("another user paired the transactions")
	}
	tr, err := f.St.CreateTransfer(ctx, sc, out, in)
	if err != nil || tr.Amount.String() != "10" || tr.InflowAmount.String() != "30" || tr.Source != "user" {
		t.Fatalf("pair: %+v, %v", tr, err)
	}
	if _, err := f.St.CreateTransfer(ctx, sc, out2, in); !errors.Is(err, storage.ErrTransferConflict) {
		t.Errorf("pair with a paired inflow: %v, want ErrTransferConflict", err)
	}
}

// TestTransferCrowdedAmountsStayUnpaired: a dozen equal outflows and a
// dozen equal inflows of two accounts on one day pair none (each row has
// more candidates than detection reads, and none stands out), while a
// transfer beside them pairs.
func TestTransferCrowdedAmountsStayUnpaired(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	txs := []simkit.ScenarioTransaction{
		{ID: "x-out", Account: "chk", Amount: -123456, Currency: "USD", Day: 6, Description: "TRANSFER TO SAVINGS"},
		{ID: "x-in", Account: "sav", Amount: 123456, Currency: "USD", Day: 6, Description: "TRANSFER FROM CHECKING"},
	}
	// Among the crowd, one pair says transfer on both sides: its evidence
	// would win over the other candidates, but with more than
	// maxTransferCandidates candidates each it stays unpaired all the same.
	txs = append(txs,
		simkit.ScenarioTransaction{ID: "out-0", Account: "chk", Amount: -2500, Currency: "USD", Day: 5, Description: "TRANSFER TO SAVINGS"},
		simkit.ScenarioTransaction{ID: "in-0", Account: "sav", Amount: 2500, Currency: "USD", Day: 5, Description: "TRANSFER FROM CHECKING"})
	for i := 1; i < 12; i++ {
		txs = append(txs,
			simkit.ScenarioTransaction{ID: fmt.Sprintf("out-%d", i), Account: "chk", Amount: -2500, Currency: "USD", Day: 5, Description: "GROCERY"},
			simkit.ScenarioTransaction{ID: fmt.Sprintf("in-%d", i), Account: "sav", Amount: 2500, Currency: "USD", Day: 5, Description: "DEPOSIT"})
	}
	su := newScenarioUser(t, f, smallScenario(txs...))
	su.opts.SkipTransfers = true
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return true }, nil, false)
	var all []uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT array_agg(id) FROM transactions WHERE user_id = $1`, su.user).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if _, err := f.St.DetectTransfers(ctx, su.user, all); err != nil {
		t.Fatal(err)
	}
	if got := su.pairs(t); !slices.Equal(got, []string{"x-out>x-in"}) {
		t.Fatalf("pairs %v, want only x-out>x-in", got)
	}
}

// TestFreeCandidatesLeaveOutPairedAndRejected holds the window search's
// check of its candidates: a pair with a row already in a transfer, or
// that the user rejected (either way round), is left out; the others
// stay, in order.
func TestFreeCandidatesLeaveOutPairedAndRejected(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := f.User("pro", false).ID
	id := func() uuid.UUID { return uuid.New() }
	paired, partner, rejOut, rejIn := id(), id(), id(), id()
	if _, err := pool.Exec(ctx, `INSERT INTO transfers (user_id, outflow_transaction_id, inflow_transaction_id, outflow_account_id,
			inflow_account_id, date, amount, currency, inflow_amount, inflow_currency, confidence, source)
		VALUES ($1, $2, $3, $4, $5, DATE '2000-01-01' + 100, 10, 'USD', 10, 'USD', 1, 'user')`,
		user, paired, partner, id(), id()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO transfer_rejections (user_id, outflow_transaction_id, inflow_transaction_id)
		VALUES ($1, $2, $3)`, user, rejOut, rejIn); err != nil {
		t.Fatal(err)
	}
	a, b, c, d := id(), id(), id(), id()
	pairs := [][2]uuid.UUID{{a, b}, {paired, c}, {c, partner}, {rejOut, rejIn}, {rejIn, rejOut}, {c, d}, {rejOut, d}}
	got, err := storage.FreeCandidatePairs(ctx, pool, user, pairs)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]uuid.UUID{{a, b}, {c, d}, {rejOut, d}}; !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
}

// TestTransferPairedFarApartIsNotACandidate: a row the user paired by hand
// with a row a month away is no candidate of a later row, however far from
// its window the pair's date lies; the later row pairs with the one free
// candidate left.
func TestTransferPairedFarApartIsNotACandidate(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	su := newScenarioUser(t, f, smallScenario(
		simkit.ScenarioTransaction{ID: "o", Account: "chk", Amount: -10000, Currency: "USD", Day: 1, Description: "CHECK 12"},
		simkit.ScenarioTransaction{ID: "i", Account: "sav", Amount: 10000, Currency: "USD", Day: 30, Description: "DEPOSIT"},
		simkit.ScenarioTransaction{ID: "n", Account: "chk2", Amount: -10000, Currency: "USD", Day: 30, Description: "WIRE"},
		simkit.ScenarioTransaction{ID: "i2", Account: "sav", Amount: 10000, Currency: "USD", Day: 31, Description: "DEPOSIT"},
	))
	su.opts.SkipTransfers = true
	su.sync(t, func(*simkit.ScenarioTransaction) bool { return true }, nil, false)
	if _, err := f.St.CreateTransfer(ctx, storage.Scope{UserID: su.user}, su.txID(t, "o"), su.txID(t, "i")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.St.DetectTransfers(ctx, su.user, []uuid.UUID{su.txID(t, "n"), su.txID(t, "i2")}); err != nil {
		t.Fatal(err)
	}
	if got, want := su.pairs(t), []string{"n>i2", "o>i"}; !slices.Equal(got, want) {
		t.Fatalf("pairs %v, want %v", got, want)
	}
}

// TestTransferCrossCandidateWeighsItsOwnCandidates: an inflow that two
// equal outflows of its own currency fit alike stays unpaired when a later
// sync brings a cross-currency outflow that names its account: that
// outflow fits it by less than the margin over the two it already had.
func TestTransferCrossCandidateWeighsItsOwnCandidates(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	su := newScenarioUser(t, f, simkit.TransferScenario{
		Accounts: crossAccounts(),
		Transactions: []simkit.ScenarioTransaction{
			{ID: "x", Account: "eur", Amount: 10000, Currency: "EUR", Day: 10, Description: "TRANSFER FROM 1111"},
			{ID: "y1", Account: "eur2", Amount: -10000, Currency: "EUR", Day: 10, Description: "TRANSFER TO 4444"},
			{ID: "y2", Account: "eur3", Amount: -10000, Currency: "EUR", Day: 10, Description: "TRANSFER TO 4444"},
			{ID: "c", Account: "chk", Amount: -11000, Currency: "USD", Day: 10, Description: "TRANSFER TO 4444"},
		},
	})
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return x.ID != "c" }, nil, false)
	if got := su.pairs(t); len(got) != 0 {
		t.Fatalf("after the first sync: pairs %v, want none (x fits y1 and y2 alike)", got)
	}
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return x.ID == "c" }, nil, false)
	if got := su.pairs(t); len(got) != 0 {
		t.Fatalf("after c's sync: pairs %v, want none", got)
	}
}

// TestTransferCrossCandidateFoundAsACandidatesCandidate: the same as
// TestTransferCrossCandidateWeighsItsOwnCandidates, but the inflow x is
// first met as the candidate of a candidate (r2's candidate o, four days
// from it) in the batch that brings the cross-currency outflow r: it is
// still weighed against its own candidates, and stays unpaired.
func TestTransferCrossCandidateFoundAsACandidatesCandidate(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	su := newScenarioUser(t, f, simkit.TransferScenario{
		Accounts: append(crossAccounts(),
			simkit.ScenarioAccount{Key: "eur4", Connection: 0, Name: "Euro Four", Mask: "7777", Type: "depository", Subtype: "checking", Currency: "EUR"}),
		Transactions: []simkit.ScenarioTransaction{
			{ID: "o", Account: "eur2", Amount: -10000, Currency: "EUR", Day: 3, Description: "CARD"},
			{ID: "x", Account: "eur", Amount: 10000, Currency: "EUR", Day: 8, Description: "TRANSFER FROM 1111"},
			{ID: "o2", Account: "eur2", Amount: -10000, Currency: "EUR", Day: 8, Description: "TRANSFER TO 4444"},
			{ID: "o3", Account: "eur3", Amount: -10000, Currency: "EUR", Day: 8, Description: "TRANSFER TO 4444"},
			{ID: "r2", Account: "eur4", Amount: 10000, Currency: "EUR", Day: 0, Description: "DEPOSIT"},
			{ID: "r", Account: "chk", Amount: -11000, Currency: "USD", Day: 9, Description: "TRANSFER TO 4444"},
		},
	})
	later := func(x *simkit.ScenarioTransaction) bool { return x.ID == "r" || x.ID == "r2" }
	su.sync(t, func(x *simkit.ScenarioTransaction) bool { return !later(x) }, nil, false)
	if got := su.pairs(t); len(got) != 0 {
		t.Fatalf("after the first sync: pairs %v, want none (x fits o2 and o3 alike)", got)
	}
	su.sync(t, later, nil, false)
	if got := su.pairs(t); len(got) != 0 {
		t.Fatalf("after r's sync: pairs %v, want none", got)
	}
}

// crossAccounts are a user's USD checking account (mask 1111, connection
// 0) and three EUR accounts of another connection: "eur" (mask 4444),
// "eur2" and "eur3".
func crossAccounts() []simkit.ScenarioAccount {
	return []simkit.ScenarioAccount{
		{Key: "chk", Connection: 0, Name: "Checking", Mask: "1111", Type: "depository", Subtype: "checking", Currency: "USD"},
		{Key: "eur", Connection: 1, Name: "Euro Main", Mask: "4444", Type: "depository", Subtype: "checking", Currency: "EUR"},
		{Key: "eur2", Connection: 1, Name: "Euro Two", Mask: "5555", Type: "depository", Subtype: "savings", Currency: "EUR"},
		{Key: "eur3", Connection: 1, Name: "Euro Three", Mask: "6666", Type: "depository", Subtype: "savings", Currency: "EUR"},
	}
}

// TestMarkingDeletedDropsTransfersOnce: an UPDATE that marks a paired row
// deleted drops its transfer, whichever side it is (migration 00036);
// an UPDATE of a row that was deleted already leaves a transfer on it
// alone, as the row trigger before it did.
func TestMarkingDeletedDropsTransfersOnce(t *testing.T) {
	ctx := context.Background()
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	u := f.User(domain.PlanPro, true)
	conn := f.Connection(u.ID, "plaid", domain.ConnectionActive)
	chk, sav := f.Account(u.ID, conn, "plaid", "Checking"), f.Account(u.ID, conn, "plaid", "Savings")
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	outs := f.Transactions(u.ID, conn, chk, "plaid", []storagetest.Tx{{Amount: "-50.00", Date: day}, {Amount: "-60.00", Date: day}, {Amount: "-70.00", Date: day}})
	ins := f.Transactions(u.ID, conn, sav, "plaid", []storagetest.Tx{{Amount: "50.00", Date: day}, {Amount: "60.00", Date: day}, {Amount: "70.00", Date: day}})
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The third row is deleted before its pair is stored (as a race
	// between a removal and detection could leave it).
	exec(`UPDATE transactions SET status = 'deleted' WHERE id = $1`, outs[2])
	for i := range outs {
		exec(`INSERT INTO transfers (user_id, outflow_transaction_id, inflow_transaction_id, outflow_account_id, inflow_account_id,
			date, amount, currency, inflow_amount, inflow_currency, confidence, source, reasons)
			VALUES ($1, $2, $3, $4, $5, $6, 1, 'USD', 1, 'USD', 1, 'user', '{}')`, u.ID, outs[i], ins[i], chk, sav, day)
	}
	exec(`UPDATE transactions SET status = 'deleted' WHERE id = ANY($1)`, []uuid.UUID{outs[0], ins[1]})
	exec(`UPDATE transactions SET summary = 'renamed' WHERE id = $1`, outs[2])
	var left []uuid.UUID
	rows, err := pool.Query(ctx, `SELECT outflow_transaction_id FROM transfers WHERE user_id = $1`, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if left, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != outs[2] {
		t.Fatalf("transfers left %v, want only the one on the row deleted before (%v)", left, outs[2])
	}
}
