package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/simplefin"
	"github.com/finsync/finsync/providers/simplefin/simplefinsim"
)

// sfinTxn is one transaction as the SimpleFIN simulator puts it on the wire.
type sfinTxn struct {
	ID           string `json:"id"`
	Posted       int64  `json:"posted"`
	Amount       string `json:"amount"`
	Description  string `json:"description"`
	TransactedAt int64  `json:"transacted_at"`
	Pending      bool   `json:"pending"`
}

// sfinAccount is one account of a SimpleFIN Account Set.
type sfinAccount struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Currency     string    `json:"currency"`
	Balance      string    `json:"balance"`
	Transactions []sfinTxn `json:"transactions"`
}

// simplefinWire reads the connection's Account Set straight from the
// simulator, from since to tomorrow, in windows the protocol allows, with
// pending transactions.
func (w *workerEnv) simplefinWire(name string, since time.Time) map[string]sfinAccount {
	w.t.Helper()
	var creds struct {
		AccessURL string `json:"access_url"`
	}
	if err := json.Unmarshal(allsim.Credentials("simplefin", name), &creds); err != nil {
		w.t.Fatal(err)
	}
	access, err := url.Parse(creds.AccessURL)
	if err != nil {
		w.t.Fatal(err)
	}
	pass, _ := access.User.Password()
	out := map[string]sfinAccount{}
	end := w.sim.DateOf(w.sim.Clock() + 1)
	for end.After(since) {
		start := maxTime(since, end.AddDate(0, 0, -simplefinsim.MaxRangeDays))
		q := fmt.Sprintf("?pending=1&start-date=%d&end-date=%d", start.Unix(), end.Unix())
		req, err := http.NewRequest(http.MethodGet, w.root+"/simplefin/accounts"+q, nil)
		if err != nil {
			w.t.Fatal(err)
		}
		req.SetBasicAuth(access.User.Username(), pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.t.Fatal(err)
		}
		var set struct {
			Accounts []sfinAccount `json:"accounts"`
		}
		err = json.NewDecoder(resp.Body).Decode(&set)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			w.t.Fatalf("account set: %d %v", resp.StatusCode, err)
		}
		for _, a := range set.Accounts {
			prev, ok := out[a.ID]
			if ok {
				a.Transactions = append(prev.Transactions, a.Transactions...)
				a.Balance = prev.Balance
			}
			out[a.ID] = a
		}
		end = start
	}
	return out
}

// pages follows a v2 listing's cursor and returns every object of key.
func (w *workerEnv) pages(path, key string) []map[string]any {
	w.t.Helper()
	var all []map[string]any
	next := path
	for {
		r := w.get(next, w.key)
		w.expect(r, http.StatusOK, "")
		m := r.json(w.t)
		for _, o := range m[key].([]any) {
			all = append(all, o.(map[string]any))
		}
		info := m["pageInfo"].(map[string]any)
		if info["hasMore"] != true {
			return all
		}
		next = path + "&cursor=" + url.QueryEscape(info["nextCursor"].(string))
	}
}

// money reads a JSON number of an API response as an exact amount.
func money(t *testing.T, v any) domain.Money {
	t.Helper()
	m, err := domain.NewMoney(fmt.Sprint(v))
	if err != nil {
		t.Fatalf("amount %v: %v", v, err)
	}
	return m
}

// TestSimpleFINServedThroughV1AndV2 syncs a SimpleFIN connection through the
// real worker, then reads it back through both API versions and compares
// every account and transaction with what the simulator has on the wire:
// signs (deposits positive, card balances as the amount owed), pending
// rows, and, after time advances and an incremental sync, pending rows
// posted.
func TestSimpleFINServedThroughV1AndV2(t *testing.T) {
	w := newWorkerEnv(t)
	const name = "served"
	// A longer history than the environment's default, so that the first
	// window holds pending transactions.
	var creds map[string]string
	if err := json.Unmarshal(allsim.Credentials("simplefin", name), &creds); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.SetConnection(sim.ConnectionSettings{
		Provider: "simplefin", Credential: simplefinsim.Sim{}.CredentialKey(creds), Transactions: 300,
	}); err != nil {
		t.Fatal(err)
	}
	conn := w.connect("simplefin", name)
	w.syncAndWait(conn)
	// A first sync reads one window back from tomorrow; later syncs re-read
	// from shortly before the last one, so what is stored is the wire from
	// that first window's start on.
	since := w.sim.DateOf(w.sim.Clock()+1).AddDate(0, 0, -simplefin.WindowDays)
	pendingBefore := w.checkSimpleFINServed(conn.String(), name, since)
	if len(pendingBefore) == 0 {
		t.Fatal("the first sync served no pending transaction")
	}

	if err := w.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	w.syncAndWait(conn)
	pendingAfter := w.checkSimpleFINServed(conn.String(), name, since)
	for id := range pendingBefore {
		if pendingAfter[id] {
			t.Fatalf("%s still pending five days later", id)
		}
	}
}

