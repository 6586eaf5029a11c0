package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// world is two users' data: user A with two connections (one account each,
// holdings on the first), user B with one.
type world struct {
	a, b                 domain.User
	connA1, connA2       uuid.UUID
	acctA1, acctA2       uuid.UUID
	connB, acctB         uuid.UUID
	txA1, txA2, txB      []uuid.UUID
	catA, catB           uuid.UUID
	holdingA1, holdingA2 uuid.UUID
}

func seedWorld(fx *storagetest.Fixtures) world {
	var w world
	w.a = fx.User(domain.PlanPro, true)
	w.b = fx.User(domain.PlanPro, true)
	w.connA1 = fx.Connection(w.a.ID, "plaid", "active")
	w.connA2 = fx.Connection(w.a.ID, "mercury", "active")
	w.connB = fx.Connection(w.b.ID, "plaid", "active")
	w.acctA1 = fx.Account(w.a.ID, w.connA1, "plaid", "A1 checking")
	w.acctA2 = fx.Account(w.a.ID, w.connA2, "mercury", "A2 checking")
	w.acctB = fx.Account(w.b.ID, w.connB, "plaid", "B checking")
	w.catA = fx.Category(w.a.ID, "Coffee", "Food")
	w.catB = fx.Category(w.b.ID, "Coffee", "Food")
	day := func(i int) time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i) }
	w.txA1 = fx.Transactions(w.a.ID, w.connA1, w.acctA1, "plaid", []storagetest.Tx{
		{Date: day(0), Amount: "-4.50", CategoryID: &w.catA},
		{Date: day(1), Status: domain.TxPending},
		{Date: day(2), Status: domain.TxDeleted},
		{Date: day(3), Hidden: true},
		{Date: day(4), Amount: "1000.10"},
	})
	w.txA2 = fx.Transactions(w.a.ID, w.connA2, w.acctA2, "mercury", []storagetest.Tx{{Date: day(5)}, {Date: day(6)}})
	w.txB = fx.Transactions(w.b.ID, w.connB, w.acctB, "plaid", []storagetest.Tx{{Date: day(0), CategoryID: &w.catB}})
	for i := 0; i < 3; i++ {
		fx.Balance(w.a.ID, w.acctA1, day(i), fmt.Sprintf("%d.25", 100+i))
		fx.Balance(w.a.ID, w.acctA2, day(i), "7")
	}
	fx.Balance(w.b.ID, w.acctB, day(0), "1")
	w.holdingA1 = fx.Holding(w.a.ID, w.connA1, w.acctA1, "AAPL")
	w.holdingA2 = fx.Holding(w.a.ID, w.connA2, w.acctA2, "MSFT")
	fx.Holding(w.b.ID, w.connB, w.acctB, "GOOG")
	fx.InvestmentTransaction(w.a.ID, w.connA1, w.acctA1, day(1))
	fx.InvestmentTransaction(w.a.ID, w.connA2, w.acctA2, day(2))
	return w
}

