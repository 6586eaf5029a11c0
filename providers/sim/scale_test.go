package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/sim/simkit"
)

const million = 1_000_000

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// timed runs f and fails when it takes longer than a generous bound that
// only an O(history) implementation would exceed.
func timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("%s took %v", what, d)
	}
}

func TestScaleMillionTransactions(t *testing.T) {
	s, srv := newTestSim(t, Options{})
	before := heapInUse()
	pc, sc, mc := creds(t, Plaid, "big"), creds(t, Stripe, "big"), creds(t, Mercury, "big")
	for _, cs := range []ConnectionSettings{
		{Provider: Plaid, Credential: pc["access_token"], Transactions: million, HistoryDays: 90},
		{Provider: Stripe, Credential: stripeKey(sc["api_key"], sc["account"]), Transactions: million, HistoryDays: 90},
		{Provider: Mercury, Credential: mc["token"], Transactions: million, HistoryDays: 90},
	} {
		if err := s.SetConnection(cs); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("plaid", func(t *testing.T) {
		var first syncResp
		timed(t, "first sync page", func() {
			doJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(pc, map[string]any{"count": 500}), nil, &first)
		})
		if len(first.Added) != 500 || !first.HasMore {
			t.Fatalf("first page: %d rows, has_more %v", len(first.Added), first.HasMore)
		}
		snap := s.open(Plaid, pc["access_token"], plaidTxAccounts)
		end := snap.tl.Count(snap.clock)
		cur := syncCursor{tag: syncTag(snap.seed), from: -1, to: snap.clock, pos: end - 400, slot: -1}
		var last syncResp
		timed(t, "last sync page", func() {
			doJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(pc, map[string]any{"count": 500, "cursor": cur.encode()}), nil, &last)
		})
		if last.HasMore || len(last.Added) < 300 {
			t.Fatalf("last page: %d rows, has_more %v", len(last.Added), last.HasMore)
		}
		if err := s.Advance(1); err != nil {
			t.Fatal(err)
		}
		var inc syncResp
		timed(t, "incremental sync page", func() {
			doJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(pc, map[string]any{"count": 500, "cursor": last.NextCursor}), nil, &inc)
		})
		if len(inc.Added) == 0 || len(inc.Removed) == 0 {
			t.Fatalf("incremental page: %d added, %d removed", len(inc.Added), len(inc.Removed))
		}
	})

	t.Run("stripe", func(t *testing.T) {
		auth := map[string]string{"Authorization": "Bearer " + sc["api_key"], "Stripe-Account": sc["account"]}
		var page struct {
			Data    []map[string]any `json:"data"`
			HasMore bool             `json:"has_more"`
		}
		timed(t, "first list page", func() {
			doJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100", nil, auth, &page)
		})
		if len(page.Data) != 100 || !page.HasMore {
			t.Fatalf("first page: %d", len(page.Data))
		}
		oldest := testStart.AddDate(0, 0, -89).Unix() + 7*3600 + 60
		timed(t, "last list page", func() {
			doJSON(t, http.MethodGet, srv.URL+"/v1/balance_transactions?limit=100&created[lt]="+strconv.FormatInt(oldest, 10), nil, auth, &page)
		})
		if len(page.Data) == 0 || page.HasMore {
			t.Fatalf("last page: %d rows, has_more %v", len(page.Data), page.HasMore)
		}
	})

	t.Run("mercury", func(t *testing.T) {
		auth := map[string]string{"Authorization": "Bearer " + mc["token"]}
		var accts struct {
			Accounts []map[string]any `json:"accounts"`
		}
		doJSON(t, http.MethodGet, srv.URL+"/api/v1/accounts", nil, auth, &accts)
		base := srv.URL + "/api/v1/account/" + accts.Accounts[0]["id"].(string) + "/transactions?start=2025-01-01&limit=1000"
		var page mercuryTxList
		timed(t, "first page", func() { doJSON(t, http.MethodGet, base, nil, auth, &page) })
		total := page.Total
		if total < million/3 || len(page.Transactions) != 1000 {
			t.Fatalf("first page: total %d rows %d", total, len(page.Transactions))
		}
		timed(t, "last page", func() {
			doJSON(t, http.MethodGet, base+"&offset="+strconv.Itoa(total-10), nil, auth, &page)
		})
		if len(page.Transactions) != 10 {
			t.Fatalf("last page: %d rows", len(page.Transactions))
		}
	})

	t.Run("gocardless", func(t *testing.T) {
		gc := creds(t, GoCardless, "big")
		if err := s.SetConnection(ConnectionSettings{Provider: GoCardless, Credential: gc["requisition_id"], Transactions: million, HistoryDays: 90}); err != nil {
			t.Fatal(err)
		}
		access, _ := gcLogin(t, srv.URL, gc)
		auth := map[string]string{"Authorization": "Bearer " + access}
		var req gcRequisitionBody
		doJSON(t, http.MethodGet, srv.URL+"/api/v2/requisitions/"+gc["requisition_id"]+"/", nil, auth, &req)
		for _, day := range []string{"2025-12-11", "2026-03-10"} {
			var tx gcTxBody
			timed(t, "one day of transactions", func() {
				doJSON(t, http.MethodGet, srv.URL+"/api/v2/accounts/"+req.Accounts[0]+"/transactions/?date_from="+day+"&date_to="+day, nil, auth, &tx)
			})
			if len(tx.Transactions.Booked) < 1000 {
				t.Fatalf("%s: %d booked rows", day, len(tx.Transactions.Booked))
			}
		}
	})

	if grown := int64(heapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB serving million-row connections", grown>>20)
	}
}

