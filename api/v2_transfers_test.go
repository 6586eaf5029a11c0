package api_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// transferWorld is a user with a checking account and a card at one bank
// and a savings account at another: a detected transfer from checking to
// savings, a card payment too far apart to be detected, and a purchase.
type transferWorld struct {
	user                          domain.User
	chk, sav, card                uuid.UUID
	out1, in1, out2, in2, buy     uuid.UUID
	detected                      string
	other                         domain.User
	otherTx                       uuid.UUID
	unscopedKey, chkKey, bothKeys string
}

func seedTransfers(t *testing.T, e *env) transferWorld {
	t.Helper()
	fx := e.fx
	var w transferWorld
	w.user = fx.User(domain.PlanPro, true)
	c1 := fx.Connection(w.user.ID, "plaid", "active")
	c2 := fx.Connection(w.user.ID, "mercury", "active")
	w.chk = fx.Account(w.user.ID, c1, "plaid", "Checking")
	w.card = fx.Account(w.user.ID, c1, "plaid", "Card")
	w.sav = fx.Account(w.user.ID, c2, "mercury", "Savings")
	day := func(i int) time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i) }
	chk := fx.Transactions(w.user.ID, c1, w.chk, "plaid", []storagetest.Tx{
		{Date: day(1), Amount: "-500.00", Summary: "TRANSFER TO SAVINGS"},
		{Date: day(3), Amount: "-75.00", Summary: "CARD PAYMENT"},
		{Date: day(2), Amount: "-12.34", Summary: "COFFEE"},
	})
	w.out1, w.out2, w.buy = chk[0], chk[1], chk[2]
	w.in1 = fx.Transactions(w.user.ID, c2, w.sav, "mercury", []storagetest.Tx{{Date: day(1), Amount: "500.00", Summary: "TRANSFER FROM CHECKING"}})[0]
	w.in2 = fx.Transactions(w.user.ID, c1, w.card, "plaid", []storagetest.Tx{{Date: day(20), Amount: "75.00", Summary: "THANK YOU"}})[0]
	n, err := fx.St.DetectTransfers(context.Background(), w.user.ID, []uuid.UUID{w.out1, w.out2, w.buy, w.in1, w.in2})
	if err != nil || n != 1 {
		t.Fatalf("detect: %d, %v", n, err)
	}
	w.other = fx.User(domain.PlanPro, true)
	oc := fx.Connection(w.other.ID, "plaid", "active")
	oa := fx.Account(w.other.ID, oc, "plaid", "Other")
	w.otherTx = fx.Transactions(w.other.ID, oc, oa, "plaid", []storagetest.Tx{{Date: day(3), Amount: "75.00"}})[0]
	w.unscopedKey = fx.Key(w.user.ID, nil)
	w.chkKey = fx.Key(w.user.ID, []uuid.UUID{w.chk})
	w.bothKeys = fx.Key(w.user.ID, []uuid.UUID{w.chk, w.sav})
	list := e.get("/v2/transfers", w.unscopedKey)
	e.expect(list, http.StatusOK, "")
	w.detected = ids(t, list, "transfers")[0]
	return w
}

// transferIDs maps each listed transaction to its transferId ("" for null).
func transferIDs(t *testing.T, r response) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, x := range r.json(t)["transactions"].([]any) {
		m := x.(map[string]any)
		id, _ := m["transferId"].(string)
		out[m["id"].(string)] = id
	}
	return out
}