func TestTransactionsListing(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	tests := []struct {
		query string
		want  []uuid.UUID
	}{
		{"", []uuid.UUID{w.txA2[1], w.txA2[0], w.txA1[4], w.txA1[0]}},
		{"status=pending", []uuid.UUID{w.txA1[1]}},
		{"status=deleted", []uuid.UUID{w.txA1[2]}},
		{"status=all", []uuid.UUID{w.txA2[1], w.txA2[0], w.txA1[4], w.txA1[2], w.txA1[1], w.txA1[0]}},
		{"status=all&includeHidden=true", []uuid.UUID{w.txA2[1], w.txA2[0], w.txA1[4], w.txA1[3], w.txA1[2], w.txA1[1], w.txA1[0]}},
		{"includeHidden=true", []uuid.UUID{w.txA2[1], w.txA2[0], w.txA1[4], w.txA1[3], w.txA1[0]}},
		{"bankAccountId=" + w.acctA1.String(), []uuid.UUID{w.txA1[4], w.txA1[0]}},
		{"bankConnectionId=" + w.connA2.String(), []uuid.UUID{w.txA2[1], w.txA2[0]}},
		{"categoryId=" + w.catA.String(), []uuid.UUID{w.txA1[0]}},
		{"startDate=2026-03-04&endDate=2026-03-06", []uuid.UUID{w.txA2[0], w.txA1[4]}},
		{"startDate=2026-03-07", []uuid.UUID{w.txA2[1]}},
		{"endDate=2026-03-01", []uuid.UUID{w.txA1[0]}},
		{"status=pending&endDate=2026-03-02", []uuid.UUID{w.txA1[1]}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := e.get("/v2/transactions?"+tt.query, key)
			e.expect(r, http.StatusOK, "")
			got := ids(t, r, "transactions")
			want := make([]string, len(tt.want))
			for i, id := range tt.want {
				want[i] = id.String()
			}
			if !slices.Equal(got, want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
		})
	}
	t.Run("amounts and fields", func(t *testing.T) {
		r := e.get("/v2/transactions?bankAccountId="+w.acctA1.String(), key)
		txs := r.json(t)["transactions"].([]any)
		first := txs[0].(map[string]any)
		if string(mustField(t, r.body, 0, "amount")) != "1000.1" || first["postedDate"] != "2026-03-05" || first["status"] != "posted" {
			t.Fatalf("first: %v", first)
		}
		if string(mustField(t, r.body, 1, "amount")) != "-4.5" || txs[1].(map[string]any)["categoryId"] != w.catA.String() {
			t.Fatalf("second: %v", txs[1])
		}
	})
}

func TestBadParameters(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	tests := []struct {
		path, message string
	}{
		{"/v2/transactions?limit=0", "limit: must be an integer between 1 and 250"},
		{"/v2/transactions?limit=251", "limit: must be an integer between 1 and 250"},
		{"/v2/transactions?limit=abc", "limit: must be an integer between 1 and 250"},
		{"/v2/transactions?limit=1&limit=2", "limit: must be given at most once"},
		{"/v2/transactions?status=open", "status: must be one of pending, posted, deleted, all"},
		{"/v2/transactions?startDate=2026-13-01", "startDate: must be YYYY-MM-DD"},
		{"/v2/transactions?endDate=03/01/2026", "endDate: must be YYYY-MM-DD"},
		{"/v2/transactions?startDate=2026-03-02&endDate=2026-03-01", "endDate: must not be before startDate"},
		{"/v2/transactions?bankAccountId=123", "bankAccountId: must be a UUID"},
		{"/v2/transactions?bankConnectionId=x", "bankConnectionId: must be a UUID"},
		{"/v2/transactions?categoryId=x", "categoryId: must be a UUID"},
		{"/v2/transactions?includeHidden=yes", "includeHidden: must be true or false"},
		{"/v2/transactions?cursor=abc", "cursor: is not a cursor issued for this listing and these filters"},
		{"/v2/accounts?status=gone", "status: must be one of active, closed, all"},
		{"/v2/accounts?limit=-1", "limit: must be an integer between 1 and 250"},
		{"/v2/accounts/balance-history?startDate=x", "startDate: must be YYYY-MM-DD"},
		{"/v2/accounts/balance-history?bankAccountId=x", "bankAccountId: must be a UUID"},
		{"/v2/bank-connections?status=enabled", "status: must be one of active, all, disabled"},
		{"/v2/holdings?limit=1000", "limit: must be an integer between 1 and 250"},
		{"/v2/investment-transactions?endDate=yesterday", "endDate: must be YYYY-MM-DD"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := e.get(tt.path, key)
			e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
			if msg := r.json(t)["error"].(map[string]any)["message"]; msg != tt.message {
				t.Fatalf("message %q, want %q", msg, tt.message)
			}
		})
	}
}

