package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// syncWorld is an API whose River client runs the real sync (against the
// provider simulator over HTTP, applying rules to each stored page) and
// the real rule jobs.
type syncWorld struct {
	e    *env
	sim  *sim.Simulator
	jobs *river.Client[pgx.Tx]
	user domain.User
	key  string
	conn domain.BankConnection
}

func newSyncWorld(t *testing.T) *syncWorld {
	t.Helper()
	s := allsim.New(sim.Options{Seed: 23, Start: time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC), HistoryTransactions: 60})
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	box, err := secrets.FromHex(strings.Repeat("3f", 32))
	if err != nil {
		t.Fatal(err)
	}
	w := &syncWorld{sim: s}
	w.e = newEnv(t, func(c *api.Config) {
		provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Rates: c.Store, Quotas: c.Store})
		if err != nil {
			t.Fatal(err)
		}
		syncer := &worker.Syncer{Store: c.Store, Providers: provs, Box: box, Log: c.Log, Holder: uuid.New()}
		w.jobs = startWorkerClient(t, worker.Config{Store: c.Store, Log: c.Log, Syncer: syncer})
		c.Jobs = w.jobs
	})
	w.user = w.e.fx.User(domain.PlanPro, true)
	w.key = w.e.fx.Key(w.user.ID, nil)
	sealed, err := box.Seal(allsim.Credentials("plaid", "provenance"))
	if err != nil {
		t.Fatal(err)
	}
	w.conn, err = storage.New(w.e.fx.Pool).CreateConnection(context.Background(), storage.NewConnection{
		UserID: w.user.ID, Provider: "plaid", BaseURL: allsim.BaseURL("plaid", simSrv.URL), SealedCredentials: sealed,
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sync runs one real sync of the connection through River and waits for
// it (and any rule job) to finish.
func (w *syncWorld) sync(t *testing.T) {
	t.Helper()
	if _, err := w.jobs.Insert(context.Background(), jobargs.SyncConnection{ConnectionID: w.conn.ID}, nil); err != nil {
		t.Fatal(err)
	}
	waitJobs(t, w.e.fx.Pool)
}

// all lists every transaction of the user (every status, hidden too)
// through the API, following the cursor, keyed by provider id.
func (w *syncWorld) all(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	path := "/v2/transactions?status=all&includeHidden=true&limit=100"
	for {
		m := w.e.get(path, w.key).json(t)
		for _, v := range m["transactions"].([]any) {
			tx := v.(map[string]any)
			out[tx["providerId"].(string)] = tx
		}
		info := m["pageInfo"].(map[string]any)
		if info["hasMore"] != true {
			return out
		}
		path = "/v2/transactions?status=all&includeHidden=true&limit=100&cursor=" + url.QueryEscape(info["nextCursor"].(string))
	}
}

// provenance is a transaction's category and where it came from, as the
// API shows them.
type provenance struct{ category, source, rule string }

func provenanceOf(tx map[string]any) provenance {
	s := func(k string) string { v, _ := tx[k].(string); return v }
	return provenance{category: s("categoryId"), source: s("categorySource"), rule: s("categoryRuleId")}
}

func TestCategoryProvenanceThroughSyncRulesEditsAndUndo(t *testing.T) {
	w := newSyncWorld(t)
	e := w.e
	w.sync(t)
	synced := w.all(t)
	if len(synced) == 0 {
		t.Fatal("the sync stored no transactions")
	}
	withCategory := 0
	for pid, tx := range synced {
		p := provenanceOf(tx)
		if p.source != "provider" || p.rule != "" {
			t.Fatalf("after the sync, %s: %+v, want provider and no rule", pid, p)
		}
		if p.category != "" {
			withCategory++
		}
	}
	if withCategory == 0 {
		t.Fatal("the provider gave no categories: nothing to check precedence against")
	}

	// Pick a pending transaction whose summary the rule will match: the
	// posted one replacing it must get the rule's category too. Another
	// pending one the user categorises: the posted one must keep that.
	var rulePending, userPending map[string]any
	for _, tx := range synced {
		if tx["status"] != "pending" {
			continue
		}
		switch {
		case rulePending == nil:
			rulePending = tx
		case userPending == nil && tx["summary"] != rulePending["summary"]:
			userPending = tx
		}
	}
	if rulePending == nil || userPending == nil {
		t.Fatal("the simulator gave fewer than two pending transactions")
	}
	summary := rulePending["summary"].(string)
	mine := e.fx.Category(w.user.ID, "Mine", "Own")
	ruled := e.fx.Category(w.user.ID, "Ruled", "Own")

	r := e.send(http.MethodPost, "/v2/rules", w.key, categoryRule("Summary", "is", jsonString(summary), ruled, 10))
	e.expect(r, http.StatusCreated, "")
	ruleID := object(t, r, "")["id"].(string)
	waitJobs(t, e.fx.Pool)
	afterRule := w.all(t)
	matched := 0
	for pid, tx := range afterRule {
		p, before := provenanceOf(tx), provenanceOf(synced[pid])
		if strings.EqualFold(tx["summary"].(string), summary) {
			matched++
			if p != (provenance{ruled.String(), "rule", ruleID}) {
				t.Fatalf("after the rule, %s (matched): %+v", pid, p)
			}
		} else if p != before {
			t.Fatalf("after the rule, %s (not matched): %+v, was %+v", pid, p, before)
		}
	}
	if matched == 0 {
		t.Fatal("the rule matched nothing")
	}

	// The user's edit outranks the rule, and a re-run of the rules keeps it.
	r = e.send(http.MethodPatch, "/v2/transactions/"+rulePending["id"].(string), w.key, `{"categoryId":"`+mine.String()+`"}`)
	e.expect(r, http.StatusOK, "")
	if p := provenanceOf(object(t, r, "")); p != (provenance{mine.String(), "user", ""}) {
		t.Fatalf("PATCH response: %+v", p)
	}
	r = e.send(http.MethodPatch, "/v2/transactions/"+userPending["id"].(string), w.key, `{"categoryId":"`+mine.String()+`"}`)
	e.expect(r, http.StatusOK, "")
	e.expect(e.send(http.MethodPatch, "/v2/rules/"+ruleID, w.key, `{"priority":11}`), http.StatusOK, "")
	waitJobs(t, e.fx.Pool)
	if p := provenanceOf(w.all(t)[rulePending["providerId"].(string)]); p != (provenance{mine.String(), "user", ""}) {
		t.Fatalf("the user's choice after a rule re-run: %+v", p)
	}

	// Pending to posted: the posted rows replacing the pending ones keep
	// the user's choice and get the rule's decision from the sync itself.
	if err := w.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	w.sync(t)
	posted := w.all(t)
	var userPosted, rulePosted int
	for pid, tx := range posted {
		pendingPID := postedReplacing(t, e, w.conn.ID, pid)
		if pendingPID == "" || tx["status"] != "posted" {
			continue
		}
		p := provenanceOf(tx)
		switch {
		case pendingPID == userPending["providerId"] || pendingPID == rulePending["providerId"]:
			userPosted++
			if p != (provenance{mine.String(), "user", ""}) {
				t.Fatalf("posted %s replacing the user-categorised pending %s: %+v", pid, pendingPID, p)
			}
		case strings.EqualFold(tx["summary"].(string), summary):
			rulePosted++
			if p != (provenance{ruled.String(), "rule", ruleID}) {
				t.Fatalf("posted %s replacing pending %s, matched by the rule: %+v", pid, pendingPID, p)
			}
		}
	}
	if userPosted != 2 {
		t.Fatalf("posted replacements of the user-categorised pending transactions: %d, want 2", userPosted)
	}
	t.Logf("%d synced, %d with a provider category, %d matched by the rule, %d posted replacements matched by it",
		len(synced), withCategory, matched, rulePosted)

	// Archiving the rule gives back what only it decided: the provider's
	// category, with provider provenance; the user's choices stay.
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+ruleID, w.key, ""), http.StatusOK, "")
	waitJobs(t, e.fx.Pool)
	undone := 0
	for pid, tx := range w.all(t) {
		p := provenanceOf(tx)
		if p.source == "rule" || p.rule != "" {
			t.Fatalf("after archiving, %s still carries a rule: %+v", pid, p)
		}
		was := provenanceOf(posted[pid])
		switch was.source {
		case "user":
			if p != was {
				t.Fatalf("after archiving, the user's %s changed: %+v, was %+v", pid, p, was)
			}
		case "rule":
			undone++
			if want := providerCategory(t, e, tx["id"].(string)); p != (provenance{want, "provider", ""}) {
				t.Fatalf("after archiving, %s: %+v, want the provider's %q", pid, p, want)
			}
		}
	}
	if undone == 0 {
		t.Fatal("archiving undid nothing")
	}
	t.Logf("archiving undid %d rule decisions", undone)
}

// postedReplacing returns the provider id of the pending transaction the
// stored transaction replaces ("" for none).
func postedReplacing(t *testing.T, e *env, conn uuid.UUID, providerID string) string {
	t.Helper()
	var pending *string
	if err := e.fx.Pool.QueryRow(context.Background(), `SELECT pending_provider_id FROM transactions
		WHERE bank_connection_id = $1 AND provider_id = $2`, conn, providerID).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending == nil {
		return ""
	}
	return *pending
}

// providerCategory returns the category the provider gave the transaction
// ("" for none), as the sync stored it.
func providerCategory(t *testing.T, e *env, id string) string {
	t.Helper()
	var cat *uuid.UUID
	if err := e.fx.Pool.QueryRow(context.Background(), `SELECT provider_category_id FROM transactions WHERE id = $1`, id).Scan(&cat); err != nil {
		t.Fatal(err)
	}
	if cat == nil {
		return ""
	}
	return cat.String()
}
