package api_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage/storagetest"
)

// previewWorld is two users' transactions, with rules already applied.
type previewWorld struct {
	w         world
	e         *env
	key       string
	cafe      uuid.UUID
	a1, a2, b []uuid.UUID
}

func newPreviewWorld(t *testing.T) *previewWorld {
	t.Helper()
	e := newEnv(t, withRuleWorker(t))
	p := &previewWorld{e: e, w: seedWorld(e.fx)}
	w := p.w
	p.key = e.fx.Key(w.a.ID, nil)
	p.cafe = e.fx.Category(w.a.ID, "Cafe", "Food")
	day := func(i int) time.Time { return time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i) }
	var a1 []storagetest.Tx
	for i := 0; i < 7; i++ {
		a1 = append(a1, storagetest.Tx{Summary: fmt.Sprintf("Coffee shop %d", i), Amount: "-4", Date: day(i % 3)})
	}
	a1 = append(a1,
		storagetest.Tx{Summary: "COFFEE beans", Amount: "-20", Date: day(4), CategoryID: &w.catA},
		storagetest.Tx{Summary: "Tea house", Amount: "-3", Date: day(4)},
		storagetest.Tx{Summary: "coffee (mine)", Amount: "-3", Date: day(5)},
	)
	p.a1 = e.fx.Transactions(w.a.ID, w.connA1, w.acctA1, "plaid", a1)
	p.a2 = e.fx.Transactions(w.a.ID, w.connA2, w.acctA2, "mercury", []storagetest.Tx{
		{Summary: "Coffee to go", Amount: "-2", Date: day(1)}, {Summary: "Coffee to go", Amount: "-2", Date: day(2)},
	})
	p.b = e.fx.Transactions(w.b.ID, w.connB, w.acctB, "plaid", []storagetest.Tx{
		{Summary: "Coffee shop 1", Amount: "-4", Date: day(1)}, {Summary: "coffee", Amount: "-4", Date: day(2)},
	})
	// The user's choice (no category) beats every rule.
	e.expect(e.send(http.MethodPatch, "/v2/transactions/"+p.a1[9].String(), p.key, `{"categoryId":null}`), http.StatusOK, "")
	// An existing rule that runs after the previewed one decides the
	// category of the coffee shops.
	e.expect(e.send(http.MethodPost, "/v2/rules", p.key, categoryRule("Summary", "startsWith", `"coffee shop"`, w.catA, 50)), http.StatusCreated, "")
	e.expect(e.send(http.MethodPost, "/v2/rules", e.fx.Key(w.b.ID, nil), categoryRule("Summary", "contains", `"coffee"`, w.catB, 5)), http.StatusCreated, "")
	waitJobs(t, e.fx.Pool)
	return p
}

// previewRuleBody sets the Cafe category on and hides every coffee.
func (p *previewWorld) previewRuleBody() string {
	return `{"conditions":[{"field":"Summary","operator":"contains","value":"coffee"}],
		"outcomes":[{"action":"updateTransaction","field":"Category","value":{"id":"` + p.cafe.String() + `","value":"Cafe"}},
			{"action":"hideTransaction","value":true}],"priority":20}`
}

// previewAll follows the preview's cursor with the given page size and
// returns its count and the changes by transaction id.
func previewAll(t *testing.T, e *env, key, body string, limit int) (int, map[string]map[string]any) {
	t.Helper()
	out := map[string]map[string]any{}
	count := -1
	path := fmt.Sprintf("/v2/rules/preview?limit=%d", limit)
	for pages := 0; ; pages++ {
		r := e.send(http.MethodPost, path, key, body)
		e.expect(r, http.StatusOK, "")
		m := r.json(t)
		n := int(m["count"].(float64))
		if count >= 0 && n != count {
			t.Fatalf("count changed between pages: %d then %d", count, n)
		}
		count = n
		data := m["data"].([]any)
		if len(data) > limit {
			t.Fatalf("page of %d changes, limit %d", len(data), limit)
		}
		for _, v := range data {
			ch := v.(map[string]any)
			id := ch["transaction"].(map[string]any)["id"].(string)
			if _, dup := out[id]; dup {
				t.Fatalf("transaction %s on two pages", id)
			}
			out[id] = ch
		}
		if m["hasMore"] != true {
			if m["nextCursor"] != nil {
				t.Fatalf("last page with a cursor: %s", r.body)
			}
			return count, out
		}
		if len(data) != limit {
			t.Fatalf("a page before the last with %d changes, limit %d", len(data), limit)
		}
		path = fmt.Sprintf("/v2/rules/preview?limit=%d&cursor=%s", limit, url.QueryEscape(m["nextCursor"].(string)))
	}
}

