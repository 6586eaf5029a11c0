package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// replicaStore starts a private primary, migrates it, makes a streaming
// standby and returns a store routing reads to it once it is usable.
func replicaStore(ctx context.Context, tb testing.TB) (*storage.Store, *storagetest.Fixtures) {
	primary := pgcluster.Start(ctx, tb)
	pool, err := storage.Open(ctx, primary.URL("postgres"), storage.Options{MaxConns: 8})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	if err := storage.New(pool).Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	standby := primary.Replica(ctx, tb)
	rpool, err := storage.Open(ctx, standby.URL("postgres"), storage.Options{MaxConns: 8})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rpool.Close)
	rep := storage.NewReplica(pool, rpool, storage.ReplicaOptions{})
	runCtx, stop := context.WithCancel(ctx)
	tb.Cleanup(stop)
	go rep.Run(runCtx)
	deadline := time.Now().Add(time.Minute)
	for !rep.Status().Usable {
		if time.Now().After(deadline) {
			tb.Fatal("replica never became usable")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return storage.NewWithReplica(pool, rep), storagetest.NewFixtures(tb, pool)
}

// BenchmarkRouteRead measures what routing one read costs: the primary
// look-up of the user's last write position (docs/replicas.md).
func BenchmarkRouteRead(b *testing.B) {
	ctx := context.Background()
	st, fx := replicaStore(ctx, b)
	user := fx.User(domain.PlanPro, true)
	if err := st.RecordWrite(ctx, user.ID); err != nil {
		b.Fatal(err)
	}
	for ; ; time.Sleep(50 * time.Millisecond) {
		if rctx := st.RouteRead(ctx, user.ID); rctx != ctx {
			break
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if rctx := st.RouteRead(ctx, user.ID); rctx == ctx {
			b.Fatal("read not routed to the caught-up replica")
		}
	}
}

// BenchmarkRecordWrite measures what recording a write position adds to
// each successful API write.
func BenchmarkRecordWrite(b *testing.B) {
	ctx := context.Background()
	st, fx := replicaStore(ctx, b)
	users := []uuid.UUID{fx.User(domain.PlanPro, true).ID, fx.User(domain.PlanPro, true).ID}
	i := 0
	for b.Loop() {
		if err := st.RecordWrite(ctx, users[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
