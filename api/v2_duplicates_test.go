package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// dupWorld is a user who linked one bank twice: orig on the older
// connection, dup on the newer, with the same twelve transactions; and
// another user.
type dupWorld struct {
	user, other          domain.User
	oldConn, newConn     uuid.UUID
	orig, dup, otherAcct uuid.UUID
	origTx, dupTx        []uuid.UUID
}

// seedDupWorld stores the world and ends a sync of the newer connection,
// which marks dup.
func seedDupWorld(t *testing.T, e *env) dupWorld {
	t.Helper()
	var w dupWorld
	fx := e.fx
	w.user, w.other = fx.User(domain.PlanPro, true), fx.User(domain.PlanPro, true)
	w.oldConn = fx.Connection(w.user.ID, "plaid", "active")
	w.newConn = fx.Connection(w.user.ID, "gocardless", "active")
	ctx := context.Background()
	if _, err := fx.Pool.Exec(ctx, `UPDATE bank_connections SET created_at = now() - interval '1 day' WHERE id = $1`, w.oldConn); err != nil {
		t.Fatal(err)
	}
	w.orig = fx.Account(w.user.ID, w.oldConn, "plaid", "Checking")
	w.dup = fx.Account(w.user.ID, w.newConn, "gocardless", "Current account")
	otherConn := fx.Connection(w.other.ID, "plaid", "active")
	w.otherAcct = fx.Account(w.other.ID, otherConn, "plaid", "Checking")
	var rows []storagetest.Tx
	for i := range 12 {
		rows = append(rows, storagetest.Tx{Date: time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC), Amount: fmt.Sprintf("-%d.%02d", 10+i*7, i*13%100)})
	}
	w.origTx = fx.Transactions(w.user.ID, w.oldConn, w.orig, "plaid", rows)
	w.dupTx = fx.Transactions(w.user.ID, w.newConn, w.dup, "gocardless", rows)
	fx.SyncSucceeded(w.newConn)
	return w
}

// strs returns the ids as strings, in order.
func strs(ids ...[]uuid.UUID) []string {
	var out []string
	for _, list := range ids {
		for _, id := range list {
			out = append(out, id.String())
		}
	}
	return out
}

