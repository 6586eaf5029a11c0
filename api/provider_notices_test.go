package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/stripe"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// noticeWorld is a hookWorld whose Plaid simulator sends its webhooks to
// the API's POST /providers/plaid/webhooks, with one Plaid connection
// synced once (so that the simulator and finsync both know its Item).
type noticeWorld struct {
	*hookWorld
	name  string
	conn  uuid.UUID
	creds map[string]string
}

func newNoticeWorld(t *testing.T, name string, transactions int) *noticeWorld {
	t.Helper()
	// The simulator starts today and the worker reads its clock, so that
	// consent ends it reports are as near to the database's clock.
	w := &noticeWorld{hookWorld: newHookWorldAt(t, time.Now().UTC().Truncate(24*time.Hour), true, worker.Webhooks{}), name: name}
	w.syncer.Now = w.sim.WallNow
	if err := json.Unmarshal(allsim.Credentials("plaid", name), &w.creds); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: w.creds["access_token"],
		Transactions: transactions, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	w.conn = w.connect(name)
	if st := w.sync(w.conn); st != "completed" {
		t.Fatalf("first sync: %s", st)
	}
	if err := w.sim.SetWebhookURL("plaid", w.srv.URL+"/providers/plaid/webhooks"); err != nil {
		t.Fatal(err)
	}
	return w
}

// fire asks the simulator to send one of the Item's webhooks now.
func (w *noticeWorld) fire(simURL, code string) {
	w.t.Helper()
	body, _ := json.Marshal(map[string]string{"client_id": w.creds["client_id"], "secret": w.creds["secret"],
		"access_token": w.creds["access_token"], "webhook_code": code})
	resp, err := http.Post(simURL+"/sandbox/item/fire_webhook", "application/json", bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("fire %s: %d %s", code, resp.StatusCode, b)
	}
}

// syncJobs counts the sync jobs ever enqueued for the connection.
func (w *noticeWorld) syncJobs() (n int) {
	w.t.Helper()
	err := w.fx.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE kind = 'sync_connection' AND args->>'connection_id' = $1`, w.conn.String()).Scan(&n)
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// idle reports whether no sync job of the connection is queued or running.
func (w *noticeWorld) idle() bool {
	var n int
	err := w.fx.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job
		WHERE kind = 'sync_connection' AND args->>'connection_id' = $1 AND state NOT IN ('completed', 'cancelled', 'discarded')`,
		w.conn.String()).Scan(&n)
	if err != nil {
		w.t.Fatal(err)
	}
	return n == 0
}

// listedOn counts the transactions GET /v2/transactions lists on one day.
func (w *noticeWorld) listedOn(day string) int {
	w.t.Helper()
	r := w.get("/v2/transactions?limit=250&startDate="+day+"&endDate="+day, w.key)
	w.expect(r, http.StatusOK, "")
	return len(r.json(w.t)["transactions"].([]any))
}

// connection returns the connection's v2 object.
func (w *noticeWorld) connection() map[string]any {
	w.t.Helper()
	r := w.get("/v2/bank-connections", w.key)
	w.expect(r, http.StatusOK, "")
	for _, c := range r.json(w.t)["bankConnections"].([]any) {
		if m := c.(map[string]any); m["id"] == w.conn.String() {
			return m
		}
	}
	w.t.Fatalf("connection %s not listed", w.conn)
	return nil
}

// health returns the connection's v2 health.
func (w *noticeWorld) health() map[string]any {
	return w.connection()["health"].(map[string]any)
}

// captured is one webhook as a receiver got it.
type captured struct {
	header http.Header
	body   []byte
}

// capture serves a receiver that keeps every webhook it gets.
func capture(t *testing.T) (string, func() []captured) {
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, captured{r.Header.Clone(), b})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}