func TestTransfersListing(t *testing.T) {
	e := newEnv(t)
	w := seedTransfers(t, e)
	r := e.get("/v2/transfers", w.unscopedKey)
	trs := r.json(t)["transfers"].([]any)
	if len(trs) != 1 {
		t.Fatalf("transfers: %s", r.body)
	}
	tr := trs[0].(map[string]any)
	if tr["outflowTransactionId"] != w.out1.String() || tr["inflowTransactionId"] != w.in1.String() ||
		tr["outflowAccountId"] != w.chk.String() || tr["inflowAccountId"] != w.sav.String() ||
		tr["amount"].(float64) != 500 || tr["inflowAmount"].(float64) != 500 || tr["currency"] != "USD" ||
		tr["source"] != "detected" || tr["confidence"].(float64) < 0.7 || tr["confidence"].(float64) > 1 {
		t.Fatalf("transfer: %v", tr)
	}
	if rs := tr["reasons"].([]any); !slices.Contains(rs, any("same_amount")) || !slices.Contains(rs, any("same_day")) {
		t.Fatalf("reasons: %v", rs)
	}
	// Transactions carry their transfer.
	got := transferIDs(t, e.get("/v2/transactions", w.unscopedKey))
	if got[w.out1.String()] != w.detected || got[w.in1.String()] != w.detected || got[w.buy.String()] != "" || got[w.out2.String()] != "" {
		t.Fatalf("transferIds: %v", got)
	}
	only := e.get("/v2/transactions?transfers=only", w.unscopedKey)
	if got := ids(t, only, "transactions"); !sameSet(got, w.out1.String(), w.in1.String()) {
		t.Fatalf("transfers=only: %v", got)
	}
	excl := e.get("/v2/transactions?transfers=exclude", w.unscopedKey)
	if got := ids(t, excl, "transactions"); !sameSet(got, w.out2.String(), w.buy.String(), w.in2.String()) {
		t.Fatalf("transfers=exclude: %v", got)
	}
	if got := ids(t, e.get("/v2/transactions?transfers=include", w.unscopedKey), "transactions"); len(got) != 5 {
		t.Fatalf("transfers=include: %v", got)
	}
	e.expectMessage(e.get("/v2/transactions?transfers=some", w.unscopedKey), "transfers: must be one of include, exclude, only")
	// Filters.
	if got := ids(t, e.get("/v2/transfers?bankAccountId="+w.sav.String(), w.unscopedKey), "transfers"); len(got) != 1 {
		t.Fatalf("savings' transfers: %v", got)
	}
	if got := ids(t, e.get("/v2/transfers?bankAccountId="+w.card.String(), w.unscopedKey), "transfers"); len(got) != 0 {
		t.Fatalf("card's transfers: %v", got)
	}
	if got := ids(t, e.get("/v2/transfers?startDate=2026-03-03", w.unscopedKey), "transfers"); len(got) != 0 {
		t.Fatalf("transfers after the outflow's date: %v", got)
	}
	e.expect(e.get("/v2/transfers?bankAccountId="+uuid.NewString(), w.unscopedKey), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.get("/v2/transfers?limit=0", w.unscopedKey), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.get("/v2/transfers?cursor=bogus", w.unscopedKey), http.StatusBadRequest, "BAD_REQUEST")
	// Another user sees none of them.
	other := e.fx.Key(w.other.ID, nil)
	if got := ids(t, e.get("/v2/transfers", other), "transfers"); len(got) != 0 {
		t.Fatalf("another user's transfers: %v", got)
	}
	// Pages: pair the card payment by hand, then page one at a time.
	e.expect(e.send(http.MethodPost, "/v2/transfers", w.unscopedKey,
		`{"outflowTransactionId":"`+w.out2.String()+`","inflowTransactionId":"`+w.in2.String()+`"}`), http.StatusCreated, "")
	first := e.get("/v2/transfers?limit=1", w.unscopedKey)
	info := first.json(t)["pageInfo"].(map[string]any)
	if info["hasMore"] != true {
		t.Fatalf("first page: %s", first.body)
	}
	second := e.get("/v2/transfers?limit=1&cursor="+info["nextCursor"].(string), w.unscopedKey)
	a, b := ids(t, first, "transfers"), ids(t, second, "transfers")
	if len(a) != 1 || len(b) != 1 || a[0] == b[0] || second.json(t)["pageInfo"].(map[string]any)["hasMore"] != false {
		t.Fatalf("pages: %s then %s", first.body, second.body)
	}
}

func TestTransfersScopedKeys(t *testing.T) {
	e := newEnv(t)
	w := seedTransfers(t, e)
	// A key reaching only checking sees neither the transfer nor its id.
	if got := ids(t, e.get("/v2/transfers", w.chkKey), "transfers"); len(got) != 0 {
		t.Fatalf("scoped transfers: %v", got)
	}
	got := transferIDs(t, e.get("/v2/transactions", w.chkKey))
	if id, ok := got[w.out1.String()]; !ok || id != "" {
		t.Fatalf("scoped transferIds: %v", got)
	}
	// For it the outflow is not a transfer: excluding transfers keeps it.
	if got := ids(t, e.get("/v2/transactions?transfers=exclude", w.chkKey), "transactions"); !slices.Contains(got, w.out1.String()) {
		t.Fatalf("scoped transfers=exclude: %v", got)
	}
	e.expect(e.send(http.MethodDelete, "/v2/transfers/"+w.detected, w.chkKey, ""), http.StatusNotFound, "NOT_FOUND")
	body := `{"outflowTransactionId":"` + w.out2.String() + `","inflowTransactionId":"` + w.in2.String() + `"}`
	e.expectMessage(e.send(http.MethodPost, "/v2/transfers", w.chkKey, body), "inflowTransactionId: no such transaction")
	// A key reaching both accounts sees it.
	if got := ids(t, e.get("/v2/transfers", w.bothKeys), "transfers"); len(got) != 1 || got[0] != w.detected {
		t.Fatalf("transfers of a key with both accounts: %v", got)
	}
	if got := transferIDs(t, e.get("/v2/transactions", w.bothKeys)); got[w.in1.String()] != w.detected {
		t.Fatalf("transferIds of a key with both accounts: %v", got)
	}
}

