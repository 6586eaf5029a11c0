package mercurysim

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/finsync/finsync/providers/sim"
)

func TestPageMemoKeepsWithinItsLimitAndForgetsOnChange(t *testing.T) {
	m := &pageMemo{limit: 100}
	k := pageKey{token: "t", slot: 1, query: "q", clock: 3}
	if body, room := m.lookup(k); body != nil || !room {
		t.Fatalf("empty memo: body %q, room %v", body, room)
	}
	gen := m.generation()
	body := []byte("0123456789")
	m.keep(k, gen, body)
	body[0] = 'x' // the memo keeps its own copy
	if got, _ := m.lookup(k); string(got) != "0123456789" {
		t.Fatalf("kept %q", got)
	}
	if other, _ := m.lookup(pageKey{token: "t", slot: 1, query: "q", clock: 4}); other != nil {
		t.Fatal("a page of another day was served")
	}
	m.keep(pageKey{token: "t", query: "big"}, gen, make([]byte, 100))
	if got, _ := m.lookup(pageKey{token: "t", query: "big"}); got != nil {
		t.Fatal("a page over the limit was kept")
	}
	m.reset()
	if got, _ := m.lookup(k); got != nil {
		t.Fatal("a page survived a change")
	}
	k2 := pageKey{token: "t", query: "late"}
	m.keep(k2, gen, []byte("rendered before the change"))
	if got, _ := m.lookup(k2); got != nil {
		t.Fatal("a page rendered across a change was kept")
	}
	off := &pageMemo{}
	off.keep(k, off.generation(), body)
	if got, room := off.lookup(k); got != nil || room {
		t.Fatal("a memo without a limit kept a page")
	}
}

// TestMercuryMemoServesWhatItKept checks that a page asked again is the
// one kept, not a new rendering.
func TestMercuryMemoServesWhatItKept(t *testing.T) {
	h, _ := newTestSim(t, sim.Options{})
	s := &server{h: h, memo: &pageMemo{limit: 64 << 20}}
	mux := http.NewServeMux()
	s.routeMercury(mux)
	token := creds(t, "memo")["token"]
	o := s.org(token)
	url := "/api/v1/account/" + o.accounts[mercuryChecking] + "/transactions?start=2025-12-01&limit=20&order=asc"
	get := func() string {
		req := httptest.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		return rec.Body.String()
	}
	first := get()
	if len(s.memo.pages) != 1 {
		t.Fatalf("%d pages kept", len(s.memo.pages))
	}
	for k, body := range s.memo.pages {
		if string(body) != first {
			t.Fatal("the page kept is not the page sent")
		}
		s.memo.pages[k] = []byte(`{"total":0,"transactions":[]}`)
	}
	if again := get(); again != `{"total":0,"transactions":[]}` {
		t.Fatalf("page asked again was rendered afresh: %.80s", again)
	}
}

// TestMercuryMemoGivesTheSamePagesAsRendering runs requests through a
// simulator that keeps pages and one that does not, across clock advances
// and faults, and requires the same answers from both.
func TestMercuryMemoGivesTheSamePagesAsRendering(t *testing.T) {
	memoSim, memoSrv := newTestSim(t, sim.Options{MemoBytes: 64 << 20})
	plainSim, plainSrv := newTestSim(t, sim.Options{})
	token := creds(t, "memo")["token"]
	for _, s := range []*sim.Simulator{memoSim, plainSim} {
		if err := s.SetConnection(sim.ConnectionSettings{Provider: Name, Credential: token, Transactions: 3000, HistoryDays: 60}); err != nil {
			t.Fatal(err)
		}
	}
	o := (&server{h: plainSim}).org(token)
	paths := []string{
		"/api/v1/account/" + o.accounts[mercuryChecking] + "/transactions?start=2026-01-01&limit=100&order=asc",
		"/api/v1/account/" + o.accounts[mercuryChecking] + "/transactions?start=2026-01-01&limit=100&offset=100&order=asc",
		"/api/v1/account/" + o.accounts[mercurySavings] + "/transactions?start=2026-01-01&limit=100&order=asc",
		"/api/v1/account/" + o.accounts[mercuryCredit] + "/transactions?limit=1000",
		"/api/v1/account/" + o.accounts[mercuryChecking] + "/transactions?limit=0",
	}
	compare := func(step string) {
		t.Helper()
		for range 2 { // the second round comes from the memo
			for _, p := range paths {
				ms, mb := fetch(t, memoSrv.URL+p, token)
				ps, pb := fetch(t, plainSrv.URL+p, token)
				if ms != ps || !bytes.Equal(mb, pb) {
					t.Fatalf("%s: %s: kept page (%d, %d bytes) differs from the rendered one (%d, %d bytes)", step, p, ms, len(mb), ps, len(pb))
				}
			}
		}
	}
	both := func(f func(*sim.Simulator) error) {
		t.Helper()
		for _, s := range []*sim.Simulator{memoSim, plainSim} {
			if err := f(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	compare("start")
	both(func(s *sim.Simulator) error { return s.Advance(2) })
	compare("after an advance")
	both(func(s *sim.Simulator) error { return s.SetFault(sim.Fault{Provider: Name, Mode: sim.FaultMalformed}) })
	compare("malformed")
	both(func(s *sim.Simulator) error {
		return s.SetFault(sim.Fault{Provider: Name, Mode: sim.FaultLoginRequired})
	})
	compare("login required")
	both(func(s *sim.Simulator) error { return s.SetFault(sim.Fault{Provider: Name, Mode: sim.FaultNone}) })
	compare("faults cleared")
	both(func(s *sim.Simulator) error { return s.Advance(3) })
	compare("after another advance")
}

// fetch sends an authenticated GET and returns the status and body.
func fetch(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}
