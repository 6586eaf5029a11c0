package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// withRuleWorker runs a real River client with finsync's workers against
// the test database and gives it to the API to enqueue jobs.
func withRuleWorker(t *testing.T) envOption {
	return func(c *api.Config) {
		c.Jobs = startWorkerClient(t, worker.Config{
			Store: c.Store,
			Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}
}

// startWorkerClient starts a real River client with every finsync worker
// for the test, stopped (running jobs cancelled) when the test ends.
func startWorkerClient(t testing.TB, cfg worker.Config) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := worker.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		_ = client.StopAndCancel(stopCtx)
		cancel()
	})
	return client
}

// waitJobs waits until no River job is queued or running, failing on a job
// that errored.
func waitJobs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pending, failed int
		err := pool.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE state NOT IN ('completed', 'discarded', 'cancelled')),
			count(*) FILTER (WHERE cardinality(errors) > 0)
			FROM river_job`).Scan(&pending, &failed)
		if err != nil {
			t.Fatal(err)
		}
		if failed > 0 {
			var errs string
			_ = pool.QueryRow(context.Background(), `SELECT string_agg(errors::text, ';') FROM river_job`).Scan(&errs)
			t.Fatalf("a job failed: %s", errs)
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("jobs still pending")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func categoryRule(field, op, value string, category uuid.UUID, priority int) string {
	return fmt.Sprintf(`{"conditions":[{"field":%q,"operator":%q,"value":%s}],
		"outcomes":[{"action":"updateTransaction","field":"Category","value":{"id":%q,"value":"c"}}],"priority":%d}`,
		field, op, value, category, priority)
}

func TestRuleEndpoints(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	r := e.send(http.MethodPost, "/v2/rules", key, categoryRule("Summary", "contains", `"coffee"`, w.catA, 10))
	e.expect(r, http.StatusCreated, "")
	rule := object(t, r, "")
	if rule["priority"].(float64) != 10 || rule["allowedAccountIds"] != nil || rule["archivedAt"] != nil ||
		len(rule["conditions"].([]any)) != 1 || len(rule["outcomes"].([]any)) != 1 {
		t.Fatalf("create: %s", r.body)
	}
	id := rule["id"].(string)
	second := object(t, e.send(http.MethodPost, "/v2/rules", key, categoryRule("Amount", "lt", "-100", w.catA, 5)), "")["id"].(string)
	if got := ids(t, e.get("/v2/rules", key), "rules"); !slices.Equal(got, []string{second, id}) {
		t.Fatalf("list in run order: %v", got)
	}

	r = e.send(http.MethodPatch, "/v2/rules/"+id, key, `{"priority":1}`)
	e.expect(r, http.StatusOK, "")
	if got := object(t, r, ""); got["priority"].(float64) != 1 || got["conditions"].([]any)[0].(map[string]any)["value"] != "coffee" {
		t.Fatalf("patch keeps the rest: %s", r.body)
	}
	if got := ids(t, e.get("/v2/rules", key), "rules"); !slices.Equal(got, []string{id, second}) {
		t.Fatalf("list after reprioritising: %v", got)
	}

	r = e.send(http.MethodDelete, "/v2/rules/"+id, key, "")
	e.expect(r, http.StatusOK, "")
	archivedAt, _ := object(t, r, "")["archivedAt"].(string)
	if archivedAt == "" {
		t.Fatalf("archive: %s", r.body)
	}
	if got := ids(t, e.get("/v2/rules", key), "rules"); !slices.Equal(got, []string{second}) {
		t.Fatalf("archived rules are not listed by default: %v", got)
	}
	if got := ids(t, e.get("/v2/rules?includeArchived=true", key), "rules"); !slices.Equal(got, []string{id, second}) {
		t.Fatalf("includeArchived: %v", got)
	}
	if again := object(t, e.send(http.MethodDelete, "/v2/rules/"+id, key, ""), ""); again["archivedAt"] != archivedAt {
		t.Fatalf("archiving twice changes nothing: %v", again)
	}
	e.expectMessage(e.send(http.MethodPatch, "/v2/rules/"+id, key, `{"priority":3}`), "rule: archived rules cannot be changed")

	keyB := e.fx.Key(w.b.ID, nil)
	e.expect(e.send(http.MethodPatch, "/v2/rules/"+second, keyB, `{"priority":3}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+second, keyB, ""), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+uuid.NewString(), key, ""), http.StatusNotFound, "NOT_FOUND")
	if got := ids(t, e.get("/v2/rules?includeArchived=true", keyB), "rules"); len(got) != 0 {
		t.Fatalf("another user's rules: %v", got)
	}
	e.expectMessage(e.get("/v2/rules?includeArchived=yes", key), "includeArchived: must be true or false")
}

