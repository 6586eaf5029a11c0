package plaidsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/providers/sim/simtest"
)

const million = 1_000_000

// TestPlaidScaleMillionTransactions checks that pages anywhere in a
// million-row history cost about the same and that serving them keeps
// little memory.
func TestPlaidScaleMillionTransactions(t *testing.T) {
	s, srv := newTestSim(t, sim.Options{})
	before := simtest.HeapInUse()
	pc := creds(t, "big")
	if err := s.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: pc["access_token"], Transactions: million, HistoryDays: 90}); err != nil {
		t.Fatal(err)
	}
	var first syncResp
	simtest.Timed(t, "first sync page", func() {
		simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(pc, map[string]any{"count": 500}), nil, &first)
	})
	if len(first.Added) != 500 || !first.HasMore {
		t.Fatalf("first page: %d rows, has_more %v", len(first.Added), first.HasMore)
	}
	snap := s.Open(Name, pc["access_token"], plaidTxAccounts)
	end := snap.TL.Count(snap.Clock)
	cur := syncCursor{tag: syncTag(snap.Seed), from: -1, to: snap.Clock, pos: end - 400, slot: -1}
	var last syncResp
	simtest.Timed(t, "last sync page", func() {
		simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(pc, map[string]any{"count": 500, "cursor": cur.encode()}), nil, &last)
	})
	if last.HasMore || len(last.Added) < 300 {
		t.Fatalf("last page: %d rows, has_more %v", len(last.Added), last.HasMore)
	}
	if err := s.Advance(1); err != nil {
		t.Fatal(err)
	}
	var inc syncResp
	simtest.Timed(t, "incremental sync page", func() {
		simtest.DoJSON(t, http.MethodPost, srv.URL+"/transactions/sync", plaidBody(pc, map[string]any{"count": 500, "cursor": last.NextCursor}), nil, &inc)
	})
	if len(inc.Added) == 0 || len(inc.Removed) == 0 {
		t.Fatalf("incremental page: %d added, %d removed", len(inc.Added), len(inc.Removed))
	}
	if grown := int64(simtest.HeapInUse()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap grew by %d MiB serving a million-row connection", grown>>20)
	}
}

// benchSyncBody returns the request body of a 500-row sync page deep in a
// million-row history.
func benchSyncBody(b *testing.B, s *sim.Simulator) []byte {
	b.Helper()
	c := map[string]string{}
	_ = json.Unmarshal(Sim{}.Credentials("bench"), &c)
	if err := s.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: c["access_token"], Transactions: million, HistoryDays: 90}); err != nil {
		b.Fatal(err)
	}
	snap := s.Open(Name, c["access_token"], plaidTxAccounts)
	cur := syncCursor{tag: syncTag(snap.Seed), from: -1, to: snap.Clock, pos: million / 2, slot: -1}
	body, _ := json.Marshal(plaidBody(c, map[string]any{"count": 500, "cursor": cur.encode()}))
	return body
}

// BenchmarkPlaidSyncPage500 measures one full 500-row /transactions/sync
// request through the handler (decode, generate, encode), without network.
func BenchmarkPlaidSyncPage500(b *testing.B) {
	s := sim.New(sim.Options{Seed: 1, Start: simtest.Start}, Sim{})
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
	o := plaidTxOptions{pfc: "v1", tag: "t", accountID: func(k int) string { return ids[k] }, dateOf: func(d int64) time.Time { return simtest.Start.AddDate(0, 0, int(d)) }}
	cur := syncCursor{tag: "t", from: -1, to: 0, pos: million / 2, slot: -1}
	buf := simkit.JW{B: make([]byte, 0, 1<<20)}
	b.ReportAllocs()
	for b.Loop() {
		buf.B = buf.B[:0]
		buildSyncPage(&buf, &tl, cur, 500, &o)
	}
	b.SetBytes(int64(len(buf.B)))
}

// BenchmarkPlaidSyncHTTP500 measures one 500-row /transactions/sync page
// over a real loopback HTTP connection (body read, not decoded).
func BenchmarkPlaidSyncHTTP500(b *testing.B) {
	s := sim.New(sim.Options{Seed: 1, Start: simtest.Start}, Sim{})
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
