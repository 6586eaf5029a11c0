package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

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
	w := &noticeWorld{hookWorld: newHookWorld(t, true, worker.Webhooks{}), name: name}
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
	w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
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
	if genuine.header.Get("Plaid-Verification") == old.header.Get("Plaid-Verification") {
		genuine, old = got()[1], got()[0]
	}
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
	unknown := bytes.Replace(genuine.body, []byte(`"item_id":"`), []byte(`"item_id":"unknown`), 1)
	if status, body := post("/providers/plaid/webhooks", unknown, jwt); status != http.StatusOK || !strings.Contains(body, `"unknown_connection"`) {
		t.Fatalf("an Item no connection has: %d %s", status, body)
	}
	for _, p := range []string{"/providers/nosuch/webhooks", "/providers/mercury/webhooks"} {
		if status, body := post(p, genuine.body, jwt); status != http.StatusNotFound || !strings.Contains(body, `"NOT_FOUND"`) {
			t.Errorf("POST %s: %d %s, want 404", p, status, body)
		}
	}
}

// TestPlaidItemNotificationsTellErrorAndRepair: ITEM ERROR
// (ITEM_LOGIN_REQUIRED) marks the connection as needing a re-auth and
// takes it off the schedule, so that a SYNC_UPDATES_AVAILABLE then
// enqueues nothing (no provider call until the user acts);
// LOGIN_REPAIRED syncs it back to active; PENDING_EXPIRATION records the
// consent's end in its health.
func TestPlaidItemNotificationsTellErrorAndRepair(t *testing.T) {
	w := newNoticeWorld(t, "notice-item", 300)
	w.fire(w.simURL, "ERROR")
	waitFor(t, 10*time.Second, "the connection marked", func() bool { return w.health()["action"] == "reauth" })
	if c := w.connection(); c["status"] != "error" || c["lastProviderErrorCode"] != "ITEM_LOGIN_REQUIRED" || c["nextSyncAt"] != nil {
		t.Fatalf("after ITEM ERROR: %v", c)
	}
	jobs := w.syncJobs()
	w.fire(w.simURL, "SYNC_UPDATES_AVAILABLE")
	time.Sleep(2 * time.Second)
	if n := w.syncJobs(); n != jobs {
		t.Fatalf("a connection waiting for a re-auth: %d syncs enqueued by a notification", n-jobs)
	}
	w.fire(w.simURL, "LOGIN_REPAIRED")
	waitFor(t, 30*time.Second, "the repaired connection active", func() bool { return w.connection()["status"] == "active" })
	if h := w.health(); h["action"] != "none" {
		t.Fatalf("after LOGIN_REPAIRED: %v", h)
	}
	w.fire(w.simURL, "PENDING_EXPIRATION")
	waitFor(t, 10*time.Second, "the consent's end recorded", func() bool { return w.health()["consentExpiresAt"] != nil })
}

// TestStripeBalanceAvailableSyncsTheConnectedAccount: the simulator's
// balance.available for a connected account, signed with the Connect
// endpoint's secret, makes that account's connection sync as the clock
// advances; a signature made with another secret, or ten minutes old, is
// refused and enqueues nothing.
func TestStripeBalanceAvailableSyncsTheConnectedAccount(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{})
	ctx := context.Background()
	sealed, err := w.box.Seal(allsim.Credentials("stripe", "notice-stripe"))
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
