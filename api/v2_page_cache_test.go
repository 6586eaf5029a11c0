package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsync/finsync/api/pagecache"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestTransactionPagesFollowEveryChange reads the same listings, through
// the API with its page cache and through one without, after each kind of
// change to what they list: the answers must be equal every time. A
// change made with the change log's triggers switched off must not show
// through the cache: that is what proves pages are served from it.
func TestTransactionPagesFollowEveryChange(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	ctx := context.Background()
	key := e.fx.Key(w.a.ID, nil)
	scopedID, scoped := e.fx.KeyWithID(w.a.ID, []uuid.UUID{w.acctA1}, nil)
	day := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	out := e.fx.Transactions(w.a.ID, w.connA1, w.acctA1, "plaid", []storagetest.Tx{{Date: day, Amount: "-25.00"}})[0]
	in := e.fx.Transactions(w.a.ID, w.connA2, w.acctA2, "mercury", []storagetest.Tx{{Date: day, Amount: "25.00"}})[0]
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := e.fx.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	plain := newEnvOver(t, e.fx.Pool, withoutPageCache())
	queries := []string{
		"/v2/transactions",
		"/v2/transactions?limit=2",
		"/v2/transactions?limit=250&status=all&includeHidden=true",
		"/v2/transactions?transfers=only",
		"/v2/transactions?includeDuplicates=true",
		"/v2/transactions?bankAccountId=" + w.acctA2.String(),
		"/v2/transactions?categoryId=" + w.catA.String(),
	}
	same := func(step string) {
		t.Helper()
		for _, k := range []string{key, scoped} {
			for _, q := range queries {
				for range 2 { // the second read is the cache's, when the first kept the page
					got, want := e.get(q, k), plain.get(q, k)
					if got.status != want.status || !bytes.Equal(got.body, want.body) {
						t.Fatalf("%s: GET %s (scoped %v) answered %d %s\nwithout the cache: %d %s",
							step, q, k == scoped, got.status, got.body, want.status, want.body)
					}
				}
			}
		}
	}
	same("at the start")

	// Served from memory: a change the change log does not see stays unseen.
	before := e.get("/v2/transactions", key)
	conn, err := e.fx.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`SET session_replication_role = replica`,
		`UPDATE transactions SET summary = 'changed behind the log' WHERE id = '` + w.txA2[1].String() + `'`,
		`RESET session_replication_role`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	conn.Release()
	if after := e.get("/v2/transactions", key); !bytes.Equal(after.body, before.body) {
		t.Fatalf("the page was read again, not served from the cache:\n%s", after.body)
	}
	if fresh := plain.get("/v2/transactions", key); !bytes.Contains(fresh.body, []byte("changed behind the log")) {
		t.Fatalf("the uncached API does not see the change either: %s", fresh.body)
	}

	steps := []struct {
		name string
		do   func()
	}{
		{"a plain SQL update", func() {
			exec(`UPDATE transactions SET summary = 'changed in the open' WHERE id = $1`, w.txA2[1])
		}},
		{"a category set through the API", func() {
			e.expect(e.send(http.MethodPatch, "/v2/transactions/"+w.txA1[4].String(), key, `{"categoryId":"`+w.catA.String()+`"}`), http.StatusOK, "")
		}},
		{"a transfer recorded through the API", func() {
			e.expect(e.send(http.MethodPost, "/v2/transfers", key,
				`{"outflowTransactionId":"`+out.String()+`","inflowTransactionId":"`+in.String()+`"}`), http.StatusCreated, "")
		}},
		{"new rows stored", func() {
			e.fx.Transactions(w.a.ID, w.connA1, w.acctA1, "plaid", []storagetest.Tx{{Date: day.AddDate(0, 0, 1)}, {Date: day.AddDate(0, 0, 2), Status: domain.TxPending}})
		}},
		{"an account joining the scoped key", func() {
			exec(`INSERT INTO credential_accounts (credential_id, account_id, user_id) VALUES ($1, $2, $3)`, scopedID, w.acctA2, w.a.ID)
		}},
		{"an account marked as a double link", func() {
			exec(`UPDATE accounts SET duplicate_of_account_id = $1 WHERE id = $2`, w.acctA1, w.acctA2)
		}},
		{"a category deleted", func() { exec(`DELETE FROM categories WHERE id = $1`, w.catA) }},
		{"an account deleted", func() { exec(`DELETE FROM accounts WHERE id = $1`, w.acctA2) }},
	}
	for _, s := range steps {
		// Every listing holds a page when the change comes: the previous
		// step's stale pages are past their hold-off, and a first read
		// keeps a page again. The first read after the change must find
		// it stale.
		time.Sleep(pagecache.HoldOff)
		for _, k := range []string{key, scoped} {
			for _, q := range queries {
				e.get(q, k)
			}
		}
		s.do()
		same("after " + s.name)
	}
}