func TestRuleValidation(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	good := categoryRule("Summary", "contains", `"coffee"`, w.catA, 10)
	id := object(t, e.send(http.MethodPost, "/v2/rules", key, good), "")["id"].(string)
	tests := []struct{ method, path, body, msg string }{
		{"POST", "/v2/rules", categoryRule("Summary", "contains", `"x"`, w.catA, 0), "priority: must be between 1 and 100"},
		{"POST", "/v2/rules", categoryRule("Summary", "contains", `"x"`, w.catA, 101), "priority: must be between 1 and 100"},
		{"POST", "/v2/rules", categoryRule("Summary", "contains", `"x"`, w.catB, 1), "outcomes: the category to set does not exist"},
		{"POST", "/v2/rules", categoryRule("Summary", "contains", `"x"`, uuid.New(), 1), "outcomes: the category to set does not exist"},
		{"POST", "/v2/rules", `{"conditions":[],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`,
			"conditions: must have at least 1 item"},
		{"POST", "/v2/rules", `{"conditions":[{"field":"Summary","operator":"contains","value":"x"}],"outcomes":[],"priority":1}`,
			"outcomes: must have at least 1 item"},
		{"POST", "/v2/rules", `{"conditions":[{"field":"Colour","operator":"is","value":"x"}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`,
			""},
		{"POST", "/v2/rules", `{"conditions":[{"field":"Summary","operator":"contains","value":"x"}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1,"name":"x"}`,
			`unknown key "name"`},
		{"POST", "/v2/rules", `{"conditions":`, ""},
		{"PATCH", "/v2/rules/" + id, `{}`, "body: name at least one field to change"},
		{"PATCH", "/v2/rules/" + id, `{"name":"x"}`, `body: unknown field "name"`},
		{"PATCH", "/v2/rules/" + id, `{"priority":0}`, "priority: must be between 1 and 100"},
		{"PATCH", "/v2/rules/" + id, `{"outcomes":[{"action":"updateTransaction","field":"Category","value":{"id":"` + w.catB.String() + `"}}]}`,
			"outcomes: the category to set does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.body, func(t *testing.T) {
			r := e.send(tt.method, tt.path, key, tt.body)
			if tt.msg == "" {
				e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
				return
			}
			e.expectMessage(r, tt.msg)
		})
	}
}

func TestRulesUnderScopedKeys(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	full := e.fx.Key(w.a.ID, nil)
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA1})
	accountRule := func(acct uuid.UUID) string {
		return `{"conditions":[{"field":"Account","operator":"is","value":"` + acct.String() + `"}],
			"outcomes":[{"action":"hideTransaction","value":true}],"priority":5}`
	}
	r := e.send(http.MethodPost, "/v2/rules", scoped, accountRule(w.acctA1))
	e.expect(r, http.StatusCreated, "")
	rule := object(t, r, "")
	allowed, _ := rule["allowedAccountIds"].([]any)
	if len(allowed) != 1 || allowed[0] != w.acctA1.String() {
		t.Fatalf("a scoped key's rule is limited to its scope: %s", r.body)
	}
	scopedID := rule["id"].(string)
	e.expect(e.send(http.MethodPost, "/v2/rules", scoped, accountRule(w.acctA2)), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.send(http.MethodPost, "/v2/rules", scoped, accountRule(w.acctB)), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.send(http.MethodPatch, "/v2/rules/"+scopedID, scoped,
		`{"conditions":[{"field":"Account","operator":"is","value":"`+w.acctA2.String()+`"}]}`), http.StatusBadRequest, "BAD_REQUEST")

	wide := object(t, e.send(http.MethodPost, "/v2/rules", full, categoryRule("Summary", "contains", `"x"`, w.catA, 3)), "")["id"].(string)
	if got := ids(t, e.get("/v2/rules", scoped), "rules"); !slices.Equal(got, []string{scopedID}) {
		t.Fatalf("scoped listing: %v", got)
	}
	if got := ids(t, e.get("/v2/rules", full), "rules"); !slices.Equal(got, []string{wide, scopedID}) {
		t.Fatalf("full listing: %v", got)
	}
	e.expect(e.send(http.MethodPatch, "/v2/rules/"+wide, scoped, `{"priority":9}`), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+wide, scoped, ""), http.StatusNotFound, "NOT_FOUND")
	other := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA2})
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+scopedID, other, ""), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodPatch, "/v2/rules/"+scopedID, scoped, `{"priority":9}`), http.StatusOK, "")
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+scopedID, scoped, ""), http.StatusOK, "")
	if got := ids(t, e.get("/v2/rules?includeArchived=true", scoped), "rules"); !slices.Equal(got, []string{scopedID}) {
		t.Fatalf("archived rule listed for its scope: %v", got)
	}
}

