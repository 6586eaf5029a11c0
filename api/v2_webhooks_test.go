package api_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/metricstest"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// VerifyFinsyncSignature is the verification snippet of docs/webhooks.md,
// as a receiver copies it.
func VerifyFinsyncSignature(secret, header string, body []byte, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("malformed signature header")
	}
	if age := time.Since(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return errors.New("signature timestamp outside tolerance")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

// withWebhookKey gives the API a key to seal webhook secrets with.
func withWebhookKey(t *testing.T) envOption {
	box, err := secrets.FromHex(strings.Repeat("3f", 32))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *api.Config) { c.Box = box }
}

// hookWorld is the real API over a fresh database with a real River
// client running the sync and webhook workers, a provider simulator over
// HTTP, and one user with a key.
type hookWorld struct {
	*env
	st     *storage.Store
	sim    *sim.Simulator
	simURL string
	box    *secrets.Box
	client *river.Client[pgx.Tx]
	// syncer is the worker's; a test may set its clock or wrap its
	// adapters before the first sync.
	syncer *worker.Syncer
	// logs has the worker's log lines (JSON).
	logs *logBuffer
	user domain.User
	key  string
}

func newHookWorld(t *testing.T, allowPrivate bool, hooks worker.Webhooks) *hookWorld {
	return newHookWorldAt(t, time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC), allowPrivate, hooks)
}

// hookBox is the sealing box of every hookWorld.
func hookBox(t *testing.T) *secrets.Box {
	box, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// newHookWorldAt is newHookWorld with the simulator's first day start,
// and the API's options extra.
func newHookWorldAt(t *testing.T, start time.Time, allowPrivate bool, hooks worker.Webhooks, extra ...envOption) *hookWorld {
	t.Helper()
	box := hookBox(t)
	sm := allsim.New(sim.Options{Seed: 7, Start: start, HistoryTransactions: 30})
	simSrv := httptest.NewServer(sm)
	t.Cleanup(simSrv.Close)
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	w := &hookWorld{sim: sm, simURL: simSrv.URL, box: box, logs: &logBuffer{}}
	policy := netguard.Policy{AllowPrivate: allowPrivate}
	w.env = newEnv(t, append([]envOption{func(c *api.Config) {
		w.st = c.Store
		c.Box, c.WebhookPolicy = box, policy
		log := slog.New(slog.NewJSONHandler(w.logs, nil))
		syncer := &worker.Syncer{Store: c.Store, Providers: provs, Box: box, Log: log,
			ReconnectURL: "https://app.example.com/reconnect/{connection_id}",
			Now:          func() time.Time { return time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC) }}
		hooks.Box, hooks.Policy = box, policy
		w.client = startWorkerClient(t, worker.Config{Store: c.Store, Log: log,
			Syncer: syncer, Webhooks: &hooks})
		c.Jobs = w.client
		c.Notices = &worker.NoticeReceiver{Syncer: syncer, Jobs: w.client}
		w.syncer = syncer
	}}, extra...)...)
	w.user = w.fx.User(domain.PlanPro, true)
	w.key = w.fx.Key(w.user.ID, nil)
	return w
}

// connect stores a Plaid connection of the user to the simulator.
func (w *hookWorld) connect(name string) uuid.UUID {
	w.t.Helper()
	sealed, err := w.box.Seal(allsim.Credentials("plaid", name))
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := w.st.CreateConnection(context.Background(), storage.NewConnection{
		UserID: w.user.ID, Provider: "plaid", BaseURL: allsim.BaseURL("plaid", w.simURL), SealedCredentials: sealed})
	if err != nil {
		w.t.Fatal(err)
	}
	return c.ID
}