func TestCursorsAreBoundToUserAndFilters(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	keyA, keyB := e.fx.Key(w.a.ID, nil), e.fx.Key(w.b.ID, nil)
	r := e.get("/v2/transactions?limit=1", keyA)
	next := r.json(t)["pageInfo"].(map[string]any)["nextCursor"].(string)
	e.expect(e.get("/v2/transactions?limit=1&cursor="+next, keyA), http.StatusOK, "")
	e.expect(e.get("/v2/transactions?limit=1&cursor="+next, keyB), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.get("/v2/transactions?limit=1&status=all&cursor="+next, keyA), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.get("/v2/accounts/balance-history?cursor="+next, keyA), http.StatusBadRequest, "BAD_REQUEST")
}

func TestScopeIsolation(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA1})
	full := e.fx.Key(w.a.ID, nil)
	keyB := e.fx.Key(w.b.ID, nil)

	list := func(key, path, field string) []string {
		t.Helper()
		r := e.get(path, key)
		e.expect(r, http.StatusOK, "")
		return ids(t, r, field)
	}
	if got := list(scoped, "/v2/accounts", "accounts"); !slices.Equal(got, []string{w.acctA1.String()}) {
		t.Fatalf("scoped accounts %v", got)
	}
	if got := list(full, "/v2/accounts", "accounts"); len(got) != 2 {
		t.Fatalf("full accounts %v", got)
	}
	if got := list(scoped, "/v2/transactions?status=all&includeHidden=true", "transactions"); len(got) != len(w.txA1) {
		t.Fatalf("scoped transactions %v", got)
	}
	if got := list(scoped, "/v2/bank-connections", "bankConnections"); !slices.Equal(got, []string{w.connA1.String()}) {
		t.Fatalf("scoped connections %v", got)
	}
	if got := list(scoped, "/v2/holdings", "holdings"); !slices.Equal(got, []string{w.holdingA1.String()}) {
		t.Fatalf("scoped holdings %v", got)
	}
	if got := list(scoped, "/v2/investment-transactions", "investmentTransactions"); len(got) != 1 {
		t.Fatalf("scoped investment transactions %v", got)
	}
	r := e.get("/v2/accounts/balance-history?limit=250", scoped)
	for _, entry := range r.json(t)["balanceHistory"].([]any) {
		if entry.(map[string]any)["bankAccountId"] != w.acctA1.String() {
			t.Fatalf("scoped balance history leaks %v", entry)
		}
	}

	// Out of scope, another user's, and missing ids all answer the same 404.
	hidden := []string{
		"/v2/accounts/" + w.acctA2.String(),
		"/v2/accounts/" + w.acctB.String(),
		"/v2/accounts/" + uuid.NewString(),
		"/v2/transactions?bankAccountId=" + w.acctA2.String(),
		"/v2/transactions?bankAccountId=" + w.acctB.String(),
		"/v2/transactions?bankConnectionId=" + w.connA2.String(),
		"/v2/transactions?bankConnectionId=" + w.connB.String(),
		"/v2/transactions?categoryId=" + w.catB.String(),
		"/v2/accounts?bankConnectionId=" + w.connA2.String(),
		"/v2/accounts/balance-history?bankAccountId=" + w.acctA2.String(),
		"/v2/accounts/balance-history?bankConnectionId=" + w.connB.String(),
		"/v2/holdings?bankAccountId=" + w.acctA2.String(),
		"/v2/holdings?bankConnectionId=" + w.connB.String(),
		"/v2/investment-transactions?bankAccountId=" + w.acctB.String(),
	}
	var bodies []string
	for _, p := range hidden {
		r := e.get(p, scoped)
		e.expect(r, http.StatusNotFound, "NOT_FOUND")
		bodies = append(bodies, string(r.body))
	}
	for _, b := range bodies {
		if b != bodies[0] {
			t.Fatalf("404 bodies differ: %s vs %s", b, bodies[0])
		}
	}
	// User B sees none of A's data, even with A's ids.
	for _, p := range []string{"/v2/accounts/" + w.acctA1.String(), "/v2/transactions?bankAccountId=" + w.acctA1.String(), "/v2/holdings?bankConnectionId=" + w.connA1.String()} {
		e.expect(e.get(p, keyB), http.StatusNotFound, "NOT_FOUND")
	}
	if got := list(keyB, "/v2/transactions?status=all&includeHidden=true", "transactions"); !slices.Equal(got, []string{w.txB[0].String()}) {
		t.Fatalf("user B transactions %v", got)
	}
	if got := list(keyB, "/v2/categories", "categories"); !slices.Equal(got, []string{w.catB.String()}) {
		t.Fatalf("user B categories %v", got)
	}
}