func TestCreateRuleRateLimit(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanStandard, true)
	cat := e.fx.Category(u.ID, "Coffee", "Food")
	key := e.fx.Key(u.ID, nil)
	body := categoryRule("Summary", "contains", `"coffee"`, cat, 10)
	for i := 0; i < 10; i++ {
		e.expect(e.send(http.MethodPost, "/v2/rules", key, body), http.StatusCreated, "")
	}
	r := e.send(http.MethodPost, "/v2/rules", key, body)
	e.expect(r, http.StatusTooManyRequests, "RATE_LIMITED")
	msg := r.json(t)["error"].(map[string]any)["message"].(string)
	if msg != "Rate limit exceeded: 10 requests per minute on create rule on the standard plan" {
		t.Fatalf("message: %q", msg)
	}
	e.expect(e.get("/v2/rules", key), http.StatusOK, "")

	pro := e.fx.User(domain.PlanPro, true)
	proCat := e.fx.Category(pro.ID, "Coffee", "Food")
	proKey := e.fx.Key(pro.ID, nil)
	for i := 0; i < 11; i++ {
		e.expect(e.send(http.MethodPost, "/v2/rules", proKey, categoryRule("Summary", "contains", `"c"`, proCat, 10)), http.StatusCreated, "")
	}
}

// txState is what rules decide about one transaction.
type txState struct {
	category *uuid.UUID
	source   *string
	merchant *string
	hidden   bool
}

