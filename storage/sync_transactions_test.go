package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// writerEnv is a user with one connection and account, ready for synced
// transactions.
type writerEnv struct {
	f       *storagetest.Fixtures
	conn    domain.BankConnection
	account uuid.UUID
}

func newWriterEnv(t *testing.T) *writerEnv {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	f := storagetest.NewFixtures(t, pool)
	u := f.User(domain.PlanPro, true)
	connID := f.Connection(u.ID, "plaid", domain.ConnectionActive)
	conn := domain.BankConnection{ID: connID, UserID: u.ID, Provider: "plaid"}
	return &writerEnv{f: f, conn: conn, account: f.Account(u.ID, connID, "plaid", "Checking")}
}

// synced returns n posted transactions p0, p1, … of amount -1.25.
func (e *writerEnv) synced(n int) []domain.Transaction {
	day := domain.DateOf(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	txs := make([]domain.Transaction, n)
	for i := range txs {
		txs[i] = domain.Transaction{AccountID: e.account, ProviderID: fmt.Sprintf("p%d", i), Status: domain.TxPosted,
			Summary: "Coffee", Amount: domain.MustMoney("-1.25"), Currency: "USD", PostedDate: &day, CreatedAt: day.Time}
	}
	return txs
}

// reported returns synced(n) as the provider reports them, of the
// provider account "a1".
func (e *writerEnv) reported(n int) []domain.ReportedTransaction {
	txs := make([]domain.ReportedTransaction, n)
	for i, t := range e.synced(n) {
		txs[i] = domain.ReportedTransaction{ProviderAccountID: "a1", ProviderID: t.ProviderID, Status: t.Status,
			Summary: t.Summary, Amount: t.Amount, Currency: t.Currency, PostedDate: t.PostedDate, CreatedAt: t.CreatedAt}
	}
	return txs
}

// write runs fn with a writer in one committed database transaction.
func (e *writerEnv) write(t *testing.T, fn func(w *storage.TransactionWriter) error) error {
	t.Helper()
	return e.f.St.InTx(context.Background(), func(tx pgx.Tx) error {
		return fn(storage.NewTransactionWriter(tx, e.conn))
	})
}

func (e *writerEnv) count(t *testing.T, where string) int {
	t.Helper()
	var n int
	err := e.f.Pool.QueryRow(context.Background(), `SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND `+where, e.conn.ID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInsertNewFallsBackWhenARowIsStored(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	if err := e.write(t, func(w *storage.TransactionWriter) error {
		ids, ok, err := w.InsertNewRows(ctx, e.synced(3))
		if err == nil && (!ok || len(ids) != 3) {
			err = fmt.Errorf("first insert: ok=%v, %d ids", ok, len(ids))
		}
		if got := w.Changes(); err == nil && got != (storage.RowChanges{Added: 3}) {
			err = fmt.Errorf("first insert counted %+v", got)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Five rows of which three are stored: nothing is copied, the caller is
	// told to upsert, and the batch's transaction goes on working.
	txs := e.synced(5)
	txs[0].Amount = domain.MustMoney("-2.50")
	err := e.write(t, func(w *storage.TransactionWriter) error {
		if _, ok, err := w.InsertNewRows(ctx, txs); err != nil || ok {
			return fmt.Errorf("insert over stored rows: ok=%v, err=%v", ok, err)
		}
		changed, err := w.Upsert(ctx, txs, []string{"p1"})
		if err == nil && len(changed) != 3 {
			err = fmt.Errorf("upsert changed %d rows, want 3 (one amount, two new)", len(changed))
		}
		if got := w.Changes(); err == nil && got != (storage.RowChanges{Added: 2, Modified: 1, Removed: 1}) {
			err = fmt.Errorf("upsert counted %+v, want 2 added, 1 modified, 1 removed", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `true`); n != 5 {
		t.Fatalf("%d rows stored, want 5", n)
	}
	if n := e.count(t, `provider_id = 'p0' AND amount = -2.5`); n != 1 {
		t.Fatal("changed amount not stored")
	}
}

func TestUpsertKeepsTheLastOfARepeatedProviderID(t *testing.T) {
	e := newWriterEnv(t)
	txs := e.synced(2)
	again := txs[0]
	again.Amount = domain.MustMoney("-9.99")
	txs = append(txs, again)
	if err := e.write(t, func(w *storage.TransactionWriter) error {
		_, err := w.Upsert(context.Background(), txs, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `true`); n != 2 {
		t.Fatalf("%d rows stored, want 2", n)
	}
	if n := e.count(t, `provider_id = 'p0' AND amount = -9.99`); n != 1 {
		t.Fatal("the later of two rows with one provider id did not win")
	}
}

func TestUpsertSkipsUnchangedRows(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	for i, want := range []int{4, 0} {
		if err := e.write(t, func(w *storage.TransactionWriter) error {
			changed, err := w.Upsert(ctx, e.synced(4), nil)
			if err == nil && len(changed) != want {
				err = fmt.Errorf("pass %d: %d rows changed, want %d", i, len(changed), want)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWritingForADeletedAccountFails(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	if _, err := e.f.Pool.Exec(ctx, `DELETE FROM accounts WHERE id = $1`, e.account); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(w *storage.TransactionWriter) error{
		"insert": func(w *storage.TransactionWriter) error { _, _, err := w.InsertNewRows(ctx, e.synced(1)); return err },
		"upsert": func(w *storage.TransactionWriter) error { _, err := w.Upsert(ctx, e.synced(1), nil); return err },
	} {
		if err := e.write(t, write); !errors.Is(err, storage.ErrAccountGone) {
			t.Fatalf("%s for a deleted account: %v, want ErrAccountGone", name, err)
		}
	}
	if n := e.count(t, `true`); n != 0 {
		t.Fatalf("%d rows stored for a deleted account", n)
	}
}

func TestDeletingAnAccountOrItsOwnersDeletesItsTransactions(t *testing.T) {
	for _, del := range []string{
		`DELETE FROM accounts WHERE id = $1`,
		`DELETE FROM bank_connections WHERE id = (SELECT bank_connection_id FROM accounts WHERE id = $1)`,
		`DELETE FROM users WHERE id = (SELECT user_id FROM accounts WHERE id = $1)`,
	} {
		e := newWriterEnv(t)
		if err := e.write(t, func(w *storage.TransactionWriter) error {
			_, _, err := w.InsertNewRows(context.Background(), e.synced(3))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.f.Pool.Exec(context.Background(), del, e.account); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := e.f.Pool.QueryRow(context.Background(), `SELECT count(*) FROM transactions WHERE account_id = $1`, e.account).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%s: %d transactions left", del, n)
		}
	}
}

func TestCopiedColumnsReadBackExactly(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	cat := e.f.Category(e.conn.UserID, "Food", "Living")
	str := func(s string) *string { return &s }
	money := func(s string) *domain.Money { m := domain.MustMoney(s); return &m }
	oldDay := domain.DateOf(time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC))
	newDay := domain.DateOf(time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC))
	postedAt := time.Date(2026, 2, 28, 13, 4, 5, 678901000, time.UTC)
	full := domain.Transaction{AccountID: e.account, ProviderID: "full", Status: domain.TxPosted, Summary: "Café – 東京",
		Amount: domain.MustMoney("-1234567890.1234"), Currency: "EUR", AuthorizedDate: &oldDay, PostedDate: &newDay,
		MerchantName: str("Café"), CategoryID: &cat, Fees: money("0.0001"), FeeType: str("fx"), NetAmount: money("-99999999999999.99"),
		SubAccount: str("sub"), PaymentChannel: str("online"), CheckNumber: str("0042"), OriginalDescription: str("CAFE TOKYO"),
		Type: str("card"), PendingProviderID: str("pend"), CreatedAt: postedAt.Add(-time.Hour), PostedAt: &postedAt}
	bare := domain.Transaction{AccountID: e.account, ProviderID: "bare", Status: domain.TxPending, Amount: domain.MustMoney("0"),
		Currency: "JPY", AuthorizedDate: &newDay, CreatedAt: postedAt}
	// Every column as PostgreSQL prints it (timestamps in UTC), NULL as NULL.
	const read = `SELECT concat_ws('|',
		coalesce(summary::text, 'NULL'), coalesce(amount::text, 'NULL'), coalesce(currency::text, 'NULL'),
		coalesce(authorized_date::text, 'NULL'), coalesce(posted_date::text, 'NULL'), coalesce(source::text, 'NULL'),
		coalesce(provider::text, 'NULL'), coalesce(merchant_name::text, 'NULL'), coalesce(provider_merchant_name::text, 'NULL'),
		coalesce(category_id::text, 'NULL'), coalesce(provider_category_id::text, 'NULL'), coalesce(category_source::text, 'NULL'),
		coalesce(fees::text, 'NULL'), coalesce(fee_type::text, 'NULL'), coalesce(net_amount::text, 'NULL'),
		coalesce(sub_account::text, 'NULL'), coalesce(payment_channel::text, 'NULL'), coalesce(check_number::text, 'NULL'),
		coalesce(original_description::text, 'NULL'), coalesce(type::text, 'NULL'), coalesce(pending_provider_id::text, 'NULL'),
		coalesce(created_at::text, 'NULL'), coalesce(posted_at::text, 'NULL'))
		FROM transactions WHERE bank_connection_id = $1 AND provider_id = $2`
	scan := func(pid string) string {
		var row string
		err := e.f.St.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL timezone = 'UTC'"); err != nil {
				return err
			}
			return tx.QueryRow(ctx, read, e.conn.ID, pid).Scan(&row)
		})
		if err != nil {
			t.Fatalf("read %s: %v", pid, err)
		}
		return row
	}
	want := map[string]string{
		"full": "Café – 東京|-1234567890.1234|EUR|1999-12-31|2026-02-28|plaid|plaid|Café|Café|" + cat.String() + "|" + cat.String() +
			"|provider|0.0001|fx|-99999999999999.9900|sub|online|0042|CAFE TOKYO|card|pend|2026-02-28 12:04:05.678901+00|2026-02-28 13:04:05.678901+00",
		"bare": "|0.0000|JPY|2026-02-28|NULL|plaid|plaid|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|2026-02-28 13:04:05.678901+00|NULL",
	}
	for _, path := range []string{"insert", "upsert"} {
		if _, err := e.f.Pool.Exec(ctx, `DELETE FROM transactions WHERE bank_connection_id = $1`, e.conn.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.write(t, func(w *storage.TransactionWriter) error {
			if path == "insert" {
				_, _, err := w.InsertNewRows(ctx, []domain.Transaction{full, bare})
				return err
			}
			_, err := w.Upsert(ctx, []domain.Transaction{full, bare}, nil)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for pid, w := range want {
			if got := scan(pid); got != w {
				t.Errorf("%s %s:\n got %s\nwant %s", path, pid, got, w)
			}
		}
	}
}

func TestDigestsRecogniseStoredRowsAndAreClearedByOtherChanges(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	upsert := func(txs []domain.Transaction) []uuid.UUID {
		t.Helper()
		var changed []uuid.UUID
		if err := e.write(t, func(w *storage.TransactionWriter) error {
			var err error
			changed, err = w.Upsert(ctx, txs, nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return changed
	}
	if err := e.write(t, func(w *storage.TransactionWriter) error {
		_, _, err := w.InsertNewRows(ctx, e.synced(3))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `sync_hash IS NULL`); n != 0 {
		t.Fatalf("%d rows copied in without a digest", n)
	}
	if changed := upsert(e.synced(3)); len(changed) != 0 {
		t.Fatalf("rows copied in are rewritten when sent again: %d changed", len(changed))
	}

	// Rows stored without a digest (before digests existed) are compared
	// in full, not rewritten, and get their digest.
	if _, err := e.f.Pool.Exec(ctx, `UPDATE transactions SET sync_hash = NULL WHERE bank_connection_id = $1`, e.conn.ID); err != nil {
		t.Fatal(err)
	}
	if changed := upsert(e.synced(3)); len(changed) != 0 {
		t.Fatalf("rows without a digest rewritten: %d changed", len(changed))
	}
	if n := e.count(t, `sync_hash IS NULL`); n != 0 {
		t.Fatalf("%d rows still without a digest", n)
	}

	// A change made outside the sync clears the digest, so the same row sent
	// again is compared in full and restored.
	if err := e.f.St.InTx(ctx, func(tx pgx.Tx) error {
		n, err := storage.MarkTransactionsDeleted(ctx, tx, e.conn.ID, []string{"p1", "unknown"})
		if err == nil && n != 1 {
			t.Errorf("marked %d rows deleted, want 1", n)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `provider_id = 'p1' AND status = 'deleted' AND sync_hash IS NULL`); n != 1 {
		t.Fatal("marking a row deleted did not clear its digest")
	}
	if changed := upsert(e.synced(3)); len(changed) != 1 {
		t.Fatalf("%d rows changed, want the deleted one restored", len(changed))
	}
	if n := e.count(t, `status = 'posted' AND sync_hash IS NOT NULL`); n != 3 {
		t.Fatalf("%d rows posted with a digest, want 3", n)
	}
}

func TestUpsertMarksRemovedRowsDeleted(t *testing.T) {
	e := newWriterEnv(t)
	ctx := context.Background()
	if err := e.write(t, func(w *storage.TransactionWriter) error {
		_, err := w.Upsert(ctx, e.synced(3), nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// p0 is removed; p1 is sent again and removed in the same page (the
	// removal comes after it); p3 is new; "never" was never stored.
	page := e.synced(4)[1:]
	if err := e.write(t, func(w *storage.TransactionWriter) error {
		_, err := w.Upsert(ctx, page, []string{"p0", "p1", "never"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for where, want := range map[string]int{
		`status = 'deleted'`: 2,
		`status = 'deleted' AND provider_id IN ('p0', 'p1')`: 2,
		`status = 'posted' AND provider_id IN ('p2', 'p3')`:  2,
		`true`: 4,
	} {
		if n := e.count(t, where); n != want {
			t.Errorf("%s: %d rows, want %d", where, n, want)
		}
	}
	// Removing again changes nothing and reports nothing changed.
	if err := e.write(t, func(w *storage.TransactionWriter) error {
		changed, err := w.Upsert(ctx, nil, []string{"p0"})
		if err == nil && len(changed) != 0 {
			err = fmt.Errorf("%d rows reported changed", len(changed))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
