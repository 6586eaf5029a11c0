//go:build fleet

package fleet

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// rowsOf counts the stored transactions of the user's connections.
func (h *harness) rowsOf(ctx context.Context, db *pgx.Conn, userID string) int {
	h.t.Helper()
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM transactions WHERE user_id = $1`, userID).Scan(&n); err != nil {
		h.t.Fatalf("count transactions: %v", err)
	}
	return n
}

// differingRows counts the rows of either user's transactions that the
// other user's lack, comparing what the provider sent (not ids).
func differingRows(ctx context.Context, t *testing.T, db *pgx.Conn, a, b string) int {
	t.Helper()
	const rows = `SELECT provider_id, status, amount, currency, authorized_date, posted_date, summary, merchant_name, hidden
		FROM transactions WHERE user_id = $%d`
	var n int
	err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM (`+fmt.Sprintf(rows, 1)+` EXCEPT ALL `+fmt.Sprintf(rows, 2)+`) x)
		+ (SELECT count(*) FROM (`+fmt.Sprintf(rows, 2)+` EXCEPT ALL `+fmt.Sprintf(rows, 1)+`) y)`, a, b).Scan(&n)
	if err != nil {
		t.Fatalf("compare stored rows: %v", err)
	}
	return n
}

// testKilledWorker kills the worker running a large first sync with
// SIGKILL and checks that another worker resumes it within 2 minutes and
// that it ends with exactly the rows of an uninterrupted sync of the same
// provider data.
func testKilledWorker(t *testing.T, h *harness) {
	ctx := context.Background()
	db, err := pgx.Connect(ctx, h.db.URL("postgres"))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer db.Close(ctx)

	// Only worker-a runs while the sync starts, so it is the one killed.
	h.Kill("worker-b", syscall.SIGTERM, 30*time.Second)
	rows := fleetRows(t)
	crashUser, crashKey, _ := h.User("crash@example.com", "pro")
	h.bigConnection(crashUser, "crash", rows)
	if took, ok := eventually(2*time.Minute, func() bool { return h.rowsOf(ctx, db, crashUser) > 0 }); !ok {
		t.Fatalf("the first sync stored nothing in %v", took)
	}
	h.Worker("worker-b")
	before := h.rowsOf(ctx, db, crashUser)
	h.Kill("worker-a", syscall.SIGKILL, 10*time.Second)
	killed := time.Now()
	resumed, ok := eventually(2*time.Minute, func() bool { return h.rowsOf(ctx, db, crashUser) > before })
	if !ok {
		t.Fatalf("the sync did not resume within 2 minutes of kill -9 (%d rows stored at the kill)", before)
	}
	h.Worker("worker-a")
	awaitLargeSync(t, newClient(t, crashKey), h.anyServe(), 1)
	finished := time.Since(killed)

	twinUser, twinKey, _ := h.User("twin@example.com", "pro")
	h.CLI("connections", "add", "--user", twinUser, "--provider", "plaid", "--sim", "--sim-name", "crash")
	awaitLargeSync(t, newClient(t, twinKey), h.anyServe(), 1)
	got, want := h.rowsOf(ctx, db, crashUser), h.rowsOf(ctx, db, twinUser)
	diff := differingRows(ctx, t, db, crashUser, twinUser)
	t.Logf("kill -9 of the worker %d rows into a %d-transaction first sync: resumed on another worker after %v, finished %v after the kill; %d rows stored, %d by an uninterrupted sync, %d differ",
		before, rows, resumed.Round(100*time.Millisecond), finished.Round(time.Second), got, want, diff)
	if got != want || diff != 0 {
		t.Fatalf("the resumed sync stored %d rows (%d differ); an uninterrupted one stored %d", got, diff, want)
	}
}
