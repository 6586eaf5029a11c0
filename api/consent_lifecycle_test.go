package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// countedProvider counts the syncs that reached a provider: each begins
// by asking for the accounts.
type countedProvider struct {
	providers.Provider
	calls atomic.Int64
}

func (p *countedProvider) Accounts(ctx context.Context, c providers.Connection) (providers.AccountSet, error) {
	p.calls.Add(1)
	return p.Provider.Accounts(ctx, c)
}

// TestConsentLifecycleThroughTheAPI: through the real router, River
// worker, simulator and PostgreSQL, a Plaid Item's consent and a
// GoCardless end user agreement each show in the connection's health
// (consentExpiresAt, action none) once synced; each sends exactly one
// connection.consent_expiring when its end is within the warning however
// many syncs see it; once the simulated clock passes the end, syncs fail
// with action reauth and connection.error without a provider call; after
// the user renews the consent and the operator re-auths the connection
// with the ops console's form (the code of `connections reauth`), the
// sync that follows at once makes it active, with connection.recovered.
func TestConsentLifecycleThroughTheAPI(t *testing.T) {
	// The simulator starts today, so that the database's clock, which the
	// health's action compares the consent's end with, is its first day.
	start := time.Now().UTC().Truncate(24 * time.Hour)
	w := newHookWorldAt(t, start, true, worker.Webhooks{}, withOpsReauth(t, hookBox(t)))
	w.syncer.Now = w.sim.WallNow
	counted := map[string]*countedProvider{}
	for _, p := range []string{"plaid", "gocardless"} {
		counted[p] = &countedProvider{Provider: w.syncer.Providers[p]}
		w.syncer.Providers[p] = counted[p]
	}
	rc := newReceiver(t)
	_, secret := w.register(rc.srv.URL+"/hook", storage.WebhookEventTypes()...)
	rc.setSecret(secret)
	ctx := context.Background()
	connect := func(provider, name string) uuid.UUID {
		t.Helper()
		sealed, err := w.box.Seal(allsim.Credentials(provider, name))
		if err != nil {
			t.Fatal(err)
		}
		c, err := w.st.CreateConnection(ctx, storage.NewConnection{UserID: w.user.ID, Provider: provider,
			BaseURL: allsim.BaseURL(provider, w.simURL), SealedCredentials: sealed})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	simKey := func(provider, name string) string {
		t.Helper()
		key, err := allsim.CredentialKey(provider, allsim.Credentials(provider, name))
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	plaid, gc := connect("plaid", "life-plaid"), connect("gocardless", "life-gc")
	plaidEnds := w.sim.WallNow().Add(72 * time.Hour).Truncate(time.Second)
	if err := w.sim.SetConsent(sim.Consent{Provider: "plaid", Credential: simKey("plaid", "life-plaid"), ExpiresAt: plaidEnds}); err != nil {
		t.Fatal(err)
	}
	gcEnds := start.Add(9*time.Hour).AddDate(0, 0, 90) // accepted on the first day, for 90 days

	// health returns the connection's v2 object (status, error) and health.
	health := func(id uuid.UUID) (map[string]any, map[string]any) {
		t.Helper()
		r := w.get("/v2/bank-connections", w.key)
		w.expect(r, http.StatusOK, "")
		for _, c := range r.json(t)["bankConnections"].([]any) {
			if m := c.(map[string]any); m["id"] == id.String() {
				return m, m["health"].(map[string]any)
			}
		}
		t.Fatalf("connection %s not listed", id)
		return nil, nil
	}
	// events counts the delivered events of one connection by type.
	events := func(id uuid.UUID) map[string]int {
		out := map[string]int{}
		for _, e := range rc.events() {
			if e.Data["connectionId"] == id.String() {
				out[e.Type]++
			}
		}
		return out
	}
	settle := func(what string, id uuid.UUID, typ string, n int) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() bool { return events(id)[typ] >= n })
	}
	sync := func(id uuid.UUID, want string) {
		t.Helper()
		if st := w.sync(id); st != want {
			t.Fatalf("sync of %s: %s, want %s", id, st, want)
		}
	}

	// Both consents known, neither ended.
	sync(plaid, "completed")
	sync(gc, "completed")
	for id, ends := range map[uuid.UUID]time.Time{plaid: plaidEnds, gc: gcEnds} {
		if _, h := health(id); h["consentExpiresAt"] != ends.Format(time.RFC3339) || h["action"] != "none" {
			t.Fatalf("connection %s after a sync: health %v, want its consent's end %s and action none", id, h, ends.Format(time.RFC3339))
		}
	}
	// The Item's end is within seven days: one warning for two syncs.
	sync(plaid, "completed")
	settle("the Item's consent warning", plaid, storage.WebhookConsentExpiring, 1)

	// The Item's consent ends: no provider call, action reauth, one error.
	if err := w.sim.Advance(4); err != nil {
		t.Fatal(err)
	}
	calls := counted["plaid"].calls.Load()
	sync(plaid, "cancelled")
	sync(plaid, "cancelled")
	if n := counted["plaid"].calls.Load() - calls; n != 0 {
		t.Fatalf("%d syncs called Plaid after the consent ended", n)
	}
	if c, h := health(plaid); c["status"] != "error" || h["action"] != "reauth" || c["nextSyncAt"] != nil {
		t.Fatalf("after the Item's consent ended: %v", c)
	}
	settle("the Item's connection.error", plaid, storage.WebhookError, 1)

	// The agreement nears its end (day 84: six days left), then ends.
	if err := w.sim.Advance(80); err != nil {
		t.Fatal(err)
	}
	sync(gc, "completed")
	sync(gc, "completed")
	settle("the agreement's consent warning", gc, storage.WebhookConsentExpiring, 1)
	if err := w.sim.Advance(7); err != nil {
		t.Fatal(err)
	}
	calls = counted["gocardless"].calls.Load()
	sync(gc, "cancelled")
	if n := counted["gocardless"].calls.Load() - calls; n != 0 {
		t.Fatalf("%d syncs called GoCardless after the agreement ended", n)
	}
	if c, h := health(gc); c["status"] != "error" || h["action"] != "reauth" {
		t.Fatalf("after the agreement ended: %v", c)
	}
	settle("the agreement's connection.error", gc, storage.WebhookError, 1)

	// The users renew their consents; the operator re-auths both
	// connections with the console's form, and each syncs at once.
	renewed := w.sim.WallNow().Add(90 * 24 * time.Hour).Truncate(time.Second)
	for _, c := range []struct{ provider, name string }{{"plaid", "life-plaid"}, {"gocardless", "life-gc"}} {
		if err := w.sim.SetConsent(sim.Consent{Provider: c.provider, Credential: simKey(c.provider, c.name), ExpiresAt: renewed}); err != nil {
			t.Fatal(err)
		}
	}
	status, h, _ := w.opsDo(opsRequest{method: http.MethodPost, path: "/ops/sign-in", form: url.Values{"token": {testOpsToken}}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	session := strings.TrimPrefix(strings.Split(h.Get("Set-Cookie"), ";")[0], "finsync_ops=")
	for id, name := range map[uuid.UUID]string{plaid: "life-plaid", gc: "life-gc"} {
		provider := map[uuid.UUID]string{plaid: "plaid", gc: "gocardless"}[id]
		page := "/ops/connections/" + id.String()
		status, _, body := w.opsDo(opsRequest{method: http.MethodGet, path: page}, cookie(session))
		m := csrfInput.FindStringSubmatch(body)
		if status != http.StatusOK || m == nil {
			t.Fatalf("GET %s: %d", page, status)
		}
		form := url.Values{"csrf": {m[1]}, "credentials": {string(allsim.Credentials(provider, name))}}
		if status, _, body := w.opsDo(opsRequest{method: http.MethodPost, path: page + "/reauth", form: form}, sameSiteCookie(session)); status != http.StatusSeeOther {
			t.Fatalf("re-auth %s: %d %.300s", provider, status, body)
		}
	}
	for _, id := range []uuid.UUID{plaid, gc} {
		waitFor(t, 30*time.Second, "the re-authed connection active", func() bool { c, _ := health(id); return c["status"] == "active" })
		settle("connection.recovered", id, storage.WebhookRecovered, 1)
		if _, h := health(id); h["action"] != "none" || h["consentExpiresAt"] != renewed.Format(time.RFC3339) {
			t.Fatalf("connection %s after the re-auth: health %v, want action none and the renewed end %s", id, h, renewed.Format(time.RFC3339))
		}
	}
	// Exactly one warning per consent, one error and one recovery each.
	for _, id := range []uuid.UUID{plaid, gc} {
		ev := events(id)
		if ev[storage.WebhookConsentExpiring] != 1 || ev[storage.WebhookError] != 1 || ev[storage.WebhookRecovered] != 1 {
			t.Fatalf("connection %s: events %v, want one consent_expiring, one error, one recovered", id, ev)
		}
	}
}