func TestPaginationWalkUnderConcurrentInserts(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	acct := e.fx.Account(u.ID, conn, "plaid", "checking")
	txs := make([]storagetest.Tx, 600)
	for i := range txs {
		txs[i] = storagetest.Tx{Date: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%90)}
	}
	original := e.fx.Transactions(u.ID, conn, acct, "plaid", txs)
	key := e.fx.Key(u.ID, nil)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // keep inserting rows on every date while the walk runs
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			extra := make([]storagetest.Tx, 5)
			for j := range extra {
				extra[j] = storagetest.Tx{Date: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, (i*7+j*13)%90)}
			}
			e.fx.Transactions(u.ID, conn, acct, "plaid", extra)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	seen := map[string]int{}
	path := "/v2/transactions?limit=37"
	pages := 0
	for {
		r := e.get(path, key)
		e.expect(r, http.StatusOK, "")
		for _, id := range ids(t, r, "transactions") {
			seen[id]++
		}
		pages++
		info := r.json(t)["pageInfo"].(map[string]any)
		if info["hasMore"] != true {
			if info["nextCursor"] != nil {
				t.Fatalf("last page has a cursor: %v", info)
			}
			break
		}
		path = "/v2/transactions?limit=37&cursor=" + url.QueryEscape(info["nextCursor"].(string))
	}
	close(stop)
	wg.Wait()
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s seen %d times", id, n)
		}
	}
	for _, id := range original {
		if seen[id.String()] != 1 {
			t.Fatalf("original row %s missed", id)
		}
	}
	if pages < 600/37 {
		t.Fatalf("only %d pages", pages)
	}
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, withPlans(v2.PlanLimits{domain.PlanStandard: 5, domain.PlanPro: 8}))
	u := e.fx.User(domain.PlanStandard, true)
	key1, key2 := e.fx.Key(u.ID, nil), e.fx.Key(u.ID, nil)
	// Failed authentication spends nothing of the user's budget.
	for i := 0; i < 3; i++ {
		e.get("/v2/me", "fin_0123456789abcdefghijABCDEFGHIJ0123456789")
	}
	for i := 0; i < 5; i++ {
		key := key1
		if i%2 == 1 {
			key = key2 // keys of one user share the budget
		}
		r := e.get("/v2/me", key)
		e.expect(r, http.StatusOK, "")
		if r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) {
			t.Fatalf("request %d headers: %v", i, r.header)
		}
		reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil || reset < time.Now().Unix() || reset > time.Now().Add(2*time.Minute).Unix() {
			t.Fatalf("X-RateLimit-Reset %q", r.header.Get("X-RateLimit-Reset"))
		}
	}
	r := e.get("/v2/transactions", key2)
	e.expect(r, http.StatusTooManyRequests, "RATE_LIMITED")
	body := r.json(t)
	if msg := body["error"].(map[string]any)["message"]; msg != "Rate limit exceeded: 5 requests per minute on the standard plan" {
		t.Fatalf("message %q", msg)
	}
	retry, ok := body["retryAfter"].(float64)
	if !ok || retry < 1 || retry > 13 {
		t.Fatalf("retryAfter %v", body["retryAfter"])
	}
	if r.header.Get("Retry-After") != strconv.Itoa(int(retry)) || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("headers %v", r.header)
	}
	// Another user is unaffected.
	other := e.fx.User(domain.PlanPro, true)
	r = e.get("/v2/me", e.fx.Key(other.ID, nil))
	e.expect(r, http.StatusOK, "")
	if r.header.Get("X-RateLimit-Limit") != "8" {
		t.Fatalf("pro limit header %q", r.header.Get("X-RateLimit-Limit"))
	}
}

