package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestEvaluationStopsWithinARowOfTheDeadline gives a user 60
// transactions of 1,000-character text and stored rules whose patterns
// cost milliseconds per row ((?i)\pL{1,990}y), and checks that a preview
// and the rule job given a deadline stop within about one row's cost past
// it, not at the end of a batch of rows.
func TestEvaluationStopsWithinARowOfTheDeadline(t *testing.T) {
	w := newRuleWorld(t)
	text := strings.Repeat("é", 995) + " cafe"
	txs := make([]storagetest.Tx, 60)
	for i := range txs {
		txs[i] = storagetest.Tx{Summary: text, Amount: "-1"}
	}
	conn := w.fx.Connection(w.user, "plaid", "active")
	w.fx.Transactions(w.user, conn, w.acct1, "plaid", txs)
	heavy := `{"field":"Summary","operator":"matches","value":"(?i)\\pL{1,990}y"}`
	for p := range 2 {
		w.rule(t, `[`+heavy+`]`, hide, 10+p)
	}
	// One row's cost, measured: the rule job of one transaction.
	start := time.Now()
	w.apply(t, 0)
	full := time.Since(start)
	perRow := full / time.Duration(len(txs)+len(w.txs))
	t.Logf("rule job over %d rows: %s (%s per row)", len(txs)+len(w.txs), full, perRow)
	const deadline = 100 * time.Millisecond
	if full < 5*deadline {
		t.Skipf("evaluation too fast on this machine (%s) to observe the deadline", full)
	}
	slack := deadline + 5*perRow + 100*time.Millisecond
	def := []byte(`{"conditions":[{"field":"Summary","operator":"contains","value":"cafe"}],"outcomes":` + hide + `,"priority":50}`)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start = time.Now()
	_, err := previewDef(ctx, storage.New(w.pool), storage.Scope{UserID: w.user}, def)
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > slack {
		t.Fatalf("preview with a %s deadline: %v after %s, want the deadline within %s", deadline, err, took, slack)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), deadline)
	defer cancel2()
	start = time.Now()
	_, err = storage.New(w.pool).ApplyRulesToUser(ctx2, w.user, 1000)
	if took := time.Since(start); err == nil || took > slack {
		t.Fatalf("rule job with a %s deadline: %v after %s, want the deadline within %s", deadline, err, took, slack)
	}
}
