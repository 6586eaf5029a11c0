package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// BenchmarkIdempotencyOverhead measures POST /v2/accounts over the real
// router, HTTP and PostgreSQL, each iteration sending in turn one request
// without Idempotency-Key, one with a fresh key (claim, handler, store) and
// a retry of the latter (replay), so that load on a shared machine weighs
// on all three alike. It reports the p50 and p99 latency of each and the
// p50 overhead of a fresh key.
func BenchmarkIdempotencyOverhead(b *testing.B) {
	pool, _ := storagetest.NewDB(b)
	a := api.MustNew(api.Config{
		Providers: all.NewRegistry().Profiles(),
		Store:     storage.New(pool),
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
		Plans:     v2.PlanLimits{domain.PlanPro: 1 << 30},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()
	fx := storagetest.NewFixtures(b, pool)
	key := fx.Key(fx.User(domain.PlanPro, true).ID, nil)
	client := srv.Client()

	post := func(body, idemKey string) time.Duration {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v2/accounts", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if idemKey != "" {
			req.Header.Set("Idempotency-Key", idemKey)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if err != nil || resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return took
	}
	body := func(i int, kind string) string {
		return fmt.Sprintf(`{"name":"Bench %s %d","type":"cash","currency":"EUR","currentBalance":10}`, kind, i)
	}
	// Warm the credential cache, the pool and the plans.
	for i := range 20 {
		post(body(-i, "warm"), "")
		post(body(-i, "warm-key"), fmt.Sprintf("warm-%d", i))
	}
	var without, with, replay []time.Duration
	b.ResetTimer()
	for i := range b.N {
		without = append(without, post(body(i, "plain"), ""))
		k := fmt.Sprintf("bench-%d", i)
		with = append(with, post(body(i, "keyed"), k))
		replay = append(replay, post(body(i, "keyed"), k))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(ds []time.Duration, p float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))]
	}
	b.ReportMetric(ms(pct(without, 0.5)), "p50-without-ms")
	b.ReportMetric(ms(pct(with, 0.5)), "p50-with-ms")
	b.ReportMetric(ms(pct(replay, 0.5)), "p50-replay-ms")
	b.ReportMetric(ms(pct(without, 0.99)), "p99-without-ms")
	b.ReportMetric(ms(pct(with, 0.99)), "p99-with-ms")
	b.ReportMetric(ms(pct(with, 0.5)-pct(without, 0.5)), "p50-overhead-ms")
}