// sync enqueues a sync of the connection on the worker and waits for the
// job to end, returning its final state.
func (w *hookWorld) sync(id uuid.UUID) string {
	w.t.Helper()
	ctx := context.Background()
	res, err := w.client.Insert(ctx, jobargs.SyncConnection{ConnectionID: id}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	var state string
	waitFor(w.t, 60*time.Second, "sync job to end", func() bool {
		if err := w.env.fx.Pool.QueryRow(ctx, `SELECT state FROM river_job WHERE id = $1`, res.Job.ID).Scan(&state); err != nil {
			w.t.Fatal(err)
		}
		return state == "completed" || state == "cancelled" || state == "discarded"
	})
	return state
}

// register creates a webhook through the API and returns its id and secret.
func (w *hookWorld) register(url string, events ...string) (string, string) {
	w.t.Helper()
	body, _ := json.Marshal(map[string]any{"url": url, "events": events})
	r := w.do(http.MethodPost, "/v2/webhooks", w.key, bytes.NewReader(body))
	w.expect(r, http.StatusCreated, "")
	hook, _ := r.json(w.t)["webhook"].(map[string]any)
	id, _ := hook["id"].(string)
	secret, _ := hook["secret"].(string)
	if id == "" || !strings.HasPrefix(secret, "whsec_") {
		w.t.Fatalf("create answer %s", r.body)
	}
	return id, secret
}

// deliveries lists the webhook's deliveries through the API, oldest first.
func (w *hookWorld) deliveries(id string) []map[string]any {
	w.t.Helper()
	r := w.get("/v2/webhooks/"+id+"/deliveries?limit=250", w.key)
	w.expect(r, http.StatusOK, "")
	list, _ := r.json(w.t)["deliveries"].([]any)
	out := make([]map[string]any, len(list))
	for i, d := range list {
		out[len(list)-1-i] = d.(map[string]any)
	}
	return out
}

// hookEvent is one delivery a receiver accepted.
type hookEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	CreatedAt time.Time      `json:"createdAt"`
	Data      map[string]any `json:"data"`
}

// receiver is a consumer's endpoint: it verifies every delivery with the
// documented snippet and answers as answer says (200 by default).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	answer func(r *http.Request) int
	got    []hookEvent
	calls  int
	bad    []string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.calls++
	answer, secret := rc.answer, rc.secret
	rc.mu.Unlock()
	status := http.StatusOK
	if answer != nil {
		status = answer(r)
	}
	if status >= 300 {
		w.WriteHeader(status)
		return
	}
	if err := VerifyFinsyncSignature(secret, r.Header.Get("Finsync-Signature"), body, 5*time.Minute); err != nil {
		rc.fail("signature: " + err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	// Tampering with one byte must break the signature.
	if VerifyFinsyncSignature(secret, r.Header.Get("Finsync-Signature"), append([]byte(" "), body...), 5*time.Minute) == nil {
		rc.fail("a tampered body verified")
	}
	var ev hookEvent
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil || ev.ID == "" || ev.Type == "" || ev.CreatedAt.IsZero() || ev.Data == nil {
		rc.fail("body " + string(body))
	}
	rc.mu.Lock()
	rc.got = append(rc.got, ev)
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) fail(msg string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.bad = append(rc.bad, msg)
}

func (rc *receiver) setSecret(s string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = s
}

func (rc *receiver) setAnswer(f func(*http.Request) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = f
}

// events returns what was accepted so far, failing on a bad delivery.
func (rc *receiver) events() []hookEvent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		rc.t.Fatalf("bad deliveries: %v", rc.bad)
	}
	return slices.Clone(rc.got)
}

func (rc *receiver) callCount() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.calls
}

