package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// v1Walk follows meta.nextPage from path to the last page and returns the
// ids of the rows under key, page by page.
func (e *env) v1Walk(path, apiKey, key string) [][]string {
	e.t.Helper()
	var pages [][]string
	for path != "" {
		r := e.get(path, apiKey)
		e.expect(r, http.StatusOK, "")
		pages = append(pages, v1IDs(e.t, v1Rows(e.t, r, key)))
		if len(pages) > 100 {
			e.t.Fatal("walk does not end")
		}
		path = e.v1Next(r)
	}
	return pages
}

// listedOrder returns the listing order of transactions: date, then id, both descending.
func listedOrder(ids []uuid.UUID, txs []storagetest.Tx) []string {
	idx := make([]int, len(ids))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := txs[b].Date.Compare(txs[a].Date); c != 0 {
			return c
		}
		return strings.Compare(ids[b].String(), ids[a].String())
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = ids[j].String()
	}
	return out
}

// walkFixture is a connection with listed transactions on few dates (many
// ties) and some that v1 never lists.
func walkFixture(e *env, provider string, n int) (user domain.User, conn uuid.UUID, want []string) {
	user = e.fx.User(domain.PlanPro, true)
	conn = e.fx.Connection(user.ID, provider, "active")
	acct := e.fx.Account(user.ID, conn, provider, "checking")
	txs := make([]storagetest.Tx, n)
	for i := range txs {
		txs[i] = storagetest.Tx{Date: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%20)}
		if i%9 == 0 {
			txs[i].Status = domain.TxPending
		}
	}
	ids := e.fx.Transactions(user.ID, conn, acct, provider, txs)
	e.fx.Transactions(user.ID, conn, acct, provider, []storagetest.Tx{
		{Date: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), Status: domain.TxDeleted},
		{Date: time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC), Hidden: true},
	})
	return user, conn, listedOrder(ids, txs)
}

func TestV1TransactionIDCursorWalk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user, conn, want := walkFixture(e, "stripe", 137)
	key := e.fx.Key(user.ID, nil)
	acct := e.fx.Account(user.ID, conn, "stripe", "later")
	path := "/v1/transactions?bankConnectionId=" + conn.String() + "&startDate=2026-03-01&endDate=2026-03-31&limit=10"
	var got []string
	for pages := 0; path != ""; pages++ {
		r := e.get(path, key)
		e.expect(r, http.StatusOK, "")
		page := v1IDs(t, v1Rows(t, r, "transactions"))
		got = append(got, page...)
		next := e.v1Next(r)
		if next != "" && !strings.Contains(next, "cursor="+page[len(page)-1]) {
			t.Fatalf("page %d: nextPage %q does not continue after %s", pages, next, page[len(page)-1])
		}
		// Rows synced meanwhile, newer than the walk's position, neither
		// shift nor repeat the remaining pages.
		e.fx.Transactions(user.ID, conn, acct, "stripe", []storagetest.Tx{{Date: time.Date(2026, 3, 25, 0, 0, 0, 0, time.UTC)}})
		path = next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("walk returned %d rows, want %d in listing order\n got %v\nwant %v", len(got), len(want), got, want)
	}
}

func TestV1OffsetCursorWalk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user, conn, want := walkFixture(e, "plaid", 123)
	key := e.fx.Key(user.ID, nil)
	pages := e.v1Walk("/v1/transactions?bankConnectionId="+conn.String()+"&startDate=2026-03-01&endDate=2026-03-31&limit=25", key, "transactions")
	sizes := make([]int, len(pages))
	var got []string
	for i, p := range pages {
		sizes[i] = len(p)
		got = append(got, p...)
	}
	if !slices.Equal(sizes, []int{25, 25, 25, 25, 23}) {
		t.Fatalf("page sizes %v", sizes)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("walk\n got %v\nwant %v", got, want)
	}
	r := e.get("/v1/transactions?bankConnectionId="+conn.String()+"&startDate=2026-03-01&endDate=2026-03-31&limit=25&cursor=25", key)
	if first := v1IDs(t, v1Rows(t, r, "transactions"))[0]; first != want[25] {
		t.Fatalf("cursor=25 starts at %s, want %s", first, want[25])
	}
	r = e.get("/v1/transactions?bankConnectionId="+conn.String()+"&startDate=2026-03-01&endDate=2026-03-31", key)
	if n := len(v1Rows(t, r, "transactions")); n != 50 {
		t.Fatalf("default page size %d, want 50", n)
	}
}

func TestV1InvestmentOffsetWalks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	acct := e.fx.Account(u.ID, conn, "plaid", "brokerage")
	for i := 0; i < 7; i++ {
		e.fx.Holding(u.ID, conn, acct, fmt.Sprintf("SYM%d", i))
	}
	var invest []string
	for i := 0; i < 9; i++ {
		invest = append(invest, e.fx.InvestmentTransaction(u.ID, conn, acct, time.Now().UTC().AddDate(0, 0, -i)).String())
	}
	key := e.fx.Key(u.ID, nil)

	path := "/v1/holdings?bankConnectionId=" + conn.String() + "&limit=3"
	var holdings []string
	wantMore := []bool{true, true, false}
	for page := 0; path != ""; page++ {
		r := e.get(path, key)
		e.expect(r, http.StatusOK, "")
		rows := v1Rows(t, r, "holdings")
		if v1MetaInt(t, r, "totalCount") != 7 || v1MetaInt(t, r, "count") != len(rows) || v1MetaBool(t, r, "hasMore") != wantMore[page] {
			t.Fatalf("page %d meta %s", page, r.body)
		}
		var refs []string
		for _, row := range rows {
			holdings = append(holdings, v1Str(t, row["id"]))
			refs = append(refs, v1Str(t, row["securityId"]))
		}
		secs := v1IDs(t, v1Rows(t, r, "securities"))
		slices.Sort(refs)
		slices.Sort(secs)
		if !slices.Equal(refs, secs) {
			t.Fatalf("page %d securities %v, referenced %v", page, secs, refs)
		}
		path = e.v1Next(r)
	}
	if len(holdings) != 7 || len(slices.Compact(slices.Sorted(slices.Values(holdings)))) != 7 {
		t.Fatalf("holdings walk %v", holdings)
	}

	var got []string
	for _, p := range e.v1Walk("/v1/investment-transactions?bankConnectionId="+conn.String()+"&limit=4", key, "investmentTransactions") {
		got = append(got, p...)
	}
	if !slices.Equal(got, invest) {
		t.Fatalf("investment transactions walk\n got %v\nwant %v", got, invest)
	}
}
