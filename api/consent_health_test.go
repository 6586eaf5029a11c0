package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
)

// TestConsentAndActionShownByTheAPI: through the real router, a
// connection's v2 health shows when its consent ends (RFC 3339, UTC) and
// what to do about it: none while it lasts, reauth once it has passed or
// the last failure needs the user, contact_support after a permanent
// failure, wait after an outage; and null with none for a connection whose
// provider states no end. The ops console's list shows the same.
func TestConsentAndActionShownByTheAPI(t *testing.T) {
	e := newEnv(t, withOps(t))
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "gocardless", "active")
	other := e.fx.Connection(u.ID, "mercury", "active")
	key := e.fx.Key(u.ID, nil)
	ctx := context.Background()
	set := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.fx.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	health := func() (map[string]any, map[string]any) {
		t.Helper()
		r := e.get("/v2/bank-connections", key)
		e.expect(r, http.StatusOK, "")
		out := map[string]map[string]any{}
		for _, c := range r.json(t)["bankConnections"].([]any) {
			m := c.(map[string]any)
			out[m["id"].(string)] = m["health"].(map[string]any)
		}
		return out[conn.String()], out[other.String()]
	}

	ends := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	set(`UPDATE bank_connections SET consent_expires_at = $2 WHERE id = $1`, conn, ends)
	h, o := health()
	if h["consentExpiresAt"] != ends.Format(time.RFC3339) || h["action"] != "none" {
		t.Fatalf("consent lasting: %v", h)
	}
	if v, ok := o["consentExpiresAt"]; !ok || v != nil || o["action"] != "none" {
		t.Fatalf("a connection without a consent end: %v", o)
	}

	set(`UPDATE bank_connections SET consent_expires_at = now() - interval '1 hour' WHERE id = $1`, conn)
	if h, _ = health(); h["action"] != "reauth" {
		t.Fatalf("consent ended: action %v, want reauth", h["action"])
	}
	// The ops console's list shows the end and the action in its own
	// column, and a dash for a connection without an end.
	status, _, body := e.opsDo(opsRequest{method: http.MethodGet, path: "/ops"}, bearer(testOpsToken))
	if status != http.StatusOK {
		t.Fatalf("GET /ops: %d %.300s", status, body)
	}
	if row := opsRow(t, body, conn.String()); !strings.Contains(row, `<td class="consent"><span class="muted">until</span> `) ||
		!strings.Contains(row, `<span class="badge bad">reauth</span></td>`) {
		t.Fatalf("ops row of the ended consent: %s", row)
	}
	if row := opsRow(t, body, other.String()); !strings.Contains(row, `<td class="consent"><span class="muted">—</span></td>`) {
		t.Fatalf("ops row without a consent end: %s", row)
	}
	for class, want := range map[string]string{"reauth_required": "reauth", "permanent": "contact_support", "unavailable": "wait", "rate_limited": "wait"} {
		set(`UPDATE bank_connections SET consent_expires_at = NULL, status = 'error', last_error_class = $2 WHERE id = $1`, conn, class)
		if h, _ = health(); h["action"] != want {
			t.Fatalf("last failure %s: action %v, want %s", class, h["action"], want)
		}
	}
}