func types(evs []hookEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func eventIDs(evs []hookEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestWebhookDeliversSignedEventsOfSyncsAndConnectionState follows one
// connection through a first sync, a provider asking to re-link it, and a
// recovery: the receiver verifies every delivery with the documented
// snippet and gets each event once, in order, with its data; the
// deliveries listing shows them delivered.
func TestWebhookDeliversSignedEventsOfSyncsAndConnectionState(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{})
	rc := newReceiver(t)
	id, secret := w.register(rc.srv.URL+"/hook", storage.WebhookEventTypes()...)
	rc.setSecret(secret)
	conn := w.connect("hooks-signed")

	if st := w.sync(conn); st != "completed" {
		t.Fatalf("first sync %s", st)
	}
	waitFor(t, 30*time.Second, "first sync's events", func() bool { return len(rc.events()) >= 2 })
	first := rc.events()
	if got := types(first); !slices.Equal(got, []string{"transactions.changed", "sync.completed"}) {
		t.Fatalf("first sync's events %v", got)
	}
	var added int
	if err := w.env.fx.Pool.QueryRow(context.Background(), `SELECT count(*) FROM transactions WHERE bank_connection_id = $1`, conn).Scan(&added); err != nil {
		t.Fatal(err)
	}
	data := first[1].Data
	if data["connectionId"] != conn.String() || data["added"] != float64(added) || data["modified"] != float64(0) || data["removed"] != float64(0) || added == 0 {
		t.Fatalf("sync.completed data %v, want connection %s with %d added", data, conn, added)
	}

	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	if st := w.sync(conn); st != "cancelled" {
		t.Fatalf("sync needing re-link: %s", st)
	}
	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	if st := w.sync(conn); st != "completed" {
		t.Fatalf("sync after re-link: %s", st)
	}
	waitFor(t, 30*time.Second, "all events", func() bool { return len(rc.events()) >= 6 })
	all := rc.events()
	want := []string{"transactions.changed", "sync.completed", "connection.error", "connection.reauth_required", "connection.recovered", "sync.completed"}
	if got := types(all); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if d := all[2].Data; d["connectionId"] != conn.String() || d["errorCode"] != "ITEM_LOGIN_REQUIRED" ||
		d["errorClass"] != "reauth_required" || d["action"] != "reauth" ||
		d["reconnectUrl"] != "https://app.example.com/reconnect/"+conn.String() {
		t.Fatalf("error data %v", d)
	}
	if d := all[3].Data; d["connectionId"] != conn.String() || d["errorCode"] != "ITEM_LOGIN_REQUIRED" ||
		d["reconnectUrl"] != "https://app.example.com/reconnect/"+conn.String() {
		t.Fatalf("reauth data %v", d)
	}
	if d := all[4].Data; d["connectionId"] != conn.String() || d["previousErrorClass"] != "reauth_required" {
		t.Fatalf("recovered data %v", d)
	}
	listed := w.deliveries(id)
	if len(listed) != len(all) {
		t.Fatalf("%d deliveries listed, %d received", len(listed), len(all))
	}
	for i, d := range listed {
		if d["eventId"] != all[i].ID || d["status"] != "delivered" || d["attempts"] != float64(1) || d["lastError"] != nil {
			t.Fatalf("delivery %d: %v, received %v", i, d, all[i])
		}
	}
	// A second page through the cursor continues where the first ended.
	r := w.get("/v2/webhooks/"+id+"/deliveries?limit=2", w.key)
	w.expect(r, http.StatusOK, "")
	next, _ := r.json(t)["pageInfo"].(map[string]any)["nextCursor"].(string)
	r2 := w.get("/v2/webhooks/"+id+"/deliveries?limit=2&cursor="+next, w.key)
	w.expect(r2, http.StatusOK, "")
	page2 := r2.json(t)["deliveries"].([]any)
	if len(page2) != 2 || page2[0].(map[string]any)["eventId"] != all[len(all)-3].ID {
		t.Fatalf("second page %s", r2.body)
	}
}

// TestWebhookRegistrationValidation: bad bodies and ids answer 400
// BAD_REQUEST in the envelope, literal non-public addresses included.
func TestWebhookRegistrationValidation(t *testing.T) {
	w := newHookWorld(t, false, worker.Webhooks{})
	bad := map[string]string{
		"not a URL":          `{"url":"not a url","events":["sync.completed"]}`,
		"plain http":         `{"url":"http://hooks.example.com/x","events":["sync.completed"]}`,
		"no host":            `{"url":"https:///x","events":["sync.completed"]}`,
		"loopback literal":   `{"url":"https://127.0.0.1/x","events":["sync.completed"]}`,
		"IPv6 loopback":      `{"url":"https://[::1]:8443/x","events":["sync.completed"]}`,
		"private literal":    `{"url":"https://10.0.0.7/x","events":["sync.completed"]}`,
		"metadata literal":   `{"url":"https://169.254.169.254/latest/meta-data/","events":["sync.completed"]}`,
		"unknown event":      `{"url":"https://hooks.example.com/x","events":["sync.started"]}`,
		"empty events":       `{"url":"https://hooks.example.com/x","events":[]}`,
		"missing events":     `{"url":"https://hooks.example.com/x"}`,
		"events not strings": `{"url":"https://hooks.example.com/x","events":[1]}`,
		"duplicate event":    `{"url":"https://hooks.example.com/x","events":["sync.completed","sync.completed"]}`,
		"missing url":        `{"events":["sync.completed"]}`,
		"url not a string":   `{"url":5,"events":["sync.completed"]}`,
		"unknown field":      `{"url":"https://hooks.example.com/x","events":["sync.completed"],"secret":"mine"}`,
		"not an object":      `["https://hooks.example.com/x"]`,
	}
	for name, body := range bad {
		r := w.do(http.MethodPost, "/v2/webhooks", w.key, strings.NewReader(body))
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d %s", name, r.status, r.body)
			continue
		}
		w.expect(r, http.StatusBadRequest, "BAD_REQUEST")
	}
	for _, path := range []string{"/v2/webhooks/nope", "/v2/webhooks/123/deliveries"} {
		w.expect(w.get(path, w.key), http.StatusBadRequest, "BAD_REQUEST")
	}
	w.expect(w.do(http.MethodDelete, "/v2/webhooks/not-a-uuid", w.key, nil), http.StatusBadRequest, "BAD_REQUEST")
	if r := w.get("/v2/webhooks", w.key); r.status != http.StatusOK || len(r.json(t)["webhooks"].([]any)) != 0 {
		t.Fatalf("refused registrations were stored: %s", r.body)
	}
	// A public name is accepted (it is checked on every delivery).
	w.register("https://hooks.example.com/finsync", "sync.completed")
}