// benchSyncBody returns the request body of a 500-row sync page deep in a
// million-row history.
func benchSyncBody(b *testing.B, s *Simulator) []byte {
	b.Helper()
	c := map[string]string{}
	_ = json.Unmarshal(Builtin().Credentials(Plaid, "bench"), &c)
	if err := s.SetConnection(ConnectionSettings{Provider: Plaid, Credential: c["access_token"], Transactions: million, HistoryDays: 90}); err != nil {
		b.Fatal(err)
	}
	snap := s.open(Plaid, c["access_token"], plaidTxAccounts)
	cur := syncCursor{tag: syncTag(snap.seed), from: -1, to: snap.clock, pos: million / 2, slot: -1}
	body, _ := json.Marshal(plaidBody(c, map[string]any{"count": 500, "cursor": cur.encode()}))
	return body
}

// BenchmarkPlaidSyncPage500 measures one full 500-row /transactions/sync
// request through the handler (decode, generate, encode), without network.
func BenchmarkPlaidSyncPage500(b *testing.B) {
	s := New(Options{Seed: 1, Start: testStart}, Builtin()...)
	body := benchSyncBody(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/transactions/sync", bytes.NewReader(body))
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String()[:200])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/row")
}

// BenchmarkPlaidSyncEncode500 measures generating and encoding the
// transactions of one 500-row page alone.
func BenchmarkPlaidSyncEncode500(b *testing.B) {
	tl := simkit.NewTimeline(7, million, 90, plaidTxAccounts)
	ids := [3]string{"acc0", "acc1", "acc2"}
	o := plaidTxOptions{pfc: "v1", tag: "t", accountID: func(k int) string { return ids[k] }, dateOf: func(d int64) time.Time { return testStart.AddDate(0, 0, int(d)) }}
	cur := syncCursor{tag: "t", from: -1, to: 0, pos: million / 2, slot: -1}
	buf := simkit.JW{B: make([]byte, 0, 1<<20)}
	b.ReportAllocs()
	for b.Loop() {
		buf.B = buf.B[:0]
		buildSyncPage(&buf, &tl, cur, 500, &o)
	}
	b.SetBytes(int64(len(buf.B)))
}

// ExampleProviders_Credentials shows the credential shape of each provider.
func ExampleProviders_Credentials() {
	for _, p := range []string{Plaid, GoCardless, Stripe, Mercury} {
		var m map[string]string
		_ = json.Unmarshal(Builtin().Credentials(p, "demo"), &m)
		fmt.Println(p, len(m))
	}
	// Output:
	// plaid 3
	// gocardless 3
	// stripe 2
	// mercury 1
}

// BenchmarkPlaidSyncHTTP500 measures one 500-row /transactions/sync page
// over a real loopback HTTP connection (body read, not decoded).
func BenchmarkPlaidSyncHTTP500(b *testing.B) {
	s := New(Options{Seed: 1, Start: testStart}, Builtin()...)
	body := benchSyncBody(b, s)
	srv := httptest.NewServer(s)
	defer srv.Close()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(srv.URL+"/transactions/sync", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		b.SetBytes(n)
	}
	b.ReportMetric(float64(b.N)*500/b.Elapsed().Seconds(), "rows/s")
}
