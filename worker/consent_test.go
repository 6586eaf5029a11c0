package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// accountCalls counts the syncs that reached a provider: each begins by
// asking for the accounts.
type accountCalls struct {
	providers.Provider
	n atomic.Int64
}

func (a *accountCalls) Accounts(ctx context.Context, c providers.Connection) (providers.AccountSet, error) {
	a.n.Add(1)
	return a.Provider.Accounts(ctx, c)
}

// TestConsentExpiryNeedsReauthWithoutProviderCalls: a Plaid Item whose
// consent ends in three days reports the end, which the connection's
// health shows (action none); once the simulated clock passes it, syncs
// fail as needing re-auth without calling the provider, and the
// connection leaves the periodic schedule (action reauth); after the user
// renews the consent and the connection is re-authed, the next sync
// succeeds and records the new end.
func TestConsentExpiryNeedsReauthWithoutProviderCalls(t *testing.T) {
	// The simulator starts today, so that the database's clock, which
	// health compares the consent's end with, is the simulator's first day.
	pool, _ := storagetest.NewDB(t)
	e := newSyncEnvFrom(t, pool, time.Now().UTC().Truncate(24*time.Hour))
	e.syncer.Now = e.sim.WallNow
	calls := &accountCalls{Provider: e.syncer.Providers["plaid"]}
	e.syncer.Providers["plaid"] = calls
	ctx := context.Background()
	c := e.connect("plaid", "consent")
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", "consent"))
	if err != nil {
		t.Fatal(err)
	}
	ends := e.sim.WallNow().Add(72 * time.Hour).Truncate(time.Second)
	if err := e.sim.SetConsent(sim.Consent{Provider: "plaid", Credential: key, ExpiresAt: ends}); err != nil {
		t.Fatal(err)
	}
	health := func() (domain.BankConnection, storage.ConnectionHealth) { return e.stored(c) }

	if _, err := e.st.CreateWebhook(ctx, storage.NewWebhook{UserID: e.user.ID, URL: "https://hooks.example.com/finsync",
		Events: storage.WebhookEventTypes(), SealedSecret: []byte("sealed")}); err != nil {
		t.Fatal(err)
	}
	// events counts the user's webhook events of each type.
	events := func() map[string]int {
		t.Helper()
		rows, err := e.pool.Query(ctx, `SELECT type, count(*) FROM webhook_deliveries WHERE user_id = $1 GROUP BY type`, e.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var typ string
			var n int
			if err := rows.Scan(&typ, &n); err != nil {
				t.Fatal(err)
			}
			out[typ] = n
		}
		return out
	}

	e.mustSync(c)
	if _, h := health(); h.ConsentExpiresAt == nil || !h.ConsentExpiresAt.Equal(ends) || h.Action != storage.ActionNone {
		t.Fatalf("after a sync: consent ends %v, action %q; want %v, none", h.ConsentExpiresAt, h.Action, ends)
	}
	// The end is within the warning (7 days): one warning, however many
	// syncs see it.
	e.mustSync(c)
	if n := events()[storage.WebhookConsentExpiring]; n != 1 {
		t.Fatalf("%d connection.consent_expiring events after two syncs, want 1", n)
	}

	if err := e.sim.Advance(4); err != nil {
		t.Fatal(err)
	}
	before := calls.n.Load()
	for i := range 3 {
		if err := e.sync(c); err == nil {
			t.Fatalf("sync %d after the consent ended succeeded", i+1)
		}
	}
	if n := calls.n.Load() - before; n != 0 {
		t.Fatalf("%d syncs called the provider after the consent ended", n)
	}
	got, h := health()
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != worker.CodeConsentExpired ||
		got.NextSyncAt != nil || h.Action != storage.ActionReauth {
		t.Fatalf("after the consent ended: status %s, error %v, next sync %v, action %q; want error %s, unscheduled, reauth",
			got.Status, got.LastProviderErrorCode, got.NextSyncAt, h.Action, worker.CodeConsentExpired)
	}

	if ev := events(); ev[storage.WebhookError] != 1 || ev[storage.WebhookReauthRequired] != 1 {
		t.Fatalf("after three failed syncs: events %v, want one connection.error and one connection.reauth_required", ev)
	}

	// The user renews the consent (Link's update mode keeps the access
	// token); the operator re-auths the connection.
	renewed := e.sim.WallNow().Add(90 * 24 * time.Hour).Truncate(time.Second)
	if err := e.sim.SetConsent(sim.Consent{Provider: "plaid", Credential: key, ExpiresAt: renewed}); err != nil {
		t.Fatal(err)
	}
	sealed, err := e.box.Seal(allsim.Credentials("plaid", "consent"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.ReauthConnection(ctx, c.ID, sealed, ""); err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	got, h = health()
	if calls.n.Load() == before || got.Status != domain.ConnectionActive || got.NextSyncAt == nil ||
		h.ConsentExpiresAt == nil || !h.ConsentExpiresAt.Equal(renewed) || h.Action != storage.ActionNone {
		t.Fatalf("after the re-auth: status %s, next sync %v, consent ends %v, action %q; want active, scheduled, %v, none",
			got.Status, got.NextSyncAt, h.ConsentExpiresAt, h.Action, renewed)
	}
	// Recovered; the renewed consent ends in 90 days, beyond the warning.
	if ev := events(); ev[storage.WebhookRecovered] != 1 || ev[storage.WebhookConsentExpiring] != 1 {
		t.Fatalf("after the re-auth: events %v, want one connection.recovered and still one connection.consent_expiring", ev)
	}
}

// TestExpiredConsentAtTheProviderNeedsReauth: an Item whose consent ended
// before finsync saw its end answers ITEM_LOGIN_REQUIRED, which needs
// re-auth (action reauth) and takes the connection off the schedule.
func TestExpiredConsentAtTheProviderNeedsReauth(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow
	c := e.connect("plaid", "ended")
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", "ended"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetConsent(sim.Consent{Provider: "plaid", Credential: key, ExpiresAt: e.sim.WallNow().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := e.sync(c); err == nil {
		t.Fatal("sync of an Item whose consent ended succeeded")
	}
	got, h := e.stored(c)
	if got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != "ITEM_LOGIN_REQUIRED" || got.NextSyncAt != nil || h.Action != storage.ActionReauth {
		t.Fatalf("error %v, next sync %v, action %q; want ITEM_LOGIN_REQUIRED, unscheduled, reauth", got.LastProviderErrorCode, got.NextSyncAt, h.Action)
	}
}

// stored returns the connection as stored now, and its health.
func (e *syncEnv) stored(c domain.BankConnection) (domain.BankConnection, storage.ConnectionHealth) {
	e.t.Helper()
	ctx := context.Background()
	got, err := e.st.GetConnectionAnyUser(ctx, c.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := e.st.GetConnectionHealth(ctx, []domain.BankConnection{got})
	if err != nil {
		e.t.Fatal(err)
	}
	return got, h[c.ID]
}

// TestGoCardlessAgreementEndsTheConsent: a GoCardless connection's consent
// ends with its end user agreement (accepted on the simulator's first day,
// for 90 days); the health shows that end, and once the simulated clock
// passes it the sync needs re-auth without calling the provider.
func TestGoCardlessAgreementEndsTheConsent(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow
	calls := &accountCalls{Provider: e.syncer.Providers["gocardless"]}
	e.syncer.Providers["gocardless"] = calls
	ctx := context.Background()
	c := e.connect("gocardless", "agreement")
	e.mustSync(c)
	want := e.sim.DateOf(0).Add(9*time.Hour).AddDate(0, 0, 90)
	got, err := e.st.GetConnectionAnyUser(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConsentExpiresAt == nil || !got.ConsentExpiresAt.Equal(want) {
		t.Fatalf("consent ends %v, want the agreement's end %v", got.ConsentExpiresAt, want)
	}
	if err := e.sim.Advance(91); err != nil {
		t.Fatal(err)
	}
	before := calls.n.Load()
	if err := e.sync(c); err == nil {
		t.Fatal("sync after the agreement ended succeeded")
	}
	if got, err = e.st.GetConnectionAnyUser(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if n := calls.n.Load() - before; n != 0 || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != worker.CodeConsentExpired {
		t.Fatalf("after the agreement ended: %d provider calls, error %v; want none, %s", n, got.LastProviderErrorCode, worker.CodeConsentExpired)
	}
}

// TestConsentExpiryGaugeIsTheEarliestEnd: the consent gauge reads, per
// provider, the earliest recorded end of its connections' consents, and
// has no series for a provider without one.
func TestConsentExpiryGaugeIsTheEarliestEnd(t *testing.T) {
	e := newSyncEnv(t)
	names := all.NewRegistry().Names()
	fresh := func() *prometheus.Registry {
		reg := prometheus.NewRegistry()
		reg.MustRegister(worker.NewConsentExpiryCollector(e.st, names))
		return reg
	}
	const gauge = "finsync_connection_consent_expiry_timestamp_seconds"
	first, second := e.connect("gocardless", "gauge-a"), e.connect("gocardless", "gauge-b")
	e.connect("mercury", "gauge-c")
	if _, ok := sample(t, fresh(), gauge, map[string]string{"provider": "gocardless"}); ok {
		t.Fatal("a series before any consent end is recorded")
	}
	soon, later := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)
	for id, at := range map[uuid.UUID]time.Time{first.ID: later, second.ID: soon} {
		if _, err := e.pool.Exec(context.Background(), `UPDATE bank_connections SET consent_expires_at = $2 WHERE id = $1`, id, at); err != nil {
			t.Fatal(err)
		}
	}
	reg := fresh()
	if v, ok := sample(t, reg, gauge, map[string]string{"provider": "gocardless"}); !ok || v != float64(soon.Unix()) {
		t.Fatalf("gocardless: %v (present %v), want the earliest end %v", v, ok, soon.Unix())
	}
	if _, ok := sample(t, reg, gauge, map[string]string{"provider": "mercury"}); ok {
		t.Fatal("a series for a provider whose connections state no consent end")
	}
}