// sortedIDs lists a response's ids of key, sorted.
func sortedIDs(t *testing.T, r response, key string) []string {
	t.Helper()
	got := ids(t, r, key)
	slices.Sort(got)
	return got
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestDuplicateAccounts walks a double link through the API: the mark on
// the newer account, the listings with and without includeDuplicates, v1,
// scoped keys, and POST /accounts/{id}/not-duplicate (scope, other users,
// retries, and a later sync that does not mark the pair again).
func TestDuplicateAccounts(t *testing.T) {
	e := newEnv(t)
	w := seedDupWorld(t, e)
	full := e.fx.Key(w.user.ID, nil)
	onlyDup := e.fx.Key(w.user.ID, []uuid.UUID{w.dup})
	onlyOrig := e.fx.Key(w.user.ID, []uuid.UUID{w.orig})
	both := e.fx.Key(w.user.ID, []uuid.UUID{w.orig, w.dup})
	otherKey := e.fx.Key(w.other.ID, nil)

	t.Run("accounts show the mark", func(t *testing.T) {
		r := e.get("/v2/accounts", full)
		e.expect(r, http.StatusOK, "")
		marks := map[string]any{}
		for _, a := range r.json(t)["accounts"].([]any) {
			m := a.(map[string]any)
			v, ok := m["duplicateOfAccountId"]
			if !ok {
				t.Fatalf("no duplicateOfAccountId in %v", m)
			}
			marks[m["id"].(string)] = v
		}
		if len(marks) != 2 || marks[w.orig.String()] != nil || marks[w.dup.String()] != w.orig.String() {
			t.Fatalf("marks %v", marks)
		}
		r = e.get("/v2/accounts/"+w.dup.String(), full)
		e.expect(r, http.StatusOK, "")
		if got := r.json(t)["account"].(map[string]any)["duplicateOfAccountId"]; got != w.orig.String() {
			t.Fatalf("account's mark %v", got)
		}
	})

	origOnly, all := sorted(strs(w.origTx)), sorted(strs(w.origTx, w.dupTx))
	listings := []struct {
		name, key, query string
		want             []string
	}{
		{"default leaves the duplicate out", full, "", origOnly},
		{"includeDuplicates lists both", full, "includeDuplicates=true", all},
		{"includeDuplicates=false", full, "includeDuplicates=false", origOnly},
		{"the duplicate's own listing is empty by default", full, "bankAccountId=" + w.dup.String(), nil},
		{"and full with includeDuplicates", full, "bankAccountId=" + w.dup.String() + "&includeDuplicates=true", sorted(strs(w.dupTx))},
		{"the newer connection's listing", full, "bankConnectionId=" + w.newConn.String(), nil},
		{"a key without the original sees the duplicate", onlyDup, "", sorted(strs(w.dupTx))},
		{"a key with both sees one copy", both, "", origOnly},
		{"a key with both and includeDuplicates", both, "includeDuplicates=true", all},
		{"a key with the original only", onlyOrig, "includeDuplicates=true", origOnly},
	}
	for _, tt := range listings {
		t.Run(tt.name, func(t *testing.T) {
			r := e.get("/v2/transactions?limit=250&"+tt.query, tt.key)
			e.expect(r, http.StatusOK, "")
			if got := sortedIDs(t, r, "transactions"); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
		})
	}
	t.Run("includeDuplicates must be a boolean", func(t *testing.T) {
		r := e.get("/v2/transactions?includeDuplicates=yes", full)
		e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
	})
	v1 := func(conn uuid.UUID, key string) []string {
		t.Helper()
		r := e.get("/v1/transactions?bankConnectionId="+conn.String()+"&startDate=2026-03-01&endDate=2026-03-31", key)
		e.expect(r, http.StatusOK, "")
		got := v1IDs(t, v1Rows(t, r, "transactions"))
		slices.Sort(got)
		return got
	}
	t.Run("v1 leaves the duplicate out", func(t *testing.T) {
		if got := v1(w.newConn, full); len(got) != 0 {
			t.Fatalf("v1 lists the duplicate's rows: %v", got)
		}
		if got := v1(w.oldConn, full); !slices.Equal(got, origOnly) {
			t.Fatalf("v1 original %v", got)
		}
		if got := v1(w.newConn, onlyDup); !slices.Equal(got, sorted(strs(w.dupTx))) {
			t.Fatalf("v1 with a key without the original: %v", got)
		}
	})

	path := "/v2/accounts/" + w.dup.String() + "/not-duplicate"
	t.Run("not-duplicate outside the scope or of another user", func(t *testing.T) {
		e.expect(e.send(http.MethodPost, path, onlyOrig, ""), http.StatusNotFound, "NOT_FOUND")
		e.expect(e.send(http.MethodPost, path, otherKey, ""), http.StatusNotFound, "NOT_FOUND")
		e.expect(e.send(http.MethodPost, "/v2/accounts/"+w.otherAcct.String()+"/not-duplicate", full, ""), http.StatusNotFound, "NOT_FOUND")
		e.expect(e.send(http.MethodPost, "/v2/accounts/x/not-duplicate", full, ""), http.StatusBadRequest, "BAD_REQUEST")
		e.expect(e.send(http.MethodPost, "/v2/accounts/"+uuid.NewString()+"/not-duplicate", full, ""), http.StatusNotFound, "NOT_FOUND")
		if got := e.get("/v2/accounts/"+w.dup.String(), full).json(t)["account"].(map[string]any)["duplicateOfAccountId"]; got != w.orig.String() {
			t.Fatalf("mark changed by refused calls: %v", got)
		}
	})
	t.Run("not-duplicate clears the mark for good", func(t *testing.T) {
		first := e.sendIdem(http.MethodPost, path, full, "nd-1", "")
		e.expect(first, http.StatusOK, "")
		acct := first.json(t)["account"].(map[string]any)
		if acct["id"] != w.dup.String() || acct["duplicateOfAccountId"] != nil {
			t.Fatalf("answer %v", acct)
		}
		replay := e.sendIdem(http.MethodPost, path, full, "nd-1", "")
		e.expect(replay, http.StatusOK, "")
		if string(replay.body) != string(first.body) {
			t.Fatalf("replay %s, first %s", replay.body, first.body)
		}
		again := e.send(http.MethodPost, path, full, "")
		e.expect(again, http.StatusOK, "")
		if again.json(t)["account"].(map[string]any)["duplicateOfAccountId"] != nil {
			t.Fatalf("second call %s", again.body)
		}
		for range 3 {
			for _, c := range []uuid.UUID{w.newConn, w.oldConn} {
				e.fx.SyncSucceeded(c)
			}
		}
		r := e.get("/v2/transactions?limit=250", full)
		if got := sortedIDs(t, r, "transactions"); !slices.Equal(got, all) {
			t.Fatalf("after not-duplicate and syncs: %v", got)
		}
		if got := e.get("/v2/accounts/"+w.dup.String(), full).json(t)["account"].(map[string]any)["duplicateOfAccountId"]; got != nil {
			t.Fatalf("mark came back: %v", got)
		}
	})
}
