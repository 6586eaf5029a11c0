package simplefinsim

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// accountSet is the part of the Account Set the tests read.
type accountSet struct {
	Errors   []string `json:"errors"`
	Accounts []struct {
		ID           string `json:"id"`
		Name         string `json:"name"`
		Currency     string `json:"currency"`
		Balance      string `json:"balance"`
		Transactions []struct {
			ID      string `json:"id"`
			Posted  int64  `json:"posted"`
			Amount  string `json:"amount"`
			Pending bool   `json:"pending"`
		} `json:"transactions"`
	} `json:"accounts"`
}

// get reads the Account Set at accessURL (its credentials as Basic auth,
// its path below srv) with query q.
func get(t *testing.T, srv *httptest.Server, accessURL, q string, out any) int {
	t.Helper()
	u, err := url.Parse(accessURL)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	return simtest.DoJSON(t, http.MethodGet, srv.URL+u.Path+"/accounts"+q, nil, map[string]string{"Authorization": auth}, out).StatusCode
}

func TestAccountSetIsDeterministicPerCredential(t *testing.T) {
	_, srv := simtest.New(t, sim.Options{}, Sim{})
	a, b := simtest.Creds(t, Sim{}, "alice"), simtest.Creds(t, Sim{}, "bob")
	var a1, a2, b1 accountSet
	for _, c := range []struct {
		creds map[string]string
		out   *accountSet
	}{{a, &a1}, {a, &a2}, {b, &b1}} {
		if st := get(t, srv, c.creds["access_url"], "?pending=1", c.out); st != http.StatusOK {
			t.Fatalf("status %d", st)
		}
	}
	if len(a1.Accounts) != accountCount || len(a1.Accounts[0].Transactions) == 0 {
		t.Fatalf("accounts = %+v", a1.Accounts)
	}
	if a1.Accounts[0].ID != a2.Accounts[0].ID || a1.Accounts[0].Balance != a2.Accounts[0].Balance ||
		len(a1.Accounts[0].Transactions) != len(a2.Accounts[0].Transactions) {
		t.Error("one credential answered two different sets")
	}
	if a1.Accounts[0].ID == b1.Accounts[0].ID {
		t.Error("two credentials share account ids")
	}
	if !strings.HasPrefix(a1.Accounts[slotCredit].Balance, "-") {
		t.Errorf("credit balance %s, want negative (owed)", a1.Accounts[slotCredit].Balance)
	}
}

func TestWrongPasswordAndLoginRequiredAnswer403(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, Sim{})
	access := simtest.Creds(t, Sim{}, "alice")["access_url"]
	bad := strings.Replace(access, "@", "x@", 1)
	if st := get(t, srv, bad, "", nil); st != http.StatusForbidden {
		t.Errorf("wrong password: status %d, want 403", st)
	}
	if err := s.SetFault(sim.Fault{Provider: Name, Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	if st := get(t, srv, access, "", nil); st != http.StatusForbidden {
		t.Errorf("login_required: status %d, want 403", st)
	}
}

func TestPendingPostsWhenTimeAdvances(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, Sim{})
	access := simtest.Creds(t, Sim{}, "alice")["access_url"]
	var before, without, after accountSet
	get(t, srv, access, "?pending=1", &before)
	get(t, srv, access, "", &without)
	pending := map[string]bool{}
	for _, acc := range before.Accounts {
		for _, tx := range acc.Transactions {
			if tx.Pending != (tx.Posted == 0) {
				t.Errorf("%s: pending %v with posted %d", tx.ID, tx.Pending, tx.Posted)
			}
			if tx.Pending {
				pending[acc.ID+tx.ID] = true
			}
		}
	}
	if len(pending) == 0 {
		t.Fatal("no pending transactions")
	}
	for _, acc := range without.Accounts {
		for _, tx := range acc.Transactions {
			if tx.Pending {
				t.Errorf("pending %s listed without pending=1", tx.ID)
			}
		}
	}
	if err := s.Advance(5); err != nil {
		t.Fatal(err)
	}
	get(t, srv, access, "?pending=1&start-date="+strconv.FormatInt(s.DateOf(s.Clock()-40).Unix(), 10), &after)
	for _, acc := range after.Accounts {
		for _, tx := range acc.Transactions {
			if pending[acc.ID+tx.ID] && tx.Pending {
				t.Errorf("%s still pending after 5 days", tx.ID)
			}
		}
	}
}

