package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/destinations/destsim"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

const hookSecret = "whsec_test"

// receiver is a webhook endpoint that verifies signatures, records every
// acknowledged event, and fails on demand.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	failing  bool
	acked    []destinations.Event
	refused  int
	badSigns int
	delay    time.Duration
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := destinations.Verify(hookSecret, req.Header.Get(destinations.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		r.badSigns++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if r.failing {
		r.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	time.Sleep(r.delay)
	var ev destinations.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.acked = append(r.acked, ev)
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setFailing(f bool) {
	r.mu.Lock()
	r.failing = f
	r.mu.Unlock()
}

// counts returns the refused deliveries and the bad signatures.
func (r *receiver) counts() (refused, badSigns int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused, r.badSigns
}

func (r *receiver) setDelay(d time.Duration) {
	r.mu.Lock()
	r.delay = d
	r.mu.Unlock()
}

func (r *receiver) events() []destinations.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acked)
}

// destWorld is a user with an API key, the real API, the simulator, a
// webhook receiver, and a River client that can be started and stopped.
type destWorld struct {
	t     *testing.T
	pool  *pgxpool.Pool
	store *storage.Store
	box   *secrets.Box
	sim   *destsim.Server
	simU  string
	hook  *receiver
	user  uuid.UUID
	key   string
	api   *httptest.Server

	client *river.Client[pgx.Tx]
	cancel context.CancelFunc
	// metrics and log, when set, are the delivery worker's.
	metrics *worker.Metrics
	log     *slog.Logger
}

func newDestWorld(t *testing.T) *destWorld {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	box, err := secrets.New([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	w := &destWorld{t: t, pool: pool, store: storage.New(pool), box: box, sim: destsim.New(), hook: newReceiver(t)}
	simSrv := httptest.NewServer(w.sim)
	t.Cleanup(simSrv.Close)
	w.simU = simSrv.URL
	w.user = fx.User(domain.PlanPro, true).ID
	w.key = fx.Key(w.user, nil)
	inserter, err := worker.NewInsertClient(storage.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: w.store, Log: discard(), CursorKey: []byte("test cursor key, 32 bytes long!!"), Jobs: inserter})
	w.api = httptest.NewServer(a.Handler)
	t.Cleanup(w.api.Close)
	t.Cleanup(w.stop)
	return w
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// start runs a River client with the delivery worker, tuned for tests:
// retries one second apart, breakers opening for half a second.
func (w *destWorld) start() {
	w.t.Helper()
	guard := resilience.Config{Limits: &resilience.Limits{}, Retries: -1,
		Provider: resilience.BreakerConfig{Failures: 3, OpenFor: 500 * time.Millisecond}}
	log := w.log
	if log == nil {
		log = discard()
	}
	client, err := worker.NewClient(worker.Config{Store: w.store, Log: log,
		Destinations: &worker.Destinations{Box: w.box, RetryCap: time.Second, Metrics: w.metrics,
			Deliverer: destinations.NewDeliverer(destinations.Options{Guard: &guard, Webhooks: netguard.Policy{AllowPrivate: true}})}})
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := client.Start(ctx); err != nil {
		w.t.Fatal(err)
	}
	w.client, w.cancel = client, cancel
}

func (w *destWorld) stop() {
	if w.client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = w.client.Stop(ctx)
	w.cancel()
	w.client = nil
}

// addDestination stores a destination of the kind from its full config.
func (w *destWorld) addDestination(kind, config string, all bool) uuid.UUID {
	w.t.Helper()
	public, secret, err := destinations.SplitConfig(kind, json.RawMessage(config))
	if err != nil {
		w.t.Fatal(err)
	}
	sealed, err := w.box.Seal(secret)
	if err != nil {
		w.t.Fatal(err)
	}
	d, err := w.store.CreateDestination(context.Background(), storage.NewDestination{UserID: w.user, Kind: kind, Config: public, SealedSecret: sealed})
	if err != nil {
		w.t.Fatal(err)
	}
	if all {
		if err := w.store.SetAllAccounts(context.Background(), d.ID, true); err != nil {
			w.t.Fatal(err)
		}
	}
	return d.ID
}

func (w *destWorld) webhook(all bool) uuid.UUID {
	return w.addDestination(destinations.KindWebhook, fmt.Sprintf(`{"url":%q,"secret":%q}`, w.hook.srv.URL, hookSecret), all)
}

func (w *destWorld) airtable(all bool) uuid.UUID {
	return w.addDestination(destinations.KindAirtable, fmt.Sprintf(`{"baseUrl":%q,"baseId":"appTEST","table":"Accounts","token":"patTEST"}`, w.simU), all)
}

func (w *destWorld) sheets(all bool) uuid.UUID {
	return w.addDestination(destinations.KindGoogleSheets, fmt.Sprintf(`{"baseUrl":%q,"spreadsheetId":"sheet1","sheet":"Accounts","accessToken":"ya29.TEST"}`, w.simU), all)
}

// call sends a version 2 request and returns the account of the answer.
func (w *destWorld) call(method, path, body string) map[string]any {
	w.t.Helper()
	req, err := http.NewRequest(method, w.api.URL+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Account map[string]any `json:"account"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 || json.Unmarshal(b, &out) != nil {
		w.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return out.Account
}

func (w *destWorld) createAccount(name string) string {
	return w.call(http.MethodPost, "/v2/accounts", fmt.Sprintf(`{"name":%q,"type":"cash","currency":"USD","currentBalance":100.25}`, name))["id"].(string)
}

func (w *destWorld) rename(id, name string) {
	w.call(http.MethodPatch, "/v2/accounts/"+id, fmt.Sprintf(`{"name":%q}`, name))
}

// waitDelivered waits until every outbox event is delivered and no
// delivery job is left.
func (w *destWorld) waitDelivered() {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pending, jobs int
		err := w.pool.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM destination_outbox WHERE delivered_at IS NULL AND failed_at IS NULL),
			(SELECT count(*) FROM river_job WHERE kind = 'deliver_destination' AND state NOT IN ('completed', 'discarded', 'cancelled'))`).Scan(&pending, &jobs)
		if err != nil {
			w.t.Fatal(err)
		}
		if pending == 0 && jobs == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("still %d undelivered events and %d delivery jobs", pending, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventIDs returns the outbox event ids of a destination in change order.
func (w *destWorld) eventIDs(dest uuid.UUID) []uuid.UUID {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT id FROM destination_outbox WHERE destination_id = $1 ORDER BY seq`, dest)
	if err != nil {
		w.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

func ids(evs []destinations.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// airtableAcks returns the event ids Airtable acknowledged, in order.
func (w *destWorld) airtableAcks() []uuid.UUID {
	var out []uuid.UUID
	for _, r := range w.sim.Requests(destsim.Airtable) {
		if r.Method != http.MethodPatch || r.Status != http.StatusOK {
			continue
		}
		var body struct {
			Records []struct {
				Fields map[string]json.RawMessage `json:"fields"`
			} `json:"records"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Records) != 1 {
			w.t.Fatalf("airtable request %s: %v", r.Body, err)
		}
		var id uuid.UUID
		if err := json.Unmarshal(body.Records[0].Fields["Event ID"], &id); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

func str(v json.RawMessage) string {
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func TestDestinationsReceiveCreateUpdateClose(t *testing.T) {
	w := newDestWorld(t)
	hook, at, sh := w.webhook(true), w.airtable(true), w.sheets(true)
	w.start()
	id := w.createAccount("Cash box")
	w.rename(id, "Petty cash")
	closed := w.call(http.MethodDelete, "/v2/accounts/"+id, "")
	w.call(http.MethodDelete, "/v2/accounts/"+id, "") // already closed: no event
	w.waitDelivered()

	evs := w.hook.events()
	if got := []string{evs[0].Type, evs[1].Type, evs[2].Type}; len(evs) != 3 || !slices.Equal(got, []string{"account.created", "account.updated", "account.closed"}) {
		t.Fatalf("webhook events: %+v", evs)
	}
	if !slices.Equal(ids(evs), w.eventIDs(hook)) {
		t.Fatalf("webhook ids %v, outbox %v", ids(evs), w.eventIDs(hook))
	}
	var first, last map[string]any
	_ = json.Unmarshal(evs[0].Account, &first)
	_ = json.Unmarshal(evs[2].Account, &last)
	if first["name"] != "Cash box" || first["status"] != "active" || first["currentBalance"] != 100.25 || first["id"] != id {
		t.Errorf("created payload: %v", first)
	}
	if last["name"] != "Petty cash" || last["status"] != "closed" || last["closedAt"] != closed["closedAt"] {
		t.Errorf("closed payload: %v, want %v", last, closed)
	}
	if _, bad := w.hook.counts(); bad != 0 {
		t.Errorf("%d bad signatures", bad)
	}

	recs := w.sim.AirtableRecords("appTEST", "Accounts")
	if len(recs) != 1 {
		t.Fatalf("airtable records: %+v", recs)
	}
	f := recs[0].Fields
	if str(f["Account ID"]) != id || str(f["Name"]) != "Petty cash" || str(f["Status"]) != "closed" ||
		string(f["Current Balance"]) != "100.25" || str(f["Event Type"]) != "account.closed" {
		t.Errorf("airtable record: %s", mustJSON(f))
	}
	if got := w.airtableAcks(); !slices.Equal(got, w.eventIDs(at)) {
		t.Errorf("airtable acknowledged %v, want %v", got, w.eventIDs(at))
	}

	rows := w.sim.SheetValues("sheet1", "Accounts")
	if len(rows) != 2 || str(rows[0][0]) != "Account ID" || str(rows[1][0]) != id || str(rows[1][1]) != "Petty cash" ||
		str(rows[1][10]) != "closed" || string(rows[1][7]) != "100.25" || str(rows[1][12]) != w.eventIDs(sh)[2].String() {
		t.Errorf("sheet rows: %s", mustJSON(rows))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDestinationsOutageThenRecovery(t *testing.T) {
	w := newDestWorld(t)
	hook, at := w.webhook(true), w.airtable(true)
	w.hook.setFailing(true)
	if err := w.sim.SetFault(destsim.Airtable, destsim.FaultOutage); err != nil {
		t.Fatal(err)
	}
	w.start()
	a, b := w.createAccount("A"), w.createAccount("B")
	for i := range 3 {
		w.rename(a, fmt.Sprintf("A%d", i))
		w.rename(b, fmt.Sprintf("B%d", i))
	}
	// Let the drains fail a few times and the breakers open.
	deadline := time.Now().Add(10 * time.Second)
	attempted := func() bool {
		refused, _ := w.hook.counts()
		return refused >= 2 && len(w.sim.Requests(destsim.Airtable)) >= 2
	}
	for !attempted() {
		if time.Now().After(deadline) {
			t.Fatal("deliveries were not attempted during the outage")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(w.hook.events()); n != 0 {
		t.Fatalf("%d events acknowledged during the outage", n)
	}
	w.hook.setFailing(false)
	if err := w.sim.SetFault(destsim.Airtable, destsim.FaultNone); err != nil {
		t.Fatal(err)
	}
	w.waitDelivered()
	if got, want := ids(w.hook.events()), w.eventIDs(hook); len(want) != 8 || !slices.Equal(got, want) {
		t.Errorf("webhook acknowledged %v, want each of %v once, in order", got, want)
	}
	if got, want := w.airtableAcks(), w.eventIDs(at); !slices.Equal(got, want) {
		t.Errorf("airtable acknowledged %v, want each of %v once, in order", got, want)
	}
	for _, r := range w.sim.AirtableRecords("appTEST", "Accounts") {
		if n := str(r.Fields["Name"]); n != "A2" && n != "B2" {
			t.Errorf("airtable holds a stale change: %s", n)
		}
	}
}

func TestDestinationsDeliverAfterWorkerRestart(t *testing.T) {
	w := newDestWorld(t)
	hook := w.webhook(true)
	// No worker runs: the changes commit with their delivery jobs.
	id := w.createAccount("Wallet")
	w.rename(id, "Wallet 2")
	time.Sleep(200 * time.Millisecond)
	if n := len(w.hook.events()); n != 0 {
		t.Fatalf("%d events delivered without a worker", n)
	}
	w.start()
	w.waitDelivered()
	if got, want := ids(w.hook.events()), w.eventIDs(hook); len(want) != 2 || !slices.Equal(got, want) {
		t.Fatalf("after restart: acknowledged %v, want %v", got, want)
	}
	// Stop again mid-stream and restart: nothing lost, nothing twice.
	w.stop()
	w.rename(id, "Wallet 3")
	w.start()
	w.waitDelivered()
	if got, want := ids(w.hook.events()), w.eventIDs(hook); len(want) != 3 || !slices.Equal(got, want) {
		t.Fatalf("after second restart: acknowledged %v, want %v", got, want)
	}
}

func TestDestinationsChangesDuringDrainKeepOrder(t *testing.T) {
	w := newDestWorld(t)
	hook := w.webhook(true)
	w.hook.setDelay(15 * time.Millisecond)
	w.start()
	id := w.createAccount("Busy")
	for i := range 20 {
		w.rename(id, fmt.Sprintf("Busy %d", i))
	}
	w.waitDelivered()
	evs := w.hook.events()
	if got, want := ids(evs), w.eventIDs(hook); len(want) != 21 || !slices.Equal(got, want) {
		t.Fatalf("acknowledged %d events %v, want %d in order", len(got), got, len(want))
	}
	var lastAcct map[string]any
	_ = json.Unmarshal(evs[len(evs)-1].Account, &lastAcct)
	if lastAcct["name"] != "Busy 19" {
		t.Errorf("last event carries %v", lastAcct["name"])
	}
}

func TestDestinationsUnlinkStopsPropagation(t *testing.T) {
	w := newDestWorld(t)
	hook := w.webhook(false)
	w.start()
	id := w.createAccount("Linked later")
	acct := uuid.MustParse(id)
	ctx := context.Background()
	if err := w.store.LinkAccount(ctx, hook, acct); err != nil {
		t.Fatal(err)
	}
	w.rename(id, "Linked")
	w.waitDelivered()
	if err := w.store.UnlinkAccount(ctx, hook, acct); err != nil {
		t.Fatal(err)
	}
	w.rename(id, "Unlinked")
	w.waitDelivered()
	evs := w.hook.events()
	if len(evs) != 1 || evs[0].Type != "account.updated" {
		t.Fatalf("events: %+v", evs)
	}
	if n := len(w.eventIDs(hook)); n != 1 {
		t.Errorf("outbox holds %d events, want 1", n)
	}
}
