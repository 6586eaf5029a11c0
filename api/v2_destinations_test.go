package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// withInsertOnlyJobs gives the API a River client that only enqueues, so
// the jobs a request enqueues stay visible.
func withInsertOnlyJobs(t *testing.T) envOption {
	return func(c *api.Config) {
		client, err := worker.NewInsertClient(c.Store)
		if err != nil {
			t.Fatal(err)
		}
		c.Jobs = client
	}
}

// TestAccountWritesEnqueueDestinationEvents checks that each manual-account
// change writes one outbox event per linked destination and its delivery
// job in the change's transaction, and that refused writes enqueue nothing.
func TestAccountWritesEnqueueDestinationEvents(t *testing.T) {
	e := newEnv(t, withInsertOnlyJobs(t))
	user := e.fx.User(domain.PlanPro, true).ID
	other := e.fx.User(domain.PlanPro, true).ID
	key := e.fx.Key(user, nil)
	ctx := context.Background()
	newDest := func(owner uuid.UUID, all bool) uuid.UUID {
		d, err := e.fx.St.CreateDestination(ctx, storage.NewDestination{UserID: owner, Kind: storage.DestinationWebhook,
			Config: []byte(`{"url":"https://h.example"}`), SealedSecret: []byte("sealed")})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.fx.St.SetAllAccounts(ctx, d.ID, all); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	all, explicit, foreign := newDest(user, true), newDest(user, false), newDest(other, true)
	count := func(q string, args ...any) int {
		var n int
		if err := e.fx.Pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	events := func(dest uuid.UUID) int {
		return count(`SELECT count(*) FROM destination_outbox WHERE destination_id = $1`, dest)
	}

	r := e.send(http.MethodPost, "/v2/accounts", key, `{"name":"Cash","type":"cash","currency":"USD"}`)
	e.expect(r, http.StatusCreated, "")
	id := r.json(t)["account"].(map[string]any)["id"].(string)
	if err := e.fx.St.LinkAccount(ctx, explicit, uuid.MustParse(id)); err != nil {
		t.Fatal(err)
	}
	e.expect(e.send(http.MethodPatch, "/v2/accounts/"+id, key, `{"name":"Cash 2"}`), http.StatusOK, "")
	e.expect(e.send(http.MethodPatch, "/v2/accounts/"+id, key, `{"currency":"nope"}`), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.send(http.MethodDelete, "/v2/accounts/"+id, key, ""), http.StatusOK, "")
	e.expect(e.send(http.MethodDelete, "/v2/accounts/"+id, key, ""), http.StatusOK, "")
	e.expect(e.send(http.MethodPatch, "/v2/accounts/"+id, key, `{"name":"Cash 3"}`), http.StatusBadRequest, "BAD_REQUEST")

	if got := []int{events(all), events(explicit), events(foreign)}; got[0] != 3 || got[1] != 2 || got[2] != 0 {
		t.Fatalf("events per destination (all, explicit, foreign) = %v, want [3 2 0]", got)
	}
	var types []string
	rows, err := e.fx.Pool.Query(ctx, `SELECT type FROM destination_outbox WHERE destination_id = $1 ORDER BY seq`, all)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		types = append(types, s)
	}
	if len(types) != 3 || types[0] != "account.created" || types[1] != "account.updated" || types[2] != "account.closed" {
		t.Errorf("types %v", types)
	}
	if n := count(`SELECT count(*) FROM river_job WHERE kind = 'deliver_destination'`); n != 2 {
		t.Errorf("%d delivery jobs, want one per destination (unique while queued)", n)
	}
	if n := count(`SELECT count(*) FROM destination_outbox WHERE payload->>'id' = $1 AND payload ? 'currentBalance'`, id); n != 5 {
		t.Errorf("%d events carry the version 2 account, want 5", n)
	}
}
