package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/enablebanking"
	"github.com/finsync/finsync/providers/sim"
)

// ebRow is one transaction as the Enable Banking simulator puts it on the
// wire.
type ebRow struct {
	EntryReference    string `json:"entry_reference"`
	TransactionAmount struct {
		Amount string `json:"amount"`
	} `json:"transaction_amount"`
	Indicator   string `json:"credit_debit_indicator"`
	Status      string `json:"status"`
	BookingDate string `json:"booking_date"`
	Creditor    *struct {
		Name string `json:"name"`
	} `json:"creditor"`
	Debtor *struct {
		Name string `json:"name"`
	} `json:"debtor"`
}

// ebGet reads path of the simulated Enable Banking API with a token of the
// connection's application, as the user present (Psu-Ip-Address), so that
// the test's reads spend none of the banks' daily quota.
func (w *workerEnv) ebGet(name, path string, out any) {
	w.t.Helper()
	var creds map[string]string
	if err := json.Unmarshal(allsim.Credentials("enablebanking", name), &creds); err != nil {
		w.t.Fatal(err)
	}
	tok, err := enablebanking.Sign(creds["application_id"], creds["private_key"], time.Now(), time.Hour)
	if err != nil {
		w.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, w.root+"/enablebanking"+path, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Psu-Ip-Address", "203.0.113.7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode != http.StatusOK {
		w.t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
}

// ebWire reads every account's balances and transactions since the given
// day straight from the simulator: provider id → row, and provider account
// id → its current balance as finsync serves it (a card's as owed).
func (w *workerEnv) ebWire(name string, since time.Time) (map[string]ebRow, map[string]string) {
	var sess struct {
		Accounts []string `json:"accounts"`
	}
	w.ebGet(name, "/sessions/"+allsimSession(w.t, name), &sess)
	rows, balances := map[string]ebRow{}, map[string]string{}
	today := w.sim.DateOf(w.sim.Clock()).Format(time.DateOnly)
	for _, uid := range sess.Accounts {
		var b struct {
			Balances []struct {
				Type   string `json:"balance_type"`
				Amount struct {
					Amount string `json:"amount"`
				} `json:"balance_amount"`
			} `json:"balances"`
		}
		w.ebGet(name, "/accounts/"+uid+"/balances", &b)
		for _, x := range b.Balances {
			switch x.Type {
			case "CLBD":
				balances[uid] = x.Amount.Amount
			case "XPCD":
				balances[uid] = money(w.t, x.Amount.Amount).Neg().String()
			}
		}
		q := "?date_from=" + since.Format(time.DateOnly) + "&date_to=" + today
		for key := ""; ; {
			var p struct {
				Transactions    []ebRow `json:"transactions"`
				ContinuationKey *string `json:"continuation_key"`
			}
			page := q
			if key != "" {
				page += "&continuation_key=" + url.QueryEscape(key)
			}
			w.ebGet(name, "/accounts/"+uid+"/transactions"+page, &p)
			for _, r := range p.Transactions {
				rows[uid+"/"+r.EntryReference] = r
			}
			if p.ContinuationKey == nil {
				break
			}
			key = *p.ContinuationKey
		}
	}
	return rows, balances
}

// allsimSession is the session id of the simulated connection name.
func allsimSession(t *testing.T, name string) string {
	var creds map[string]string
	if err := json.Unmarshal(allsim.Credentials("enablebanking", name), &creds); err != nil {
		t.Fatal(err)
	}
	return creds["session_id"]
}

// TestEnableBankingServedThroughV1AndV2 syncs an Enable Banking connection
// through the real worker, reads it back through both API versions and
// compares it with what the simulator has on the wire: balances (a card's
// as the amount owed), amounts signed by credit_debit_indicator, the
// counterparty as summary, pending rows; after the clock advances and an
// incremental sync, the formerly pending rows are served booked.
func TestEnableBankingServedThroughV1AndV2(t *testing.T) {
	w := newWorkerEnv(t)
	const name = "served"
	// A longer history than the environment's default, so that its last
	// days hold pending transactions.
	if err := w.sim.SetConnection(sim.ConnectionSettings{Provider: "enablebanking", Credential: allsimSession(t, name), Transactions: 300}); err != nil {
		t.Fatal(err)
	}
	conn := w.connect("enablebanking", name)
	w.syncAndWait(conn)
	since := w.sim.DateOf(w.sim.Clock()).AddDate(0, 0, -enablebanking.WindowDays)
	pending := w.checkEnableBankingServed(conn.String(), name, since)
	if len(pending) == 0 {
		t.Fatal("the first sync served no pending transaction")
	}
	if err := w.sim.Advance(5); err != nil {
		t.Fatal(err)
	}
	w.syncAndWait(conn)
	after := w.checkEnableBankingServed(conn.String(), name, since)
	for id := range pending {
		if after[id] {
			t.Fatalf("%s still pending five days later", id)
		}
	}
}

// checkEnableBankingServed compares the v1 and v2 views of the connection
// with the wire and returns the providerIds served as pending.
func (w *workerEnv) checkEnableBankingServed(conn, name string, since time.Time) map[string]bool {
	t := w.t
	t.Helper()
	wire, balances := w.ebWire(name, since)
	accounts := w.pages("/v2/accounts?bankConnectionId="+conn+"&limit=250", "accounts")
	if len(accounts) != len(balances) {
		t.Fatalf("v2 serves %d accounts, the wire has %d", len(accounts), len(balances))
	}
	for _, a := range accounts {
		want, ok := balances[a["providerAccountId"].(string)]
		if !ok || !money(t, a["currentBalance"]).Equal(money(t, want)) || a["provider"] != "enablebanking" {
			t.Fatalf("v2 account %v: balance %v, wire %q", a["providerAccountId"], a["currentBalance"], want)
		}
	}
	txns := w.pages("/v2/transactions?bankConnectionId="+conn+"&status=all&limit=250", "transactions")
	live, pending := 0, map[string]bool{}
	for _, x := range txns {
		if x["status"] == "deleted" {
			continue
		}
		live++
		id := x["providerId"].(string)
		r, ok := wire[id]
		if !ok {
			t.Fatalf("v2 serves %s, not on the wire", id)
		}
		amount, status, counterparty := money(t, r.TransactionAmount.Amount), "posted", r.Debtor
		if r.Indicator == "DBIT" {
			amount, counterparty = amount.Neg(), r.Creditor
		}
		if r.Status == "PDNG" {
			status, pending[id] = "pending", true
		}
		if !money(t, x["amount"]).Equal(amount) || x["status"] != status || counterparty == nil || x["summary"] != counterparty.Name {
			t.Fatalf("v2 %s: %v %v %v, wire %+v", id, x["amount"], x["status"], x["summary"], r)
		}
		if status == "posted" && x["postedDate"] != r.BookingDate {
			t.Fatalf("v2 %s posted %v, wire booked %s", id, x["postedDate"], r.BookingDate)
		}
	}
	if live != len(wire) {
		t.Fatalf("v2 serves %d live transactions, the wire has %d", live, len(wire))
	}
	r := w.get("/v1/accounts?connectionId="+conn, w.key)
	w.expect(r, http.StatusOK, "")
	if rows := v1Rows(t, r, ""); len(rows) != len(balances) {
		t.Fatalf("v1 serves %d accounts, the wire has %d", len(rows), len(balances))
	}
	next := "/v1/transactions?bankConnectionId=" + conn + "&startDate=" + since.AddDate(0, 0, -1).Format(time.DateOnly) +
		"&endDate=" + w.sim.DateOf(w.sim.Clock()+1).Format(time.DateOnly) + "&limit=250"
	seen := 0
	for next != "" {
		r := w.get(next, w.key)
		w.expect(r, http.StatusOK, "")
		seen += len(v1Rows(t, r, "transactions"))
		next = w.v1Next(r)
	}
	if seen != len(wire) {
		t.Fatalf("v1 serves %d transactions, the wire has %d", seen, len(wire))
	}
	return pending
}