// ruleState is every rule-dependent column of each transaction and its
// updated_at, by id.
func ruleState(t *testing.T, e *env) map[string]string {
	t.Helper()
	rows, err := e.fx.Pool.Query(context.Background(), `SELECT id::text, concat_ws('|', category_id, category_source,
		category_rule_id, merchant_name, merchant_rule_id, hidden, hidden_rule_id, updated_at) FROM transactions`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		out[id] = s
	}
	return out
}

// counts is how many rows each table the preview could touch holds.
func counts(t *testing.T, e *env) string {
	t.Helper()
	var s string
	if err := e.fx.Pool.QueryRow(context.Background(), `SELECT concat_ws(',',
		(SELECT count(*) FROM transactions), (SELECT count(*) FROM rules), (SELECT max(updated_at) FROM rules),
		(SELECT count(*) FROM river_job), (SELECT count(*) FROM categories))`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRulePreviewEqualsWhatCreatingTheRuleDoes(t *testing.T) {
	p := newPreviewWorld(t)
	e := p.e
	before, beforeCounts := ruleState(t, e), counts(t, e)
	count, changes := previewAll(t, e, p.key, p.previewRuleBody(), 2)
	if count != len(changes) || count == 0 {
		t.Fatalf("count %d, %d changes listed", count, len(changes))
	}
	// A page as large as the whole gives the same set.
	if n, all := previewAll(t, e, p.key, p.previewRuleBody(), 100); n != count || len(all) != len(changes) {
		t.Fatalf("one page: %d / %d, paged: %d / %d", n, len(all), count, len(changes))
	}
	if got, gotCounts := ruleState(t, e), counts(t, e); !maps.Equal(got, before) || gotCounts != beforeCounts {
		t.Fatalf("the preview wrote something: counts %s, were %s", gotCounts, beforeCounts)
	}

	r := e.send(http.MethodPost, "/v2/rules", p.key, p.previewRuleBody())
	e.expect(r, http.StatusCreated, "")
	ruleID := object(t, r, "")["id"].(string)
	waitJobs(t, e.fx.Pool)
	after := ruleState(t, e)
	var changed []string
	for id, s := range after {
		if before[id] != s {
			changed = append(changed, id)
		}
	}
	slices.Sort(changed)
	var previewed []string
	for id := range changes {
		previewed = append(previewed, id)
	}
	slices.Sort(previewed)
	if !slices.Equal(changed, previewed) {
		t.Fatalf("creating the rule changed %v; the preview said %v", changed, previewed)
	}
	got := map[string]map[string]any{}
	for _, v := range e.get("/v2/transactions?includeHidden=true&status=all&limit=100", p.key).json(t)["transactions"].([]any) {
		tx := v.(map[string]any)
		got[tx["id"].(string)] = tx
	}
	hiddenNow := map[string]bool{}
	for _, v := range e.get("/v2/transactions?status=all&limit=100", p.key).json(t)["transactions"].([]any) {
		hiddenNow[v.(map[string]any)["id"].(string)] = false
	}
	for id, ch := range changes {
		nw := ch["new"].(map[string]any)
		tx := got[id]
		wantRule := nw["categoryRuleId"]
		if nw["categorySource"] == "rule" && wantRule == nil {
			wantRule = ruleID // the previewed rule had no id yet
		}
		_, visible := hiddenNow[id]
		if tx["categoryId"] != nw["categoryId"] || tx["categorySource"] != nw["categorySource"] ||
			tx["categoryRuleId"] != wantRule || tx["merchantName"] != nw["merchantName"] || visible == nw["hidden"].(bool) {
			t.Fatalf("transaction %s: previewed %v, stored after the rule %v (visible %v)", id, nw, tx, visible)
		}
		cur := ch["current"].(map[string]any)
		if cur["hidden"] == nw["hidden"] && cur["categoryId"] == nw["categoryId"] && cur["categorySource"] == nw["categorySource"] &&
			cur["categoryRuleId"] == nw["categoryRuleId"] && cur["merchantName"] == nw["merchantName"] {
			t.Fatalf("transaction %s listed without a change: %v", id, ch)
		}
	}
	// The user's choice of category stays (the rule only hides it); other
	// users' transactions are never counted.
	if nw := changes[p.a1[9].String()]["new"].(map[string]any); nw["categoryId"] != nil || nw["categorySource"] != "user" || nw["hidden"] != true {
		t.Fatalf("the user's choice previewed as %v", nw)
	}
	for _, id := range p.b {
		if _, ok := changes[id.String()]; ok {
			t.Fatalf("previewed a change of another user's %s", id)
		}
	}
	// The same rule again would only take over the provenance: the
	// category and visibility it decides are already stored.
	_, again := previewAll(t, e, p.key, p.previewRuleBody(), 10)
	for id, ch := range again {
		cur, nw := ch["current"].(map[string]any), ch["new"].(map[string]any)
		if cur["categoryId"] != nw["categoryId"] || cur["hidden"] != nw["hidden"] || cur["merchantName"] != nw["merchantName"] {
			t.Fatalf("the same rule again would change %s: %v", id, ch)
		}
	}
}

func TestRulePreviewScopeAndErrors(t *testing.T) {
	p := newPreviewWorld(t)
	e, w := p.e, p.w
	_, full := previewAll(t, e, p.key, p.previewRuleBody(), 3)
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA2})
	n, part := previewAll(t, e, scoped, p.previewRuleBody(), 1)
	if n != 2 || len(part) != 2 {
		t.Fatalf("a key scoped to A2 previews %d changes: %v", n, part)
	}
	for id, ch := range part {
		if ch["transaction"].(map[string]any)["bankAccountId"] != w.acctA2.String() || full[id] == nil {
			t.Fatalf("scoped preview lists %s: %v", id, ch)
		}
	}
	// A scoped key may not name another account, as on create.
	other := `{"conditions":[{"field":"Account","operator":"is","value":"` + w.acctA1.String() + `"}],
		"outcomes":[{"action":"hideTransaction","value":true}],"priority":5}`
	bad := []string{
		categoryRule("Summary", "contains", `"x"`, p.cafe, 0),
		categoryRule("Summary", "contains", `"x"`, w.catB, 1),
		`{"conditions":[],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`,
		`{"conditions":[{"field":"Colour","operator":"is","value":"x"}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`,
		`{"conditions":[{"field":"Summary","operator":"matches","value":"("}],"outcomes":[{"action":"hideTransaction","value":true}],"priority":1}`,
		`{"conditions":`,
		`[]`,
	}
	for _, body := range bad {
		create, preview := e.send(http.MethodPost, "/v2/rules", p.key, body), e.send(http.MethodPost, "/v2/rules/preview", p.key, body)
		e.expect(preview, http.StatusBadRequest, "BAD_REQUEST")
		if string(create.body) != string(preview.body) {
			t.Fatalf("body %s: create answers %s, preview %s", body, create.body, preview.body)
		}
	}
	create, preview := e.send(http.MethodPost, "/v2/rules", scoped, other), e.send(http.MethodPost, "/v2/rules/preview", scoped, other)
	e.expect(preview, http.StatusBadRequest, "BAD_REQUEST")
	if string(create.body) != string(preview.body) {
		t.Fatalf("scoped: create answers %s, preview %s", create.body, preview.body)
	}
	// A cursor is bound to its rule.
	r := e.send(http.MethodPost, "/v2/rules/preview?limit=1", p.key, p.previewRuleBody())
	next := r.json(t)["nextCursor"].(string)
	e.expectMessage(e.send(http.MethodPost, "/v2/rules/preview?limit=1&cursor="+url.QueryEscape(next), p.key,
		categoryRule("Summary", "contains", `"tea"`, p.cafe, 20)),
		"cursor: is not a cursor issued for this preview (the same rule and parameters)")
	e.expect(e.send(http.MethodPost, "/v2/rules/preview?limit=0", p.key, p.previewRuleBody()), http.StatusBadRequest, "BAD_REQUEST")
	// Another user sees only their own.
	if n, _ := previewAll(t, e, e.fx.Key(w.b.ID, nil), `{"conditions":[{"field":"Summary","operator":"contains","value":"coffee"}],
		"outcomes":[{"action":"hideTransaction","value":true}],"priority":20}`, 5); n != 2 {
		t.Fatalf("user B previews %d changes, has 2 coffees", n)
	}
}