func TestCreateTransferEndpoint(t *testing.T) {
	e := newEnv(t)
	w := seedTransfers(t, e)
	pair := func(out, in uuid.UUID) string {
		return `{"outflowTransactionId":"` + out.String() + `","inflowTransactionId":"` + in.String() + `"}`
	}
	for _, tt := range []struct{ body, msg string }{
		{`{"inflowTransactionId":"` + w.in2.String() + `"}`, "outflowTransactionId: is required"},
		{`{"outflowTransactionId":"x","inflowTransactionId":"` + w.in2.String() + `"}`, "outflowTransactionId: must be a UUID"},
		{`{"outflowTransactionId":"` + w.out2.String() + `","inflowTransactionId":null}`, "inflowTransactionId: must be a UUID"},
		{`{"outflowTransactionId":"` + w.out2.String() + `","inflowTransactionId":"` + w.in2.String() + `","x":1}`, `body: unknown field "x"`},
		{pair(w.in2, w.out2), "outflowTransactionId: is not an outflow (its amount is not negative)"},
		{pair(w.out2, w.buy), "inflowTransactionId: is not an inflow (its amount is not positive)"},
		{pair(w.out2, w.otherTx), "inflowTransactionId: no such transaction"},
		{pair(uuid.New(), w.in2), "outflowTransactionId: no such transaction"},
	} {
		e.expectMessage(e.send(http.MethodPost, "/v2/transfers", w.unscopedKey, tt.body), tt.msg)
	}
	// Either side already paired: 409.
	e.expect(e.send(http.MethodPost, "/v2/transfers", w.unscopedKey, pair(w.out1, w.in2)), http.StatusConflict, "CONFLICT")
	e.expect(e.send(http.MethodPost, "/v2/transfers", w.unscopedKey, pair(w.out2, w.in1)), http.StatusConflict, "CONFLICT")
	// A pair by hand, retried with its Idempotency-Key: one transfer, the
	// same answer.
	first := e.sendIdem(http.MethodPost, "/v2/transfers", w.unscopedKey, "pair-card-payment", pair(w.out2, w.in2))
	e.expect(first, http.StatusCreated, "")
	tr := object(t, first, "transfer")
	if tr["source"] != "user" || tr["confidence"].(float64) != 1 || tr["amount"].(float64) != 75 ||
		tr["outflowAccountId"] != w.chk.String() || tr["inflowAccountId"] != w.card.String() {
		t.Fatalf("transfer: %v", tr)
	}
	retry := e.sendIdem(http.MethodPost, "/v2/transfers", w.unscopedKey, "pair-card-payment", pair(w.out2, w.in2))
	e.expect(retry, http.StatusCreated, "")
	if object(t, retry, "transfer")["id"] != tr["id"] {
		t.Fatalf("retry: %s, first: %s", retry.body, first.body)
	}
	if got := ids(t, e.get("/v2/transfers", w.unscopedKey), "transfers"); len(got) != 2 {
		t.Fatalf("transfers after a retried pair: %v", got)
	}
	// Without the key, the same pair again conflicts.
	e.expect(e.send(http.MethodPost, "/v2/transfers", w.unscopedKey, pair(w.out2, w.in2)), http.StatusConflict, "CONFLICT")
}

func TestDeleteTransferEndpoint(t *testing.T) {
	e := newEnv(t)
	w := seedTransfers(t, e)
	e.expect(e.send(http.MethodDelete, "/v2/transfers/not-a-uuid", w.unscopedKey, ""), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.send(http.MethodDelete, "/v2/transfers/"+w.detected, e.fx.Key(w.other.ID, nil), ""), http.StatusNotFound, "NOT_FOUND")
	e.expect(e.send(http.MethodDelete, "/v2/transfers/"+w.detected, w.unscopedKey, ""), http.StatusNoContent, "")
	e.expect(e.send(http.MethodDelete, "/v2/transfers/"+w.detected, w.unscopedKey, ""), http.StatusNotFound, "NOT_FOUND")
	if got := ids(t, e.get("/v2/transfers", w.unscopedKey), "transfers"); len(got) != 0 {
		t.Fatalf("transfers after unpairing: %v", got)
	}
	if got := transferIDs(t, e.get("/v2/transactions", w.unscopedKey)); got[w.out1.String()] != "" {
		t.Fatalf("transferIds after unpairing: %v", got)
	}
	// Remembered: detection never pairs them again.
	n, err := e.fx.St.DetectTransfers(context.Background(), w.user.ID, []uuid.UUID{w.out1, w.in1})
	if err != nil || n != 0 {
		t.Fatalf("detection after unpairing: %d, %v", n, err)
	}
}

// sameSet reports whether got holds exactly want, in any order.
func sameSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