func readState(t *testing.T, e *env, id uuid.UUID) txState {
	t.Helper()
	var s txState
	if err := e.fx.Pool.QueryRow(context.Background(), `SELECT category_id, category_source, merchant_name, hidden FROM transactions WHERE id = $1`, id).
		Scan(&s.category, &s.source, &s.merchant, &s.hidden); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRulesApplyToStoredTransactions(t *testing.T) {
	e := newEnv(t, withRuleWorker(t))
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	coffee, cafe, fees := w.catA, e.fx.Category(w.a.ID, "Cafe", "Food"), e.fx.Category(w.a.ID, "Fees", "Bank")
	day := time.Date(2026, 4, 10, 0, 0, 0, 0, time.UTC)
	txs := e.fx.Transactions(w.a.ID, w.connA1, w.acctA1, "plaid", []storagetest.Tx{
		{Summary: "COFFEE SHOP 12", Amount: "-4.20", Date: day},
		{Summary: "Coffee beans", Amount: "-15", Date: day},
		{Summary: "Coffee shop (mine)", Amount: "-3", Date: day},
		{Summary: "Bank fee", Amount: "-250", Date: day, CategoryID: &fees},
		{Summary: "Salary", Amount: "3000", Date: day},
	})
	if _, err := e.fx.Pool.Exec(context.Background(), `UPDATE transactions SET merchant_name = 'Blue Bottle' WHERE id = $1`, txs[1]); err != nil {
		t.Fatal(err)
	}
	e.expect(e.send(http.MethodPatch, "/v2/transactions/"+txs[2].String(), key, `{"categoryId":null}`), http.StatusOK, "")

	create := func(body string) string {
		t.Helper()
		r := e.send(http.MethodPost, "/v2/rules", key, body)
		e.expect(r, http.StatusCreated, "")
		return object(t, r, "")["id"].(string)
	}
	broad := create(categoryRule("Summary", "contains", `"coffee"`, coffee, 10))
	narrow := create(categoryRule("Summary", "startsWith", `"coffee shop"`, cafe, 20))
	hide := create(`{"conditions":[{"field":"Amount","operator":"lte","value":-100}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":50}`)
	rename := create(`{"conditions":[{"field":"MerchantName","operator":"is","value":"blue bottle"}],
		"outcomes":[{"action":"updateTransaction","field":"MerchantName","value":"Blue Bottle Coffee"}],"priority":1}`)
	waitJobs(t, e.fx.Pool)

	check := func(step string, i int, category *uuid.UUID, merchant string, hidden bool) {
		t.Helper()
		s := readState(t, e, txs[i])
		if !equalID(s.category, category) || deref(s.merchant) != merchant || s.hidden != hidden {
			t.Fatalf("%s: transaction %d: category %v merchant %q hidden %v; want %v %q %v",
				step, i, s.category, deref(s.merchant), s.hidden, category, merchant, hidden)
		}
	}
	check("applied", 0, &cafe, "", false) // both match; priority 20 runs later and wins
	check("applied", 1, &coffee, "Blue Bottle Coffee", false)
	check("applied", 2, nil, "", false)  // the user's choice of no category beats every rule
	check("applied", 3, &fees, "", true) // hidden, provider category kept
	check("applied", 4, nil, "", false)

	visible := ids(t, e.get("/v2/transactions?bankAccountId="+w.acctA1.String()+"&startDate=2026-04-10", key), "transactions")
	all := ids(t, e.get("/v2/transactions?bankAccountId="+w.acctA1.String()+"&startDate=2026-04-10&includeHidden=true", key), "transactions")
	if len(visible) != 4 || len(all) != 5 || slices.Contains(visible, txs[3].String()) {
		t.Fatalf("hidden listing: %v / %v", visible, all)
	}
	byCat := ids(t, e.get("/v2/transactions?categoryId="+cafe.String(), key), "transactions")
	if !slices.Equal(byCat, []string{txs[0].String()}) {
		t.Fatalf("category filter: %v", byCat)
	}

	// The user's choice made after the rules ran sticks through a re-run.
	e.expect(e.send(http.MethodPatch, "/v2/transactions/"+txs[1].String(), key, `{"categoryId":"`+fees.String()+`"}`), http.StatusOK, "")
	e.expect(e.send(http.MethodPatch, "/v2/rules/"+broad, key, `{"priority":30}`), http.StatusOK, "")
	waitJobs(t, e.fx.Pool)
	check("reprioritised", 0, &coffee, "", false) // broad now runs after narrow
	check("reprioritised", 1, &fees, "Blue Bottle Coffee", false)

	// Archiving undoes what only the archived rule decided.
	for _, id := range []string{broad, hide, rename} {
		e.expect(e.send(http.MethodDelete, "/v2/rules/"+id, key, ""), http.StatusOK, "")
	}
	waitJobs(t, e.fx.Pool)
	check("archived", 0, &cafe, "", false) // narrow still supports Cafe
	check("archived", 1, &fees, "Blue Bottle", false)
	check("archived", 3, &fees, "", false)
	e.expect(e.send(http.MethodDelete, "/v2/rules/"+narrow, key, ""), http.StatusOK, "")
	waitJobs(t, e.fx.Pool)
	check("all archived", 0, nil, "", false)
	if s := readState(t, e, txs[0]); s.source != nil {
		t.Fatalf("no provider category, so no source: %v", *s.source)
	}
	// Transactions of other users and of the seed are untouched.
	if s := readState(t, e, w.txA1[0]); !equalID(s.category, &w.catA) {
		t.Fatalf("seed transaction lost its category: %v", s.category)
	}
	if s := readState(t, e, w.txB[0]); !equalID(s.category, &w.catB) {
		t.Fatalf("other user's transaction changed: %v", s.category)
	}
}

func equalID(a, b *uuid.UUID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}