func TestRoutingErrorsAndHealth(t *testing.T) {
	e := newEnv(t)
	r := e.get("/v2/health", "")
	e.expect(r, http.StatusOK, "")
	if r.json(t)["status"] != "ok" {
		t.Fatalf("health %s", r.body)
	}
	e.expect(e.get("/v2/nothing-here", ""), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.do(http.MethodDelete, "/v2/me", "", nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	r = e.get("/v2/openapi.json", "")
	e.expect(r, http.StatusOK, "")
	if r.json(t)["openapi"] != "3.1.0" {
		t.Fatalf("openapi document %.100s", r.body)
	}
}

func TestReadsOfEveryResource(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	r := e.get("/v2/accounts/"+w.acctA1.String(), key)
	e.expect(r, http.StatusOK, "")
	acct := r.json(t)["account"].(map[string]any)
	if acct["bankConnectionStatus"] != "active" || acct["provider"] != "plaid" || acct["currentBalance"] != 100.5 {
		t.Fatalf("account %v", acct)
	}
	r = e.get("/v2/accounts/balance-history?bankAccountId="+w.acctA1.String(), key)
	e.expect(r, http.StatusOK, "")
	hist := r.json(t)["balanceHistory"].([]any)
	if len(hist) != 3 || hist[0].(map[string]any)["date"] != "2026-03-03" || hist[0].(map[string]any)["accountName"] != "A1 checking" {
		t.Fatalf("balance history %s", r.body)
	}
	if string(mustArrayField(t, r.body, "balanceHistory", 0, "balance")) != "102.25" {
		t.Fatalf("balance %s", r.body)
	}
	e.expect(e.get("/v2/categories", key), http.StatusOK, "")
	r = e.get("/v2/category-groups", key)
	e.expect(r, http.StatusOK, "")
	if groups := r.json(t)["categoryGroups"].([]any); len(groups) != 1 || groups[0].(map[string]any)["name"] != "Food" {
		t.Fatalf("groups %s", r.body)
	}
	r = e.get("/v2/holdings", key)
	e.expect(r, http.StatusOK, "")
	if secs := r.json(t)["securities"].([]any); len(secs) != 2 {
		t.Fatalf("securities %s", r.body)
	}
	r = e.get("/v2/investment-transactions?startDate=2026-03-03", key)
	e.expect(r, http.StatusOK, "")
	if len(ids(t, r, "investmentTransactions")) != 1 {
		t.Fatalf("investment transactions %s", r.body)
	}
	e.expect(e.get("/v2/bank-connections?status=disabled", key), http.StatusOK, "")
}

func TestProviderUnavailableOnlyWhenNeverStored(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "error")
	acct := e.fx.Account(u.ID, conn, "plaid", "brokerage")
	key := e.fx.Key(u.ID, nil)
	e.fx.Dataset(conn, "holdings", false, "unavailable")
	e.expect(e.get("/v2/holdings", key), http.StatusBadGateway, "PROVIDER_UNAVAILABLE")
	e.expect(e.get("/v2/holdings?bankConnectionId="+conn.String(), key), http.StatusBadGateway, "PROVIDER_UNAVAILABLE")
	// A second connection with stored holdings makes the listing serve what is stored.
	conn2 := e.fx.Connection(u.ID, "plaid", "active")
	acct2 := e.fx.Account(u.ID, conn2, "plaid", "brokerage 2")
	e.fx.Holding(u.ID, conn2, acct2, "VTI")
	e.expect(e.get("/v2/holdings", key), http.StatusOK, "")
	// Once stored, stale data is served even while the provider is down.
	e.fx.Holding(u.ID, conn, acct, "AAPL")
	e.fx.Dataset(conn, "holdings", false, "unavailable")
	e.expect(e.get("/v2/holdings?bankConnectionId="+conn.String(), key), http.StatusOK, "")
}