// TestAPageFoundStaleHoldsItsKeyOff follows one key through its outcomes:
// a miss keeps the page, a hit serves it, a change makes the next request
// find it stale, and for pagecache.HoldOff after that the key's requests
// read the database (they see a change the change log does not) without
// checking a version or keeping a page; then a miss keeps one again.
func TestAPageFoundStaleHoldsItsKeyOff(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, withMetrics(reg))
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	const q = "/v2/transactions?limit=3"
	exec := func(sql string) { // one simple-protocol call: a SET holds within it
		t.Helper()
		if _, err := e.fx.Pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	summary := func(s string) string {
		return `UPDATE transactions SET summary = '` + s + `' WHERE id = '` + w.txA2[1].String() + `'`
	}
	// read sends the request and returns the one outcome it counted.
	read := func(shows string) pagecache.Outcome {
		t.Helper()
		before := pageOutcomes(t, reg)
		r := e.get(q, key)
		e.expect(r, http.StatusOK, "")
		after := pageOutcomes(t, reg)
		var moved []pagecache.Outcome
		for _, o := range pagecache.Outcomes() {
			for range int(after[o.String()] - before[o.String()]) {
				moved = append(moved, o)
			}
		}
		if len(moved) != 1 {
			t.Fatalf("one request counted %v", moved)
		}
		if !bytes.Contains(r.body, []byte(shows)) {
			t.Fatalf("after a %s the page does not show %q: %s", moved[0], shows, r.body)
		}
		return moved[0]
	}
	expect := func(got, want pagecache.Outcome) {
		t.Helper()
		if got != want {
			t.Fatalf("a request counted %s, want %s", got, want)
		}
	}
	exec(summary("first"))
	expect(read("first"), pagecache.Miss)
	expect(read("first"), pagecache.Hit)
	// A stale page, then a request within HoldOff of it: held off, it reads
	// the database, even what the log does not see. Should the machine be
	// so slow that the second request comes after HoldOff, it is a miss and
	// the pair is tried again.
	for try := 1; ; try++ {
		exec(summary(fmt.Sprint("change ", try)))
		start := time.Now()
		expect(read(fmt.Sprint("change ", try)), pagecache.Stale)
		behind := fmt.Sprint("behind the log ", try)
		exec(`SET session_replication_role = replica; ` + summary(behind) + `; RESET session_replication_role`)
		got := read(behind)
		if got == pagecache.Bypass {
			break
		}
		if time.Since(start) < pagecache.HoldOff || try == 5 {
			expect(got, pagecache.Bypass)
		}
		t.Logf("try %d: the request after the stale one came %v later, past the hold-off", try, time.Since(start))
		expect(got, pagecache.Miss)
		expect(read(behind), pagecache.Hit) // the miss kept a page again
	}
	time.Sleep(pagecache.HoldOff)
	expect(read("behind the log"), pagecache.Miss)
	expect(read("behind the log"), pagecache.Hit)
}

// pageOutcomes reads finsync_page_cache_requests_total by result.
func pageOutcomes(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "finsync_page_cache_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
