package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestPreviewOnReplica: a rule preview (a POST that writes nothing) reads
// on a fresh replica like a GET, records no write position (with replay
// paused, the same user's next preview still reads there), and after the
// user's own write it reads on the primary, seeing the write, until the
// replica has replayed it.
func TestPreviewOnReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := newReplicaEnv(t, ctx, time.Hour)
	u := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(u.ID, nil)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	acct := e.fx.Account(u.ID, conn, "plaid", "Checking")
	day := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	txs := e.fx.Transactions(u.ID, conn, acct, "plaid", []storagetest.Tx{
		{Summary: "Coffee shop", Amount: "-4", Date: day}, {Summary: "coffee beans", Amount: "-9", Date: day.AddDate(0, 0, 1)},
	})
	cafe := e.fx.Category(u.ID, "Cafe", "Food")
	rule := `{"conditions":[{"field":"Summary","operator":"contains","value":"coffee"}],
		"outcomes":[{"action":"updateTransaction","field":"Category","value":{"id":"` + cafe.String() + `","value":"Cafe"}}],"priority":20}`
	preview := func() (count float64) {
		t.Helper()
		r := e.send(http.MethodPost, "/v2/rules/preview", key, rule)
		e.expect(r, http.StatusOK, "")
		return r.json(t)["count"].(float64)
	}
	waitUntil(t, "the replica is usable and has the fixtures", func() bool {
		return e.replicaW.Status().Usable && preview() == 2
	})
	if rep, prim := e.served(func() { preview() }); rep == 0 || prim != 0 {
		t.Fatalf("preview on a caught-up replica: %d reads there, %d on the primary; want all on the replica", rep, prim)
	}

	e.pauseReplay(ctx)
	for i := range 2 {
		if rep, prim := e.served(func() { preview() }); rep == 0 || prim != 0 {
			t.Fatalf("preview %d with replay paused and no write: %d reads on the replica, %d on the primary; want all on the replica", i, rep, prim)
		}
	}
	// The user's own write: no category on the beans, the user's choice,
	// which every rule leaves alone.
	e.expect(e.send(http.MethodPatch, "/v2/transactions/"+txs[1].String(), key, `{"categoryId":null}`), http.StatusOK, "")
	var count float64
	rep, prim := e.served(func() { count = preview() })
	if rep != 0 || prim == 0 {
		t.Fatalf("preview after the user's write, replay paused: %d reads on the replica, %d on the primary; want all on the primary", rep, prim)
	}
	if count != 1 {
		t.Fatalf("preview after the user's write counts %v, want 1 (the write seen)", count)
	}

	e.resumeReplay(ctx)
	waitUntil(t, "the preview is back on the replica", func() bool {
		rep, prim := e.served(func() { preview() })
		return rep > 0 && prim == 0
	})
}
