package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// TestHeldBackSyncShownByTheAPIAndOps: a connection whose sync a worker
// holds back shows until when and why in its v2 health, through the real
// router, and in the ops console's connections list; the other connection,
// and the same one once its hold is released, show null and a dash.
func TestHeldBackSyncShownByTheAPIAndOps(t *testing.T) {
	e := newEnv(t, withOps(t))
	u := e.fx.User(domain.PlanPro, true)
	held := e.fx.Connection(u.ID, "simplefin", "active")
	other := e.fx.Connection(u.ID, "plaid", "active")
	key := e.fx.Key(u.ID, nil)
	st := storage.New(e.fx.Pool)
	ctx := context.Background()
	if err := st.HoldBack(ctx, held, 50*time.Minute, storage.HeldBackProviderQuota); err != nil {
		t.Fatal(err)
	}
	conns := func() map[string]map[string]any {
		t.Helper()
		r := e.get("/v2/bank-connections", key)
		e.expect(r, http.StatusOK, "")
		out := map[string]map[string]any{}
		for _, c := range r.json(t)["bankConnections"].([]any) {
			m := c.(map[string]any)
			out[m["id"].(string)] = m["health"].(map[string]any)
		}
		return out
	}
	h := conns()
	if h[held.String()]["heldBackReason"] != "provider_quota" {
		t.Fatalf("held connection's health: %v", h[held.String()])
	}
	until, err := time.Parse(time.RFC3339Nano, h[held.String()]["heldBackUntil"].(string))
	if err != nil || until.Location() != time.UTC {
		t.Fatalf("heldBackUntil %v: %v", h[held.String()]["heldBackUntil"], err)
	}
	if d := time.Until(until); d < 49*time.Minute || d > 51*time.Minute {
		t.Fatalf("heldBackUntil %s is %s away, want about 50 minutes", until, d)
	}
	for _, f := range []string{"heldBackUntil", "heldBackReason"} {
		if v, ok := h[other.String()][f]; !ok || v != nil {
			t.Fatalf("the other connection's %s: %v (present %v), want null", f, v, ok)
		}
	}

	// The ops console's list shows the reason and the time in its own column.
	status, _, body := e.opsDo(opsRequest{method: http.MethodGet, path: "/ops"}, bearer(testOpsToken))
	if status != http.StatusOK {
		t.Fatalf("GET /ops: %d %.300s", status, body)
	}
	row := opsRow(t, body, held.String())
	if !strings.Contains(row, `<td class="held-back"><span class="badge warn">provider_quota</span>`) ||
		!strings.Contains(row, "until "+until.UTC().Format("2006-01-02 15:04:05Z")) {
		t.Fatalf("ops row of the held connection lacks the hold: %s", row)
	}
	if row := opsRow(t, body, other.String()); !strings.Contains(row, `<td class="held-back"><span class="muted">—</span></td>`) {
		t.Fatalf("ops row of the other connection: %s", row)
	}

	if err := st.ReleaseHold(ctx, held); err != nil {
		t.Fatal(err)
	}
	if h := conns()[held.String()]; h["heldBackUntil"] != nil || h["heldBackReason"] != nil {
		t.Fatalf("health after the hold was released: %v", h)
	}
}

// opsRow returns the ops console's table row of a connection.
func opsRow(t *testing.T, page, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `<tr data-connection="`+id+`">`)
	if !ok {
		t.Fatalf("no row for connection %s", id)
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}
