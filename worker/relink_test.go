package worker_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/rules"
)

// storedTx is what a re-link must keep of a stored transaction.
type storedTx struct {
	providerID, status, summary string
	accountID                   uuid.UUID
	categoryID, ruleID          *uuid.UUID
	categorySource              *string
	hidden                      bool
}

// relinkWorld is a derivedWorld whose syncs compile the user's rules
// through one cache, as a worker process does.
type relinkWorld struct{ *derivedWorld }

func newRelinkWorld(t *testing.T) relinkWorld {
	w := newDerivedWorld(t)
	w.syncer.Rules = rules.NewCache(64)
	return relinkWorld{w}
}

// live returns the connection's transactions that are not deleted, by id.
func (w relinkWorld) live(c domain.BankConnection) map[uuid.UUID]storedTx {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT id, provider_id, status, summary, account_id, category_id,
		category_rule_id, category_source, hidden FROM transactions WHERE bank_connection_id = $1 AND status <> 'deleted'`, c.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]storedTx{}
	for rows.Next() {
		var id uuid.UUID
		var s storedTx
		if err := rows.Scan(&id, &s.providerID, &s.status, &s.summary, &s.accountID, &s.categoryID, &s.ruleID, &s.categorySource, &s.hidden); err != nil {
			w.t.Fatal(err)
		}
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// accounts returns the connection's provider account ids by account id.
func (w relinkWorld) accounts(c domain.BankConnection) map[uuid.UUID]string {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), `SELECT id, provider_account_id FROM accounts WHERE bank_connection_id = $1`, c.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var pid string
		if err := rows.Scan(&id, &pid); err != nil {
			w.t.Fatal(err)
		}
		out[id] = pid
	}
	return out
}

// reauth puts the simulator's credentials for name on c, as
// `connections reauth` does.
func (w relinkWorld) reauth(c domain.BankConnection, name string) {
	w.t.Helper()
	sealed, err := w.box.Seal(allsim.Credentials(c.Provider, name))
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.st.ReauthConnection(context.Background(), c.ID, sealed, ""); err != nil {
		w.t.Fatal(err)
	}
}

// setCategory sets a transaction's category through PATCH /v2/transactions/{id}.
func (w relinkWorld) setCategory(id, category uuid.UUID) {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodPatch, w.api+"/v2/transactions/"+id.String(),
		strings.NewReader(`{"categoryId":"`+category.String()+`"}`))
	req.Header.Set("Authorization", "Bearer "+w.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("PATCH transaction: %s", resp.Status)
	}
}

// TestRelinkKeepsIdsCategoriesAndRules: a Plaid connection synced through
// the River worker, with a rule's outcomes and a user's categories, breaks
// (ITEM_LOGIN_REQUIRED), is re-linked (a new Item: new account and
// transaction ids, the same persistent_account_id for depository
// accounts) and synced again: nothing is stored twice, every account and
// transaction keeps its id, category and rule outcome, and the
// equalRowGroups counts a connection's groups of live rows equal in
// account, amount, date, description and status ($1: the connection).
const equalRowGroups = `SELECT count(*) FROM (SELECT 1 FROM transactions WHERE bank_connection_id = $1 AND status <> 'deleted'
		GROUP BY account_id, amount, tx_date, summary, status HAVING count(*) > 1) d`

// connection is active again with its error cleared.
func TestRelinkKeepsIdsCategoriesAndRules(t *testing.T) {
	w := newRelinkWorld(t)
	ctx := context.Background()
	cat := w.newCategory("Kept by hand")
	ruleCat := w.newCategory("Interest by rule")
	if _, err := w.pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority) VALUES ($1, $2, $3, 10)`, w.user.ID,
		`[{"field":"Summary","operator":"contains","value":"interest"}]`,
		`[{"action":"updateTransaction","field":"Category","value":{"id":"`+ruleCat.String()+`"}}]`); err != nil {
		t.Fatal(err)
	}
	c := w.connect("plaid", "relinked-user")
	w.syncByJob(c)
	before, acctsBefore := w.live(c), w.accounts(c)
	var byHand []uuid.UUID
	for id, tx := range before {
		if len(byHand) < 10 && !strings.Contains(strings.ToLower(tx.summary), "interest") {
			w.setCategory(id, cat)
			byHand = append(byHand, id)
		}
	}
	before = w.live(c)
	ruled := 0
	for _, tx := range before {
		if tx.ruleID != nil {
			ruled++
		}
	}
	if len(before) < 100 || ruled == 0 || len(byHand) != 10 {
		t.Fatalf("setup: %d transactions, %d by rule, %d by hand", len(before), ruled, len(byHand))
	}

	// The link breaks: the sync fails and the connection shows it.
	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultLoginRequired}); err != nil {
		t.Fatal(err)
	}
	if err := w.sync(c); err == nil {
		t.Fatal("sync with the login required succeeded")
	}
	if err := w.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.st.GetConnectionAnyUser(ctx, c.ID); got.Status != domain.ConnectionError {
		t.Fatalf("broken connection is %s", got.Status)
	}

	equalBefore := w.count(equalRowGroups, c.ID)
	w.reauth(c, "relinked-user"+simkit.RelinkSeparator+"1")
	w.syncByJob(c)

	after, acctsAfter := w.live(c), w.accounts(c)
	if len(acctsAfter) != len(acctsBefore) {
		t.Fatalf("%d accounts after the re-link, %d before", len(acctsAfter), len(acctsBefore))
	}
	for id, pid := range acctsBefore {
		if now, ok := acctsAfter[id]; !ok || now == pid {
			t.Fatalf("account %s: provider id %q before, %q (present %v) after: want the same account under a new id", id, pid, now, ok)
		}
	}
	if len(after) != len(before) {
		t.Fatalf("%d transactions after the re-link, %d before", len(after), len(before))
	}
	for id, b := range before {
		a, ok := after[id]
		switch {
		case !ok:
			t.Fatalf("transaction %s (%s) is gone", id, b.summary)
		case a.providerID == b.providerID:
			t.Fatalf("transaction %s kept its old provider id %s", id, b.providerID)
		case a.accountID != b.accountID || a.status != b.status:
			t.Fatalf("transaction %s moved: %+v, was %+v", id, a, b)
		case !sameID(a.categoryID, b.categoryID) || !sameID(a.ruleID, b.ruleID) || deref(a.categorySource) != deref(b.categorySource):
			t.Fatalf("transaction %s: category %v (rule %v, %s), was %v (rule %v, %s)", id,
				a.categoryID, a.ruleID, deref(a.categorySource), b.categoryID, b.ruleID, deref(b.categorySource))
		}
	}
	// Equal rows can exist in the data itself: a re-link adds no group of
	// them.
	if n := w.count(equalRowGroups, c.ID); n > equalBefore {
		t.Fatalf("%d groups of equal rows after the re-link, %d before", n, equalBefore)
	}
	got, err := w.st.GetConnectionAnyUser(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.ConnectionActive || got.LastProviderErrorCode != nil || got.ReconnectURL != nil {
		t.Fatalf("after the re-link: status %s, error %v, reconnect %v", got.Status, got.LastProviderErrorCode, got.ReconnectURL)
	}
	if n := w.count(`SELECT consecutive_failures FROM bank_connections WHERE id = $1`, c.ID); n != 0 {
		t.Fatalf("consecutive failures %d after the re-link", n)
	}
	if n := w.count(`SELECT count(*) FROM relink_candidates`); n != 0 {
		t.Fatalf("%d relink candidates left", n)
	}
	t.Logf("re-link: %d accounts and %d transactions kept their ids (%d categorised by rule, %d by hand), 0 duplicates",
		len(acctsAfter), len(after), ruled, len(byHand))
}