// TestWebhookIsolationAcrossUsers: user B neither sees, reads, lists the
// deliveries of nor deletes user A's webhook.
func TestWebhookIsolationAcrossUsers(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{})
	id, _ := w.register("https://hooks.example.com/a", "sync.completed")
	b := w.fx.User(domain.PlanPro, true)
	keyB := w.fx.Key(b.ID, nil)
	w.expect(w.get("/v2/webhooks/"+id, keyB), http.StatusNotFound, "NOT_FOUND")
	w.expect(w.get("/v2/webhooks/"+id+"/deliveries", keyB), http.StatusNotFound, "NOT_FOUND")
	w.expect(w.do(http.MethodDelete, "/v2/webhooks/"+id, keyB, nil), http.StatusNotFound, "NOT_FOUND")
	if r := w.get("/v2/webhooks", keyB); len(r.json(t)["webhooks"].([]any)) != 0 {
		t.Fatalf("B lists %s", r.body)
	}
	// Still A's, and A can delete it once.
	w.expect(w.get("/v2/webhooks/"+id, w.key), http.StatusOK, "")
	if r := w.get("/v2/webhooks/"+id, w.key); strings.Contains(string(r.body), "whsec_") {
		t.Fatalf("secret shown again: %s", r.body)
	}
	w.expect(w.do(http.MethodDelete, "/v2/webhooks/"+id, w.key, nil), http.StatusNoContent, "")
	w.expect(w.get("/v2/webhooks/"+id, w.key), http.StatusNotFound, "NOT_FOUND")
	w.expect(w.do(http.MethodDelete, "/v2/webhooks/"+id, w.key, nil), http.StatusNotFound, "NOT_FOUND")
}

// TestWebhookSecretIsSealedAtRest: the stored secret is not the secret.
func TestWebhookSecretIsSealedAtRest(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{})
	id, secret := w.register("https://hooks.example.com/a", "sync.completed")
	var sealed []byte
	if err := w.env.fx.Pool.QueryRow(context.Background(), `SELECT sealed_secret FROM webhook_subscriptions WHERE id = $1`, id).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(secret)) || bytes.Contains(sealed, []byte(strings.TrimPrefix(secret, "whsec_"))) {
		t.Fatal("secret stored in clear")
	}
	if opened, err := w.box.Open(sealed); err != nil || string(opened) != secret {
		t.Fatalf("sealed secret opens to %q, %v", opened, err)
	}
}