// checkSimpleFINServed compares the v1 and v2 views of the connection with
// the simulator's Account Set, and returns the providerIds served as
// pending.
func (w *workerEnv) checkSimpleFINServed(conn, name string, since time.Time) map[string]bool {
	t := w.t
	t.Helper()
	wire := w.simplefinWire(name, since)

	// v2 accounts: one per wire account; a negative SimpleFIN balance on
	// the card is served as the positive amount owed.
	accounts := w.pages("/v2/accounts?bankConnectionId="+conn+"&limit=250", "accounts")
	if len(accounts) != len(wire) {
		t.Fatalf("v2 serves %d accounts, the wire has %d", len(accounts), len(wire))
	}
	byUUID := map[string]string{}
	for _, a := range accounts {
		wa, ok := wire[a["providerAccountId"].(string)]
		if !ok {
			t.Fatalf("v2 account %v is not on the wire", a["providerAccountId"])
		}
		byUUID[a["id"].(string)] = wa.ID
		want := money(t, wa.Balance)
		if a["type"] == "credit" {
			want = want.Neg()
		}
		if got := money(t, a["currentBalance"]); !got.Equal(want) || a["provider"] != "simplefin" {
			t.Fatalf("v2 account %s: balance %s provider %v, wire %s", wa.ID, got, a["provider"], wa.Balance)
		}
		hist := w.pages("/v2/accounts/balance-history?bankAccountId="+a["id"].(string)+"&limit=250", "balanceHistory")
		latest := map[string]any{}
		for _, h := range hist {
			if d, _ := h["date"].(string); d > fmt.Sprint(latest["date"]) || latest["date"] == nil {
				latest = h
			}
		}
		if latest["balance"] == nil || !money(t, latest["balance"]).Equal(want) {
			t.Fatalf("v2 balance history of %s does not end at the balance %s: %v", wa.ID, want, hist)
		}
	}

	// v2 transactions: the same set as the wire, with the wire's signs and
	// pending flags.
	// SimpleFIN ids are unique within an account only, so a stored
	// transaction's providerId is "<account id>/<transaction id>".
	want := map[string]sfinTxn{}
	for _, a := range wire {
		for _, x := range a.Transactions {
			want[a.ID+"/"+x.ID] = x
		}
	}
	txns := w.pages("/v2/transactions?bankConnectionId="+conn+"&status=all&limit=250", "transactions")
	live, pending := 0, map[string]bool{}
	providerID := map[string]string{} // v2 id -> providerId
	for _, x := range txns {
		if x["status"] == "deleted" {
			continue
		}
		live++
		providerID[x["id"].(string)] = x["providerId"].(string)
		wx, ok := want[x["providerId"].(string)]
		if !ok {
			t.Fatalf("v2 serves %v, not on the wire", x["providerId"])
		}
		status := "posted"
		if wx.Pending {
			status = "pending"
			pending[x["providerId"].(string)] = true
		}
		if got := money(t, x["amount"]); !got.Equal(money(t, wx.Amount)) || x["status"] != status || x["summary"] != wx.Description {
			t.Fatalf("v2 %s: %v %v %v, wire %+v", wx.ID, got, x["status"], x["summary"], wx)
		}
		if !wx.Pending {
			if day := time.Unix(wx.Posted, 0).UTC().Format(time.DateOnly); x["postedDate"] != day {
				t.Fatalf("v2 %s posted %v, wire %s", wx.ID, x["postedDate"], day)
			}
		}
		if x["bankAccountId"] == nil || wire[byUUID[x["bankAccountId"].(string)]].ID == "" {
			t.Fatalf("v2 %s belongs to no served account", wx.ID)
		}
	}
	if live != len(want) {
		t.Fatalf("v2 serves %d live transactions, the wire has %d", live, len(want))
	}

	// v1: the same accounts and transactions in the v1 shapes.
	r := w.get("/v1/accounts?connectionId="+conn, w.key)
	w.expect(r, http.StatusOK, "")
	if rows := v1Rows(t, r, ""); len(rows) != len(wire) {
		t.Fatalf("v1 serves %d accounts, the wire has %d", len(rows), len(wire))
	}
	from := since.AddDate(0, 0, -1).Format(time.DateOnly)
	to := w.sim.DateOf(w.sim.Clock() + 1).Format(time.DateOnly)
	next := "/v1/transactions?bankConnectionId=" + conn + "&startDate=" + from + "&endDate=" + to + "&limit=250"
	seen := 0
	for next != "" {
		r := w.get(next, w.key)
		w.expect(r, http.StatusOK, "")
		for _, x := range v1Rows(t, r, "transactions") {
			id, amount := v1Str(t, x["id"]), string(x["amount"])
			var pending bool
			if err := json.Unmarshal(x["isPending"], &pending); err != nil {
				t.Fatalf("v1 isPending of %s: %v", id, err)
			}
			// For SimpleFIN, v1 names a transaction by its finsync id.
			wx, ok := want[providerID[id]]
			if !ok {
				t.Fatalf("v1 serves %s, not on the wire", id)
			}
			if !money(t, amount).Equal(money(t, wx.Amount)) || pending != wx.Pending {
				t.Fatalf("v1 %s: %s pending=%v, wire %+v", id, amount, pending, wx)
			}
			seen++
		}
		next = w.v1Next(r)
	}
	if seen != len(want) {
		t.Fatalf("v1 serves %d transactions, the wire has %d", seen, len(want))
	}
	return pending
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