// newCategory stores a category of the user.
func (w relinkWorld) newCategory(name string) uuid.UUID {
	w.t.Helper()
	var id uuid.UUID
	if err := w.pool.QueryRow(context.Background(), `INSERT INTO categories (user_id, name) VALUES ($1, $2) RETURNING id`,
		w.user.ID, name).Scan(&id); err != nil {
		w.t.Fatal(err)
	}
	return id
}

func sameID(a, b *uuid.UUID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// hasTwin reports whether another transaction of the connection is equal
// to transaction id in account, amount, dates, description and status:
// the two are indistinguishable, and a re-issued one matches neither.
func (w relinkWorld) hasTwin(id uuid.UUID) bool {
	return w.count(`SELECT count(*) FROM transactions o JOIN transactions m ON m.id = $1
		WHERE o.id <> m.id AND o.bank_connection_id = m.bank_connection_id AND o.account_id = m.account_id
			AND o.amount = m.amount AND o.summary = m.summary AND o.posted_date IS NOT DISTINCT FROM m.posted_date
			AND o.authorized_date IS NOT DISTINCT FROM m.authorized_date`, id) > 0
}

// simIndex is the simulator's index of the transaction a Plaid
// transaction id stands for: its last ten characters, in base 62. The
// pending and posted versions of one transaction share it.
func simIndex(t *testing.T, pid string) int64 {
	t.Helper()
	if len(pid) < 10 {
		t.Fatalf("provider id %q", pid)
	}
	var n int64
	for _, c := range pid[len(pid)-10:] {
		n = n*62 + int64(strings.IndexRune(simkit.Alnum, c))
	}
	return n
}

// TestRelinkGroundTruth re-links a Plaid connection of a few thousand
// generated transactions four simulated days after its last sync (new
// transactions meanwhile, pending ones posted), and scores the matching
// against the simulator's own identity of each transaction (the index its
// ids carry): every stored row matched to a re-issued id must be the same
// transaction, no transaction may be stored twice, and a re-issued posted
// transaction may go unmatched only when it has an indistinguishable twin
// (the simulator, like real data, has same-day equal charges): then no
// match is unique, and it is stored under a new id while the old row is
// removed.
func TestRelinkGroundTruth(t *testing.T) {
	w := newRelinkWorld(t)
	ctx := context.Background()
	c := w.connect("plaid", "truth")
	key, err := allsim.CredentialKey("plaid", allsim.Credentials("plaid", "truth"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: key, Transactions: 4000, HistoryDays: 365}); err != nil {
		t.Fatal(err)
	}
	w.syncByJob(c)
	before := w.live(c)
	if err := w.sim.Advance(4); err != nil {
		t.Fatal(err)
	}
	w.reauth(c, "truth"+simkit.RelinkSeparator+"1")
	w.syncByJob(c)
	after := w.live(c)

	var matched, wrong, added, removed, missed, unexplained, duplicates int
	byIndex := map[int64]int{}
	for _, a := range after {
		byIndex[simIndex(t, a.providerID)]++
	}
	for id, a := range after {
		b, existed := before[id]
		switch {
		case !existed:
			added++
		case a.providerID == b.providerID:
			t.Errorf("transaction %s kept the old Item's id", id)
		case simIndex(t, a.providerID) != simIndex(t, b.providerID):
			wrong++
		default:
			matched++
		}
	}
	for id, b := range before {
		if _, ok := after[id]; !ok {
			removed++
			if b.status == "posted" && byIndex[simIndex(t, b.providerID)] > 0 {
				missed++ // a posted row whose transaction is still there, re-issued: should have matched
				if !w.hasTwin(id) {
					unexplained++
				}
			}
		}
	}
	for _, n := range byIndex {
		if n > 1 {
			duplicates += n - 1
		}
	}
	var deleted int
	if err := w.pool.QueryRow(ctx, `SELECT count(*) FROM transactions WHERE bank_connection_id = $1 AND status = 'deleted'`, c.ID).Scan(&deleted); err != nil {
		t.Fatal(err)
	}
	t.Logf("re-link ground truth: %d stored before, %d after; matched %d, matched wrongly %d, added %d, removed %d "+
		"(of them posted rows whose transaction the new Item re-issued: %d, every one with an indistinguishable twin: %v), duplicates %d",
		len(before), len(after), matched, wrong, added, removed, missed, unexplained == 0, duplicates)
	if wrong != 0 || duplicates != 0 || unexplained != 0 {
		t.Fatalf("wrong matches %d, duplicates %d, re-issued rows missed without a twin %d: want 0", wrong, duplicates, unexplained)
	}
	if matched < len(before)*95/100 {
		t.Fatalf("only %d of %d stored rows matched", matched, len(before))
	}
}

// TestRelinkEnableBanking: a new Enable Banking session for the same user
// at the same bank (new account uids, the same identification_hash, so
// every transaction's provider id is new too) keeps every account and
// transaction under its id, with nothing stored twice.
func TestRelinkEnableBanking(t *testing.T) {
	w := newRelinkWorld(t)
	w.syncer.Now = w.sim.WallNow
	c := w.connect("enablebanking", "eb-relink")
	w.syncByJob(c)
	before, acctsBefore := w.live(c), w.accounts(c)
	w.reauth(c, "eb-relink"+simkit.RelinkSeparator+"1")
	w.syncByJob(c)
	after, acctsAfter := w.live(c), w.accounts(c)
	if len(acctsAfter) != len(acctsBefore) || len(after) != len(before) || len(before) == 0 {
		t.Fatalf("accounts %d then %d, transactions %d then %d", len(acctsBefore), len(acctsAfter), len(before), len(after))
	}
	for id, pid := range acctsBefore {
		if now := acctsAfter[id]; now == pid || now == "" {
			t.Fatalf("account %s: uid %q then %q: want the same account under the new session's uid", id, pid, now)
		}
	}
	for id, b := range before {
		if a, ok := after[id]; !ok || a.providerID == b.providerID || a.accountID != b.accountID {
			t.Fatalf("transaction %s (%s): before %+v, after %+v (present %v)", id, b.summary, b, a, ok)
		}
	}
	t.Logf("Enable Banking re-link: %d accounts and %d transactions kept their ids, 0 duplicates", len(acctsAfter), len(after))
}