// TestWebhookLastErrorTellsNothingOfTheNetwork: without
// FINSYNC_WEBHOOK_ALLOW_PRIVATE, three subscriptions fail: one to a
// literal loopback address in an IPv6 form (stored before the guard
// refused it at registration), one to a name resolving to loopback, one to
// a name that does not resolve. Their lastError names no address and no
// resolver, and the last two read the same and are retried alike (a
// webhook pointed inward cannot tell an internal name that exists from one
// that does not); the literal one is given up at once. The receiver never
// hears of any, and the worker's log names each URL without its query
// (the token) while keeping the detail.
func TestWebhookLastErrorTellsNothingOfTheNetwork(t *testing.T) {
	w := newHookWorld(t, false, worker.Webhooks{RetryCap: time.Second})
	rc := newReceiver(t)
	port := rc.srv.URL[strings.LastIndex(rc.srv.URL, ":"):]
	const token = "tok3n-s3cret"
	literalURL := "https://[::127.0.0.1]" + port + "/hook?token=" + token + "#frag"
	sealed, err := w.box.Seal([]byte("whsec_stored-before"))
	if err != nil {
		t.Fatal(err)
	}
	literal, err := w.st.CreateWebhook(context.Background(), storage.NewWebhook{
		UserID: w.user.ID, URL: literalURL, Events: []string{"sync.completed"}, SealedSecret: sealed})
	if err != nil {
		t.Fatal(err)
	}
	internal, secret := w.register("https://localhost"+port+"/hook?token="+token, "sync.completed")
	rc.setSecret(secret)
	missing, _ := w.register("https://no-such-host.invalid/hook?token="+token, "sync.completed")
	if st := w.sync(w.connect("hooks-ssrf")); st != "completed" {
		t.Fatalf("sync %s", st)
	}
	got := map[string]map[string]any{}
	waitFor(t, 60*time.Second, "every delivery to fail at least twice (the literal once)", func() bool {
		for _, id := range []string{literal.ID.String(), internal, missing} {
			list := w.deliveries(id)
			if len(list) != 1 || list[0]["attempts"].(float64) < 1 {
				return false
			}
			got[id] = list[0]
		}
		return got[internal]["attempts"].(float64) >= 2 && got[missing]["attempts"].(float64) >= 2
	})
	lit, in, miss := got[literal.ID.String()], got[internal], got[missing]
	if lit["status"] != "failed" || lit["lastError"] != netguard.MsgRefusedAddress || lit["nextAttemptAt"] != nil {
		t.Errorf("literal loopback: %v", lit)
	}
	for name, d := range map[string]map[string]any{"name resolving to loopback": in, "name not resolving": miss} {
		if d["status"] != "pending" || d["lastError"] != netguard.MsgUnresolved || d["nextAttemptAt"] == nil {
			t.Errorf("%s: %v", name, d)
		}
	}
	leaks := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|::|:53\b|lookup \S+ on|loopback|no such host|localhost|` + token)
	for _, d := range []map[string]any{lit, in, miss} {
		if msg, _ := d["lastError"].(string); leaks.MatchString(msg) {
			t.Errorf("lastError %q tells of the network or the URL", msg)
		}
	}
	if rc.callCount() != 0 {
		t.Fatalf("the receiver was called %d times", rc.callCount())
	}
	logged := map[string]bool{}
	for _, l := range w.logs.lines(t) {
		if l["msg"] != "webhook delivery failed" {
			continue
		}
		u, _ := l["url"].(string)
		logged[u] = true
		if e, _ := l["error"].(string); e == "" {
			t.Errorf("log line without the detail: %v", l)
		}
	}
	for _, want := range []string{"https://[::127.0.0.1]" + port + "/hook", "https://localhost" + port + "/hook", "https://no-such-host.invalid/hook"} {
		if !logged[want] {
			t.Errorf("no failure logged for %s; logged %v", want, logged)
		}
	}
	w.logs.mu.Lock()
	all := w.logs.buf.String()
	w.logs.mu.Unlock()
	if strings.Contains(all, token) || strings.Contains(all, "frag") {
		t.Errorf("the worker's log shows a URL's query or fragment:\n%s", all)
	}
}

// TestWebhookRedirectIsNotFollowed: a receiver answering 302 fails the
// attempt with the redirect named; its target is never called.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{RetryCap: time.Second})
	target := newReceiver(t)
	rc := newReceiver(t)
	rc.setAnswer(func(r *http.Request) int { return http.StatusFound })
	rc.srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.calls++
		rc.mu.Unlock()
		http.Redirect(rw, r, target.srv.URL+"/elsewhere", http.StatusFound)
	})
	id, _ := w.register(rc.srv.URL+"/hook", "sync.completed")
	if st := w.sync(w.connect("hooks-redirect")); st != "completed" {
		t.Fatalf("sync %s", st)
	}
	var d map[string]any
	waitFor(t, 30*time.Second, "two failed attempts", func() bool {
		list := w.deliveries(id)
		if len(list) == 1 && list[0]["attempts"].(float64) >= 2 {
			d = list[0]
			return true
		}
		return false
	})
	msg, _ := d["lastError"].(string)
	if d["status"] != "pending" || msg != "HTTP status 302: redirects are not followed" {
		t.Fatalf("delivery %v", d)
	}
	if target.callCount() != 0 {
		t.Fatalf("the redirect target was called %d times", target.callCount())
	}
}

// TestWebhookHangingReceiverSlowsNothingElse: a receiver that never
// answers holds neither the sync that caused the event nor another
// webhook's delivery; both finish while its request is still open.
func TestWebhookHangingReceiverSlowsNothingElse(t *testing.T) {
	w := newHookWorld(t, true, worker.Webhooks{Timeout: worker.MaxWebhookTimeout})
	release := make(chan struct{})
	var hangMu sync.Mutex
	hanging, returned := 0, 0
	hang := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		hangMu.Lock()
		hanging++
		hangMu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		hangMu.Lock()
		returned++
		hangMu.Unlock()
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	good := newReceiver(t)
	w.register(hang.URL+"/hook", "sync.completed")
	_, secret := w.register(good.srv.URL+"/hook", "sync.completed")
	good.setSecret(secret)
	conn := w.connect("hooks-hang")
	if st := w.sync(conn); st != "completed" {
		t.Fatalf("sync %s", st)
	}
	waitFor(t, 30*time.Second, "the other webhook's delivery", func() bool { return len(good.events()) == 1 })
	waitFor(t, 30*time.Second, "the hanging receiver to be called", func() bool {
		hangMu.Lock()
		defer hangMu.Unlock()
		return hanging == 1
	})
	// A second sync completes too, and its event reaches the other webhook.
	if st := w.sync(conn); st != "completed" {
		t.Fatalf("second sync %s", st)
	}
	waitFor(t, 30*time.Second, "the second event", func() bool { return len(good.events()) == 2 })
	hangMu.Lock()
	defer hangMu.Unlock()
	if hanging != 1 || returned != 0 {
		t.Fatalf("hanging receiver: %d calls, %d returned; want its one call still open", hanging, returned)
	}
}

// TestWebhookOrderAcrossTwoMinuteOutage: the receiver answers 503 for two
// minutes of wall time while syncs go on and add events; every sync
// completes during the outage, and once the receiver is back every event
// arrives, in the order of the changes, none lost and none twice.
func TestWebhookOrderAcrossTwoMinuteOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a two-minute outage")
	}
	w := newHookWorld(t, true, worker.Webhooks{RetryCap: 2 * time.Second})
	rc := newReceiver(t)
	id, secret := w.register(rc.srv.URL+"/hook", "sync.completed", "transactions.changed")
	rc.setSecret(secret)
	outageEnds := time.Now().Add(2 * time.Minute)
	rc.setAnswer(func(*http.Request) int {
		if time.Now().Before(outageEnds) {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	conns := []uuid.UUID{w.connect("hooks-outage-a"), w.connect("hooks-outage-b")}
	syncs := 0
	for {
		if st := w.sync(conns[syncs%2]); st != "completed" {
			t.Fatalf("sync %d during the outage: %s", syncs, st)
		}
		syncs++
		if time.Until(outageEnds) < 25*time.Second {
			break
		}
		time.Sleep(15 * time.Second)
	}
	// Still within the outage: every event is pending, the oldest retried.
	listed := w.deliveries(id)
	accepted, calls, inOutage := len(rc.events()), rc.callCount(), time.Now().Before(outageEnds)
	if !inOutage {
		t.Fatal("the syncs outlasted the outage; the test cannot observe it")
	}
	if accepted != 0 || calls < 3 {
		t.Fatalf("during the outage: %d events accepted, %d attempts", accepted, calls)
	}
	want := make([]string, len(listed))
	for i, d := range listed {
		want[i] = d["eventId"].(string)
		if d["status"] != "pending" {
			t.Fatalf("delivery during the outage %v", d)
		}
	}
	if first := listed[0]; first["attempts"].(float64) < 2 || first["lastError"] != "HTTP status 503" || first["nextAttemptAt"] == nil {
		t.Fatalf("oldest delivery during the outage %v", first)
	}
	if syncs < 5 || len(want) < syncs {
		t.Fatalf("%d syncs, %d events enqueued", syncs, len(want))
	}
	waitFor(t, 90*time.Second, "every event after the outage", func() bool { return len(rc.events()) >= len(want) })
	time.Sleep(2 * time.Second) // room for a duplicate to show
	got := eventIDs(rc.events())
	if !slices.Equal(got, want) {
		t.Fatalf("received %d events %v,\nwant %d in order %v", len(got), got, len(want), want)
	}
	for _, d := range w.deliveries(id) {
		if d["status"] != "delivered" {
			t.Fatalf("delivery %v", d)
		}
	}
	t.Logf("%d syncs during a 2-minute outage, %d events, %d attempts, all delivered in order", syncs, len(want), rc.callCount())
}

// TestWebhookLimitPerUser: a user has at most MaxWebhooksPerUser
// subscriptions, even when the creations race; deleting one makes room.
func TestWebhookLimitPerUser(t *testing.T) {
	w := newHookWorld(t, false, worker.Webhooks{})
	n := storage.MaxWebhooksPerUser + 5
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"url":"https://hooks.example.com/%d","events":["sync.completed"]}`, i)
			codes <- w.do(http.MethodPost, "/v2/webhooks", w.key, strings.NewReader(body)).status
		}()
	}
	wg.Wait()
	close(codes)
	created, refused := 0, 0
	for c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusBadRequest:
			refused++
		default:
			t.Fatalf("status %d", c)
		}
	}
	if created != storage.MaxWebhooksPerUser || refused != 5 {
		t.Fatalf("%d created and %d refused of %d racing creations, want %d and 5", created, refused, n, storage.MaxWebhooksPerUser)
	}
	r := w.do(http.MethodPost, "/v2/webhooks", w.key, strings.NewReader(`{"url":"https://hooks.example.com/more","events":["sync.completed"]}`))
	w.expect(r, http.StatusBadRequest, "BAD_REQUEST")
	list := w.get("/v2/webhooks", w.key).json(t)["webhooks"].([]any)
	w.expect(w.do(http.MethodDelete, "/v2/webhooks/"+list[0].(map[string]any)["id"].(string), w.key, nil), http.StatusNoContent, "")
	w.register("https://hooks.example.com/room", "sync.completed")
}