// TestPlaidNotificationSyncsAndCoalesces: through the real router,
// worker, simulator and PostgreSQL, the simulator's
// SYNC_UPDATES_AVAILABLE (sent as its clock advances) makes the new day's
// transactions visible through GET /v2/transactions with no other
// trigger, and three identical notifications within one second give one
// sync, with none due after it.
func TestPlaidNotificationSyncsAndCoalesces(t *testing.T) {
	w := newNoticeWorld(t, "notice-sync", 3000)
	jobs := w.syncJobs()
	if err := w.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	day := w.sim.State().Today
	waitFor(t, 30*time.Second, "the new day's transactions listed after the notification", func() bool { return w.listedOn(day) > 0 })
	if got := w.syncJobs(); got != jobs+1 {
		t.Fatalf("one notification: %d sync jobs, want %d", got, jobs+1)
	}
	waitFor(t, 30*time.Second, "the sync to end", w.idle)

	jobs = w.syncJobs()
	for range 3 {
		w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
		time.Sleep(300 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, "the notified sync to run", func() bool { return w.syncJobs() > jobs && w.idle() })
	time.Sleep(worker.NoticeQuiet + 2*time.Second) // a late notification or a follow-up sync would show by now
	if got := w.syncJobs(); got != jobs+1 || !w.idle() {
		t.Fatalf("three identical notifications within a second: %d sync jobs, want %d", got, jobs+1)
	}
	// A request left outstanding would have made the next sync due now
	// (the Syncer's clock here is months behind, so its own next sync is
	// far from now either way).
	var dueSoon, requested bool
	if err := w.fx.Pool.QueryRow(context.Background(), `SELECT abs(extract(epoch FROM next_sync_at - now())) < 600, sync_requested_at IS NOT NULL
		FROM bank_connections WHERE id = $1`, w.conn).Scan(&dueSoon, &requested); err != nil {
		t.Fatal(err)
	}
	if dueSoon || requested {
		t.Fatalf("after the coalesced sync: next sync due now %v, request outstanding %v", dueSoon, requested)
	}
}

// TestPlaidNotificationsRefusedEnqueueNothing: a notification with a
// changed body, a bad or missing signature, or a signature older than
// five minutes answers 400 and enqueues nothing; one for an Item no
// connection has answers 200; a provider that sends none, 404.
func TestPlaidNotificationsRefusedEnqueueNothing(t *testing.T) {
	w := newNoticeWorld(t, "notice-refused", 300)
	url, got := capture(t)
	if err := w.sim.SetWebhookURL("plaid", url); err != nil {
		t.Fatal(err)
	}
	// One at a time: captures arrive in the background, in any order.
	w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
	waitFor(t, 10*time.Second, "the genuine webhook captured", func() bool { return len(got()) == 1 })
	// A second simulator with the same seed signs with the same key, on a
	// clock ten minutes behind.
	late := allsim.New(sim.Options{Seed: 7, Start: time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC), HistoryTransactions: 30,
		Now: func() time.Time { return time.Now().Add(-10 * time.Minute) }})
	lateSrv := httptest.NewServer(late)
	t.Cleanup(lateSrv.Close)
	if err := late.SetWebhookURL("plaid", url); err != nil {
		t.Fatal(err)
	}
	w.fire(lateSrv.URL, "SYNC_UPDATES_AVAILABLE")
	waitFor(t, 10*time.Second, "both webhooks captured", func() bool { return len(got()) == 2 })
	genuine, old := got()[0], got()[1]
	if !bytes.Contains(genuine.body, []byte(`"SYNC_UPDATES_AVAILABLE"`)) || genuine.header.Get("Plaid-Verification") == "" {
		t.Fatalf("captured webhook: %s %v", genuine.body, genuine.header)
	}
	post := func(path string, body []byte, jwt string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, w.srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if jwt != "" {
			req.Header.Set("Plaid-Verification", jwt)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	jwt := genuine.header.Get("Plaid-Verification")
	changed := bytes.Replace(genuine.body, []byte(`"initial_update_complete":true`), []byte(`"initial_update_complete":false`), 1)
	if bytes.Equal(changed, genuine.body) {
		t.Fatalf("the body to change: %s", genuine.body)
	}
	badSig := jwt[:len(jwt)-4] + map[bool]string{true: "AAAA", false: "BBBB"}[!strings.HasSuffix(jwt, "AAAA")]
	jobs := w.syncJobs()
	for _, c := range []struct {
		name string
		body []byte
		jwt  string
		want string
	}{
		{"changed body", changed, jwt, "not the one"},
		{"bad signature", genuine.body, badSig, "Plaid-Verification"},
		{"no signature", genuine.body, "", "no Plaid-Verification"},
		{"signed ten minutes ago", old.body, old.header.Get("Plaid-Verification"), "not issued within"},
		{"not a webhook", []byte(`{"hello":1}`), jwt, "not a Plaid webhook"},
	} {
		status, body := post("/providers/plaid/webhooks", c.body, c.jwt)
		if status != http.StatusBadRequest || !strings.Contains(body, `"BAD_REQUEST"`) || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want 400 BAD_REQUEST saying %q", c.name, status, body, c.want)
		}
	}
	if n := w.syncJobs(); n != jobs {
		t.Fatalf("refused notifications enqueued %d syncs", n-jobs)
	}
	// The genuine one is taken, once it is known to be the provider's.
	if status, body := post("/providers/plaid/webhooks", genuine.body, jwt); status != http.StatusOK || !strings.Contains(body, `"applied"`) {
		t.Fatalf("genuine notification: %d %s", status, body)
	}
	if n := w.syncJobs(); n != jobs+1 {
		t.Fatalf("genuine notification: %d syncs enqueued, want 1", n-jobs)
	}
	// An Item no connection has: acknowledged (its check needs a
	// connection's keys), unless what can be checked without them fails.
	stranger := &noticeWorld{hookWorld: w.hookWorld}
	if err := json.Unmarshal(allsim.Credentials("plaid", "notice-stranger"), &stranger.creds); err != nil {
		t.Fatal(err)
	}
	stranger.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
	waitFor(t, 10*time.Second, "the stranger's webhook captured", func() bool { return len(got()) == 3 })
	other := got()[2]
	if status, body := post("/providers/plaid/webhooks", other.body, other.header.Get("Plaid-Verification")); status != http.StatusOK || !strings.Contains(body, `"unknown_connection"`) {
		t.Fatalf("an Item no connection has: %d %s", status, body)
	}
	unknown := bytes.Replace(genuine.body, []byte(`"item_id":"`), []byte(`"item_id":"unknown`), 1)
	if status, body := post("/providers/plaid/webhooks", unknown, jwt); status != http.StatusBadRequest || !strings.Contains(body, "not the one") {
		t.Fatalf("an altered body naming an unknown Item: %d %s, want 400", status, body)
	}
	for _, p := range []string{"/providers/nosuch/webhooks", "/providers/mercury/webhooks"} {
		if status, body := post(p, genuine.body, jwt); status != http.StatusNotFound || !strings.Contains(body, `"NOT_FOUND"`) {
			t.Errorf("POST %s: %d %s, want 404", p, status, body)
		}
	}
}

// TestPlaidItemNotificationsTellErrorAndRepair: the notifications the
// simulator itself sends as its state changes, as Plaid would. Its
// login_required fault sends ITEM ERROR (ITEM_LOGIN_REQUIRED), which
// marks the connection as needing a re-auth and takes it off the
// schedule, so that a SYNC_UPDATES_AVAILABLE then enqueues nothing (no
// provider call until the user acts: answered "ignored"); clearing the
// fault sends LOGIN_REPAIRED, which syncs it back to active. A consent
// ending within seven days sends PENDING_EXPIRATION as the clock
// advances: its end shows in the health, and connection.consent_expiring
// is sent once.
func TestPlaidItemNotificationsTellErrorAndRepair(t *testing.T) {
	w := newNoticeWorld(t, "notice-item", 300)
	rc := newReceiver(t)
	_, secret := w.register(rc.srv.URL+"/hook", storage.WebhookEventTypes()...)
	rc.setSecret(secret)
	// A sync notification, kept for when the connection is broken.
	url, got := capture(t)
	if err := w.sim.SetWebhookURL("plaid", url); err != nil {
		t.Fatal(err)
	}
	w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
	waitFor(t, 10*time.Second, "the notification captured", func() bool { return len(got()) == 1 })
	n := got()[0]
	if err := w.sim.SetWebhookURL("plaid", w.srv.URL+"/providers/plaid/webhooks"); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the connection marked", func() bool { return w.health()["action"] == "reauth" })
	if c := w.connection(); c["status"] != "error" || c["lastProviderErrorCode"] != "ITEM_LOGIN_REQUIRED" || c["nextSyncAt"] != nil {
		t.Fatalf("after ITEM ERROR: %v", c)
	}
	jobs := w.syncJobs()
	req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/providers/plaid/webhooks", bytes.NewReader(n.body))
	req.Header.Set("Plaid-Verification", n.header.Get("Plaid-Verification"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"ignored"`) || w.syncJobs() != jobs {
		t.Fatalf("a sync notification for a connection waiting for a re-auth: %d %s, %d syncs enqueued", resp.StatusCode, b, w.syncJobs()-jobs)
	}
	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the repaired connection active", func() bool { return w.connection()["status"] == "active" })
	if h := w.health(); h["action"] != "none" {
		t.Fatalf("after LOGIN_REPAIRED: %v", h)
	}

	ends := w.sim.WallNow().Add(72 * time.Hour).Truncate(time.Second)
	if err := w.sim.SetConsent(sim.Consent{Provider: "plaid", Credential: w.creds["access_token"], ExpiresAt: ends}); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	want := ends.UTC().Format(time.RFC3339)
	waitFor(t, 30*time.Second, "the consent's end recorded", func() bool { return w.health()["consentExpiresAt"] == want })
	waitFor(t, 30*time.Second, "connection.consent_expiring", func() bool {
		return slices.Contains(types(rc.events()), storage.WebhookConsentExpiring)
	})
	waitFor(t, 30*time.Second, "the advance's sync", w.idle)
	var warned int
	for _, e := range rc.events() {
		if e.Type == storage.WebhookConsentExpiring {
			warned++
			if e.Data["consentExpiresAt"] != want {
				t.Fatalf("connection.consent_expiring data %v, want the end %s", e.Data, want)
			}
		}
	}
	if warned != 1 {
		t.Fatalf("%d connection.consent_expiring events, want 1", warned)
	}
}

// TestStripeBalanceAvailableSyncsTheConnectedAccount: the simulator's
// balance.available for a connected account, signed with the Connect
// endpoint's secret, makes that account's connection sync as the clock
// advances; a signature made with another secret, or ten minutes old, is
// refused and enqueues nothing.
func TestStripeBalanceAvailableSyncsTheConnectedAccount(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{})
	ctx := context.Background()
	// The endpoint's secret is the provider's setting, as an operator sets
	// it once (finsync providers configure stripe); the connection holds
	// its own credentials only.
	settings, err := w.box.Seal(allsim.Settings("stripe"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.st.SetProviderSettings(ctx, "stripe", settings); err != nil {
		t.Fatal(err)
	}
	sealed, err := w.box.Seal(allsim.OwnCredentials("stripe", "notice-stripe"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.st.CreateConnection(ctx, storage.NewConnection{UserID: w.user.ID, Provider: "stripe",
		BaseURL: allsim.BaseURL("stripe", w.simURL), SealedCredentials: sealed})
	if err != nil {
		t.Fatal(err)
	}
	if st := w.sync(c.ID); st != "completed" {
		t.Fatalf("first sync: %s", st)
	}
	jobs := func() (n int) {
		t.Helper()
		if err := w.fx.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'sync_connection' AND args->>'connection_id' = $1`,
			c.ID.String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	url, got := capture(t)
	if err := w.sim.SetWebhookURL("stripe", url); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the event captured", func() bool { return len(got()) == 1 })
	ev := got()[0]
	if !bytes.Contains(ev.body, []byte(`"balance.available"`)) || !strings.HasPrefix(ev.header.Get("Stripe-Signature"), "t=") {
		t.Fatalf("captured event: %s %v", ev.body, ev.header)
	}
	post := func(body []byte, sig string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/providers/stripe/webhooks", bytes.NewReader(body))
		req.Header.Set("Stripe-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	before := jobs()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-10*time.Minute).Unix(), 10)
	for name, sig := range map[string]string{
		"another secret":  "t=" + ts + ",v1=" + stripe.Sign("whsec_other", ts, ev.body),
		"ten minutes old": "t=" + old + ",v1=" + stripe.Sign(stripeSecret(t), old, ev.body),
		"no signature":    "",
	} {
		if status, body := post(ev.body, sig); status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, status, body)
		}
	}
	if n := jobs(); n != before {
		t.Fatalf("refused events enqueued %d syncs", n-before)
	}
	// An account no connection has: checked with the endpoint's secret all
	// the same, then acknowledged.
	stranger := bytes.Replace(ev.body, []byte(`"account":"acct_`), []byte(`"account":"acct_unknown`), 1)
	if status, body := post(stranger, "t="+ts+",v1="+stripe.Sign(stripeSecret(t), ts, stranger)); status != http.StatusOK || !strings.Contains(body, "unknown_connection") {
		t.Errorf("a signed event for an unknown account: %d %s", status, body)
	}
	if status, body := post(stranger, "t="+ts+",v1="+stripe.Sign("whsec_other", ts, stranger)); status != http.StatusBadRequest {
		t.Errorf("a badly signed event for an unknown account: %d %s, want 400", status, body)
	}
	if err := w.sim.SetWebhookURL("stripe", w.srv.URL+"/providers/stripe/webhooks"); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.Advance(1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the notified sync", func() bool { return jobs() == before+1 })
}

// stripeSecret is the simulated Connect endpoint's signing secret.
func stripeSecret(t *testing.T) string {
	var s struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	if err := json.Unmarshal(allsim.Settings("stripe"), &s); err != nil || s.WebhookSecret == "" {
		t.Fatalf("simulator settings: %v", err)
	}
	return s.WebhookSecret
}

// fireOnRead has the simulator send a notification while the sync it
// wraps reads its first page, once armed, and waits for it to arrive.
type fireOnRead struct {
	providers.Provider
	armed atomic.Bool
	fire  func()
}

// ReadWebhook and VerifyWebhook are the wrapped adapter's: the receiver
// shares the worker's adapters.
func (f *fireOnRead) ReadWebhook(h http.Header, b []byte) (providers.Notice, error) {
	return f.Provider.(providers.WebhookReceiver).ReadWebhook(h, b)
}

func (f *fireOnRead) VerifyWebhook(ctx context.Context, c providers.Connection, h http.Header, b []byte, now time.Time) error {
	return f.Provider.(providers.WebhookReceiver).VerifyWebhook(ctx, c, h, b, now)
}

func (f *fireOnRead) Transactions(ctx context.Context, c providers.Connection, req providers.TransactionRequest) (providers.TransactionPage, error) {
	if f.armed.CompareAndSwap(true, false) {
		f.fire()
		time.Sleep(1500 * time.Millisecond)
	}
	return f.Provider.Transactions(ctx, c, req)
}

// TestNotificationDuringASyncRunsItAgain: a notification that arrives
// after a sync began reading may announce what it missed: the job runs
// again as soon as the sync ends (not at the scheduler's next sweep), and
// only once.
func TestNotificationDuringASyncRunsItAgain(t *testing.T) {
	w := newNoticeWorld(t, "notice-late", 300)
	wrapped := &fireOnRead{Provider: w.syncer.Providers["plaid"], fire: func() { w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE") }}
	w.syncer.Providers["plaid"] = wrapped
	history := func() (n int) {
		if err := w.fx.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sync_history WHERE bank_connection_id = $1`, w.conn).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before, jobs := history(), w.syncJobs()
	wrapped.armed.Store(true)
	w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
	waitFor(t, 20*time.Second, "the sync and its re-run", func() bool { return history() >= before+2 && w.idle() })
	time.Sleep(worker.NoticeQuiet + time.Second)
	if n, j := history()-before, w.syncJobs()-jobs; n != 2 || j != 1 {
		t.Fatalf("a notification during a sync: %d syncs in %d jobs, want 2 in 1", n, j)
	}
}
