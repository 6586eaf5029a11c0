package allsim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// writeLog is a ResponseWriter that keeps each Write apart.
type writeLog struct {
	header http.Header
	status int
	writes [][]byte
}

func (l *writeLog) Header() http.Header { return l.header }

func (l *writeLog) WriteHeader(status int) {
	if l.status == 0 {
		l.status = status
	}
}

func (l *writeLog) Write(b []byte) (int, error) {
	if l.status == 0 {
		l.status = http.StatusOK
	}
	l.writes = append(l.writes, bytes.Clone(b))
	return len(b), nil
}

// serve answers req in process and returns what was written.
func serve(s *sim.Simulator, req *http.Request) *writeLog {
	l := &writeLog{header: http.Header{}}
	s.ServeHTTP(l, req)
	return l
}

// TestLargePagesAreStreamed checks that the large list answers reach the
// client a chunk at a time, the chunks adding up to the one JSON answer
// with all its rows, while a small page is still written at once.
func TestLargePagesAreStreamed(t *testing.T) {
	s := allsim.New(sim.Options{Seed: 42, Start: simtest.Start})
	pc, sc, mc := creds(t, "plaid", "stream"), creds(t, "stripe", "stream"), creds(t, "mercury", "stream")
	for _, cs := range []sim.ConnectionSettings{
		{Provider: "plaid", Credential: pc["access_token"], Transactions: 5000, HistoryDays: 365},
		{Provider: "stripe", Credential: sc["api_key"] + "/" + sc["account"], Transactions: 5000, HistoryDays: 365},
		{Provider: "mercury", Credential: mc["token"], Transactions: 5000, HistoryDays: 365},
	} {
		if err := s.SetConnection(cs); err != nil {
			t.Fatal(err)
		}
	}
	mercuryGet := func(path string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer "+mc["token"])
		return r
	}
	var accts struct {
		Accounts []struct {
			ID string `json:"id"`
		} `json:"accounts"`
	}
	if l := serve(s, mercuryGet("/api/v1/accounts")); json.Unmarshal(bytes.Join(l.writes, nil), &accts) != nil || len(accts.Accounts) == 0 {
		t.Fatalf("mercury accounts: %d %q", l.status, bytes.Join(l.writes, nil))
	}
	syncBody, err := json.Marshal(plaidBody(pc, map[string]any{"count": 500}))
	if err != nil {
		t.Fatal(err)
	}
	stripeReq := httptest.NewRequest(http.MethodGet, "/v1/balance_transactions?limit=100", nil)
	stripeReq.Header.Set("Authorization", "Bearer "+sc["api_key"])
	stripeReq.Header.Set("Stripe-Account", sc["account"])

	tests := []struct {
		name string
		req  *http.Request
		rows func(body []byte) (int, error)
		want int
	}{
		{"plaid sync", httptest.NewRequest(http.MethodPost, "/transactions/sync", bytes.NewReader(syncBody)), func(b []byte) (int, error) {
			var r syncResp
			err := json.Unmarshal(b, &r)
			return len(r.Added), err
		}, 500},
		{"mercury account", mercuryGet("/api/v1/account/" + accts.Accounts[0].ID + "/transactions?limit=500&start=2025-03-10"), func(b []byte) (int, error) {
			var r mercuryTxList
			err := json.Unmarshal(b, &r)
			return len(r.Transactions), err
		}, 500},
		{"mercury org", mercuryGet("/api/v1/transactions?limit=500&start=2025-03-10"), func(b []byte) (int, error) {
			var r mercuryTxList
			err := json.Unmarshal(b, &r)
			return len(r.Transactions), err
		}, 500},
		{"stripe list", stripeReq, func(b []byte) (int, error) {
			var r struct {
				Data []map[string]any `json:"data"`
			}
			err := json.Unmarshal(b, &r)
			return len(r.Data), err
		}, 100},
	}
	for _, tt := range tests {
		l := serve(s, tt.req)
		body := bytes.Join(l.writes, nil)
		if l.status != http.StatusOK || l.header.Get("Content-Type") != "application/json" || l.header.Get("Content-Length") != "" {
			t.Errorf("%s: status %d, header %v", tt.name, l.status, l.header)
		}
		if n, err := tt.rows(body); err != nil || n != tt.want {
			t.Errorf("%s: %d rows, %v", tt.name, n, err)
		}
		if len(l.writes) < 2 {
			t.Errorf("%s: %d bytes in %d writes, want a stream of chunks", tt.name, len(body), len(l.writes))
		}
		for k, w := range l.writes[:len(l.writes)-1] {
			if len(w) < simkit.StreamChunk || len(w) > simkit.StreamChunk+8<<10 {
				t.Errorf("%s: write %d has %d bytes, want a chunk of about %d", tt.name, k, len(w), simkit.StreamChunk)
			}
		}
	}

	l := serve(s, mercuryGet("/api/v1/account/"+accts.Accounts[0].ID+"/transactions?limit=5&start=2025-03-10"))
	if n := len(l.writes); n != 1 || l.status != http.StatusOK || !strings.HasPrefix(string(l.writes[0]), `{"total":`) {
		t.Errorf("small page: status %d, %d writes", l.status, n)
	}
}

// TestStreamedPageErrorsBeforeFirstByte checks that a list request refused
// before its first row is still a whole error answer.
func TestStreamedPageErrorsBeforeFirstByte(t *testing.T) {
	s := allsim.New(sim.Options{Seed: 42, Start: simtest.Start})
	mc := creds(t, "mercury", "stream")
	r := httptest.NewRequest(http.MethodGet, "/api/v1/transactions?limit=500&order=sideways", nil)
	r.Header.Set("Authorization", "Bearer "+mc["token"])
	l := serve(s, r)
	var e map[string]any
	if l.status != http.StatusBadRequest || len(l.writes) != 1 || json.Unmarshal(l.writes[0], &e) != nil {
		t.Errorf("status %d, %d writes: %q", l.status, len(l.writes), bytes.Join(l.writes, nil))
	}
}
