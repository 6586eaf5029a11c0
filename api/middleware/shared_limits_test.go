package middleware_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestSharedLimitsFallBackWhenDatabaseUnreachable: with PostgreSQL out of
// reach, a process still limits each key, in its own memory.
func TestSharedLimitsFallBackWhenDatabaseUnreachable(t *testing.T) {
	pool, url := storagetest.NewDB(t)
	u := storagetest.NewFixtures(t, pool).User(domain.PlanStandard, true)
	gone, err := storage.Open(context.Background(), url, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	l := middleware.NewSharedLimits(storage.New(gone), middleware.SharedConfig{}, nil)
	info := middleware.LimitInfo{Name: "general", Count: 3, Period: time.Minute}
	for i := 0; i < 3; i++ {
		if d := l.Allow(context.Background(), u.ID, info); !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("request %d: %+v", i, d)
		}
	}
	if d := l.Allow(context.Background(), u.ID, info); d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("fourth request: %+v", d)
	}
}

// TestSharedLimitsProcessesShareOneBudget: two processes' limits over one
// database allow the count once between them, and a single-token limit
// leaves nothing stranded.
func TestSharedLimitsProcessesShareOneBudget(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	u := storagetest.NewFixtures(t, pool).User(domain.PlanStandard, true)
	st := storage.New(pool)
	a := middleware.NewSharedLimits(st, middleware.SharedConfig{}, nil)
	b := middleware.NewSharedLimits(st, middleware.SharedConfig{}, nil)
	info := middleware.LimitInfo{Name: "create-rule", Count: 10, Period: time.Minute}
	allowed := 0
	for i := 0; i < 30; i++ {
		l := a
		if i%3 == 0 {
			l = b
		}
		if l.Allow(context.Background(), u.ID, info).Allowed {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("%d of 10 allowed", allowed)
	}
}

// BenchmarkSharedLimitsAllow is the read path's cost of a shared limit: a
// key whose lease is in hand (renewed in the background).
func BenchmarkSharedLimitsAllow(b *testing.B) {
	pool, _ := storagetest.NewDB(b)
	u := storagetest.NewFixtures(b, pool).User(domain.PlanPro, true)
	l := middleware.NewSharedLimits(storage.New(pool), middleware.SharedConfig{}, nil)
	info := middleware.LimitInfo{Name: "general", Count: 1_000_000_000, Period: time.Minute}
	ctx := context.Background()
	l.Allow(ctx, u.ID, info)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !l.Allow(ctx, u.ID, info).Allowed {
			b.Fatal("refused")
		}
	}
}

// BenchmarkLocalLimitsAllow is the same with the per-process limiter, for
// comparison.
func BenchmarkLocalLimitsAllow(b *testing.B) {
	pool, _ := storagetest.NewDB(b)
	u := storagetest.NewFixtures(b, pool).User(domain.PlanPro, true)
	l := middleware.NewLimiters()
	info := middleware.LimitInfo{Name: "general", Count: 1_000_000_000, Period: time.Minute}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !l.Allow(ctx, u.ID, info).Allowed {
			b.Fatal("refused")
		}
	}
}

// TestSharedLimitsStayBounded: budgets that hold no token and see no
// request are forgotten, so memory follows the active keys.
func TestSharedLimitsStayBounded(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	users := make([]uuid.UUID, 51)
	for i := range users {
		users[i] = fx.User(domain.PlanStandard, true).ID
	}
	l := middleware.NewSharedLimits(storage.New(pool), middleware.SharedConfig{ForgetAfter: time.Second}, nil)
	info := middleware.LimitInfo{Name: "create-rule", Count: 10, Period: time.Minute}
	ctx := context.Background()
	for _, u := range users[:50] {
		if !l.Allow(ctx, u, info).Allowed {
			t.Fatal("refused")
		}
	}
	if n := l.Len(); n != 50 {
		t.Fatalf("after 50 users: %d budgets", n)
	}
	time.Sleep(1200 * time.Millisecond)
	l.Allow(ctx, users[50], info) // triggers a sweep
	if n := l.Len(); n != 1 {
		t.Fatalf("after they went idle: %d budgets, want 1", n)
	}
}