// TestWebhookCreateReplaysWithIdempotencyKey: a retry with the same key
// gets the same webhook and secret, not a second webhook, and the stored
// answer does not hold the secret in clear.
func TestWebhookCreateReplaysWithIdempotencyKey(t *testing.T) {
	w := newHookWorld(t, false, worker.Webhooks{})
	body := `{"url":"https://hooks.example.com/idem","events":["sync.completed"]}`
	post := func() response {
		req, err := http.NewRequest(http.MethodPost, w.srv.URL+"/v2/webhooks", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+w.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "create-hook-1")
		resp, err := w.env.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{status: resp.StatusCode, header: resp.Header, body: b}
	}
	first, second := post(), post()
	w.expect(first, http.StatusCreated, "")
	w.expect(second, http.StatusCreated, "")
	if string(first.body) != string(second.body) || second.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("replay differs:\n%s\n%s (replayed %q)", first.body, second.body, second.header.Get("Idempotent-Replayed"))
	}
	hook := first.json(t)["webhook"].(map[string]any)
	secret, _ := hook["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("no secret in %s", first.body)
	}
	if list := w.get("/v2/webhooks", w.key).json(t)["webhooks"].([]any); len(list) != 1 {
		t.Fatalf("%d webhooks after a retried create, want 1", len(list))
	}
	var inClear int
	if err := w.fx.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM idempotency_keys WHERE position($1::bytea IN body) > 0`, []byte(secret)).Scan(&inClear); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := w.fx.Pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE body IS NOT NULL`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if inClear != 0 || stored != 1 {
		t.Fatalf("%d stored answers, %d holding the secret in clear", stored, inClear)
	}

	// The key that sealed the stored answer is gone (a body that opens with
	// none of the keys): a retry is told so, and still creates nothing.
	if _, err := w.fx.Pool.Exec(context.Background(), `UPDATE idempotency_keys SET body = '\x00' WHERE body IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	w.expect(post(), http.StatusConflict, "CONFLICT")
	if list := w.get("/v2/webhooks", w.key).json(t)["webhooks"].([]any); len(list) != 1 {
		t.Fatalf("%d webhooks after a retry whose stored answer was lost, want 1", len(list))
	}
}

// TestWebhooksNeedAKeyWithoutAccountScope: webhooks receive events of all
// the user's accounts, so a key limited to some accounts manages none
// (403 SCOPED_KEY_NOT_ALLOWED), not even the user's existing ones.
func TestWebhooksNeedAKeyWithoutAccountScope(t *testing.T) {
	w := newHookWorld(t, false, worker.Webhooks{})
	id, _ := w.register("https://hooks.example.com/all", "sync.completed")
	conn := w.fx.Connection(w.user.ID, "plaid", "active")
	scoped := w.fx.Key(w.user.ID, []uuid.UUID{w.fx.Account(w.user.ID, conn, "plaid", "Scoped")})
	body := `{"url":"https://hooks.example.com/scoped","events":["sync.completed"]}`
	for _, r := range []response{
		w.do(http.MethodPost, "/v2/webhooks", scoped, strings.NewReader(body)),
		w.get("/v2/webhooks", scoped),
		w.get("/v2/webhooks/"+id, scoped),
		w.get("/v2/webhooks/"+id+"/deliveries", scoped),
		w.do(http.MethodDelete, "/v2/webhooks/"+id, scoped, nil),
	} {
		w.expect(r, http.StatusForbidden, "SCOPED_KEY_NOT_ALLOWED")
	}
	if list := w.get("/v2/webhooks", w.key).json(t)["webhooks"].([]any); len(list) != 1 {
		t.Fatalf("%d webhooks, want the one registered with the unscoped key", len(list))
	}
}

// TestWebhookMetricsCountAttemptsAndLag: a receiver that fails its first
// answer and then accepts shows, in the worker's metrics, one retry and
// one delivery per event, with the delivery's lag observed.
func TestWebhookMetricsCountAttemptsAndLag(t *testing.T) {
	reg := prometheus.NewRegistry()
	w := newHookWorld(t, true, worker.Webhooks{RetryCap: time.Second, Metrics: worker.NewMetrics(reg, nil)})
	rc := newReceiver(t)
	id, secret := w.register(rc.srv.URL+"/hook", "sync.completed")
	rc.setSecret(secret)
	var failedOnce atomic.Bool
	rc.setAnswer(func(*http.Request) int {
		if failedOnce.CompareAndSwap(false, true) {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	if st := w.sync(w.connect("hooks-metrics")); st != "completed" {
		t.Fatalf("sync %s", st)
	}
	waitFor(t, 30*time.Second, "the event delivered after one failure", func() bool {
		list := w.deliveries(id)
		return len(list) == 1 && list[0]["status"] == "delivered"
	})
	retry, _ := metricstest.Sample(t, reg, "finsync_webhook_attempts_total", map[string]string{"type": "sync.completed", "outcome": "retry"})
	delivered, _ := metricstest.Sample(t, reg, "finsync_webhook_attempts_total", map[string]string{"type": "sync.completed", "outcome": "delivered"})
	lags, _ := metricstest.Sample(t, reg, "finsync_webhook_delivery_lag_seconds", map[string]string{"type": "sync.completed"})
	if retry != 1 || delivered != 1 || lags != 1 {
		t.Fatalf("attempts: %v retry, %v delivered, %v lags observed; want 1 each", retry, delivered, lags)
	}
}
