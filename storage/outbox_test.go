package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestDrainDoneSeesEveryCommittedChange checks the handshake between an
// account change and a drain finishing: whichever locks the destination
// first, the change's event is either seen by the drain or committed after
// the drain finished (so its own delivery job is enqueued).
func TestDrainDoneSeesEveryCommittedChange(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user := fx.User(domain.PlanPro, true).ID
	acct, err := fx.St.CreateManualAccount(ctx, user, uuid.Nil, storage.ManualAccount{Name: "Cash", Type: "cash", Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := fx.St.CreateDestination(ctx, storage.NewDestination{UserID: user, Kind: storage.DestinationWebhook, SealedSecret: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.St.LinkAccount(ctx, d.ID, acct.ID); err != nil {
		t.Fatal(err)
	}
	enqueue := func(tx pgx.Tx) {
		t.Helper()
		ids, err := storage.EnqueueAccountEvent(ctx, tx, storage.AccountEvent{ID: uuid.New(), AccountID: acct.ID,
			Type: storage.EventAccountUpdated, Account: json.RawMessage(`{}`), OccurredAt: time.Now()})
		if err != nil || len(ids) != 1 || ids[0] != d.ID {
			t.Fatalf("enqueue = %v, %v", ids, err)
		}
	}
	drainDone := func() (chan bool, pgx.Tx) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := make(chan bool, 1)
		go func() {
			done, err := storage.DrainDone(ctx, tx, d.ID)
			if err != nil {
				t.Error(err)
			}
			out <- done
		}()
		return out, tx
	}

	// The change holds its lock first: the drain waits, then sees it.
	writer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	enqueue(writer)
	result, drainTx := drainDone()
	select {
	case <-result:
		t.Fatal("the drain decided while a change was uncommitted")
	case <-time.After(200 * time.Millisecond):
	}
	if err := writer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if done := <-result; done {
		t.Fatal("the drain finished without the committed change")
	}
	_ = drainTx.Rollback(ctx)

	// Deliver it; now the drain locks first and the change waits.
	pending, err := fx.St.ListDestinationPendingEvents(ctx, d.ID, 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending %v %v", pending, err)
	}
	if err := fx.St.MarkDestinationDelivered(ctx, d.ID, pending[0].ID); err != nil {
		t.Fatal(err)
	}
	result, drainTx = drainDone()
	if done := <-result; !done {
		t.Fatal("empty outbox not done")
	}
	writer, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	committed := make(chan struct{})
	go func() {
		enqueue(writer)
		_ = writer.Commit(ctx)
		close(committed)
	}()
	select {
	case <-committed:
		t.Fatal("a change committed while the drain was finishing")
	case <-time.After(200 * time.Millisecond):
	}
	if err := drainTx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-committed
	if pending, _ := fx.St.ListDestinationPendingEvents(ctx, d.ID, 10); len(pending) != 1 {
		t.Fatalf("pending after the drain finished: %v", pending)
	}
}

func TestUnlinkAndFollowAll(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	ctx := context.Background()
	user, other := fx.User(domain.PlanPro, true).ID, fx.User(domain.PlanPro, true).ID
	acct, err := fx.St.CreateManualAccount(ctx, user, uuid.Nil, storage.ManualAccount{Name: "Cash", Type: "cash", Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	synced := fx.Account(user, fx.Connection(user, "plaid", "active"), "plaid", "Checking")
	d, err := fx.St.CreateDestination(ctx, storage.NewDestination{UserID: user, Kind: storage.DestinationAirtable, SealedSecret: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := fx.St.CreateDestination(ctx, storage.NewDestination{UserID: other, Kind: storage.DestinationAirtable, SealedSecret: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  error
		got  error
	}{
		{"link another user's destination", storage.ErrNotFound, fx.St.LinkAccount(ctx, foreign.ID, acct.ID)},
		{"link a bank-synced account", storage.ErrNotManual, fx.St.LinkAccount(ctx, d.ID, synced)},
		{"unlink an unlinked account", storage.ErrNotFound, fx.St.UnlinkAccount(ctx, d.ID, acct.ID)},
		{"follow all of an unknown destination", storage.ErrNotFound, fx.St.SetAllAccounts(ctx, uuid.New(), true)},
	}
	for _, tt := range tests {
		if !errors.Is(tt.got, tt.err) {
			t.Errorf("%s: %v, want %v", tt.name, tt.got, tt.err)
		}
	}
	if err := fx.St.SetAllAccounts(ctx, d.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := fx.St.UnlinkAccount(ctx, d.ID, acct.ID); !errors.Is(err, storage.ErrFollowsAll) {
		t.Errorf("unlink from a follow-all destination: %v", err)
	}
	list, err := fx.St.ListDestinations(ctx, user)
	if err != nil || len(list) != 1 || !list[0].AllAccounts || len(list[0].AccountIDs) != 0 {
		t.Fatalf("list %+v %v", list, err)
	}
}