func TestDateRangeIsBounded(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, Sim{})
	access := simtest.Creds(t, Sim{}, "alice")["access_url"]
	var set accountSet
	end := s.DateOf(s.Clock() + 1)
	q := "?start-date=" + strconv.FormatInt(end.AddDate(-1, 0, 0).Unix(), 10) + "&end-date=" + strconv.FormatInt(end.Unix(), 10)
	if st := get(t, srv, access, q, &set); st != http.StatusOK || len(set.Errors) != 1 {
		t.Fatalf("status %d, errors %v; want 200 and one error", st, set.Errors)
	}
	var empty accountSet
	q = "?start-date=" + strconv.FormatInt(end.Unix(), 10) + "&end-date=" + strconv.FormatInt(end.AddDate(0, 0, 1).Unix(), 10)
	get(t, srv, access, q, &empty)
	for _, acc := range empty.Accounts {
		if len(acc.Transactions) != 0 {
			t.Errorf("future window listed %d transactions", len(acc.Transactions))
		}
	}
}

func TestSetupTokenClaimsOnce(t *testing.T) {
	_, srv := simtest.New(t, sim.Options{}, Sim{})
	resp, err := http.Get(srv.URL + "/_sim/simplefin/token")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	claimURL, err := base64.StdEncoding.DecodeString(string(raw))
	if err != nil || !strings.HasPrefix(string(claimURL), srv.URL+"/simplefin/claim/") {
		t.Fatalf("setup token %q decodes to %q (%v)", raw, claimURL, err)
	}
	claim := func() (int, string) {
		resp, err := http.Post(string(claimURL), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	st, access := claim()
	if st != http.StatusOK {
		t.Fatalf("claim: status %d", st)
	}
	var set accountSet
	if st := get(t, srv, access, "", &set); st != http.StatusOK || len(set.Accounts) != accountCount {
		t.Fatalf("claimed access URL: status %d, %d accounts", st, len(set.Accounts))
	}
	if st, _ := claim(); st != http.StatusForbidden {
		t.Errorf("second claim: status %d, want 403", st)
	}
	if resp, err := http.Post(srv.URL+"/simplefin/claim/unknown", "", nil); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("unknown token: %v %v", resp, err)
	}
}

// TestRangeIsOfPostedInstants: the range is of posted instants, start
// inclusive and end exclusive, as the protocol has it: a one-second window
// starting at a transaction's posted instant holds it, one ending there
// does not.
func TestRangeIsOfPostedInstants(t *testing.T) {
	_, srv := simtest.New(t, sim.Options{}, Sim{})
	creds := simtest.Creds(t, Sim{}, "window")
	var all accountSet
	if st := get(t, srv, creds["access_url"], "", &all); st != http.StatusOK {
		t.Fatalf("status %d", st)
	}
	checked := 0
	for _, acc := range all.Accounts {
		for _, tx := range acc.Transactions[:min(3, len(acc.Transactions))] {
			for _, c := range []struct {
				from int64
				want bool
			}{{tx.Posted, true}, {tx.Posted - 1, false}} {
				var got accountSet
				q := "?start-date=" + strconv.FormatInt(c.from, 10) + "&end-date=" + strconv.FormatInt(c.from+1, 10) + "&account=" + acc.ID
				get(t, srv, creds["access_url"], q, &got)
				found := false
				for _, g := range got.Accounts[0].Transactions {
					found = found || g.ID == tx.ID
				}
				if found != c.want {
					t.Errorf("%s posted %d in [%d, %d): %v, want %v", tx.ID, tx.Posted, c.from, c.from+1, found, c.want)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no transactions to check")
	}
}
