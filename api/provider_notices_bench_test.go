package api_test

import (
	"context"
	"encoding/json"
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
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// noticeRounds is how many notifications BenchmarkNotificationToVisible
// times (whatever b.N is: run it with -benchtime=1x).
const noticeRounds = 50

// BenchmarkNotificationToVisible times, through the real router, River
// worker, simulator and PostgreSQL, how long after the Plaid simulator's
// clock advances (and it sends SYNC_UPDATES_AVAILABLE for the Item) the
// new day's transactions are listed by GET /v2/transactions, over
// noticeRounds days one after another; it reports the p50, p95 and
// maximum. Each round includes the sync's wait for more notifications
// (worker.NoticeQuiet).
func BenchmarkNotificationToVisible(b *testing.B) {
	ctx := context.Background()
	pool, _ := storagetest.NewDB(b)
	st := storage.New(pool)
	box, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		b.Fatal(err)
	}
	sm := allsim.New(sim.Options{Seed: 11, Start: time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)})
	simSrv := httptest.NewServer(sm)
	defer simSrv.Close()
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: log}
	client := startWorkerClient(b, worker.Config{Store: st, Log: log, Syncer: syncer})
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: st, Log: log,
		CursorKey: []byte("test cursor key, 32 bytes long!!"), Auth: middleware.DefaultAuthConfig(), Jobs: client,
		Notices: &worker.NoticeReceiver{Syncer: syncer, Jobs: client}})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go a.Run(runCtx)
	srv := httptest.NewServer(a.Handler)
	defer srv.Close()

	fx := storagetest.NewFixtures(b, pool)
	user := fx.User(domain.PlanPro, true)
	key := fx.Key(user.ID, nil)
	creds := allsim.Credentials("plaid", "notice-bench")
	var c map[string]string
	_ = json.Unmarshal(creds, &c)
	if err := sm.SetConnection(sim.ConnectionSettings{Provider: "plaid", Credential: c["access_token"], Transactions: 9000, HistoryDays: 90}); err != nil {
		b.Fatal(err)
	}
	sealed, err := box.Seal(creds)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := st.CreateConnection(ctx, storage.NewConnection{UserID: user.ID, Provider: "plaid",
		BaseURL: allsim.BaseURL("plaid", simSrv.URL), SealedCredentials: sealed})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := client.Insert(ctx, jobargs.SyncConnection{ConnectionID: conn.ID}, nil); err != nil {
		b.Fatal(err)
	}
	listed := func(day string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/transactions?limit=1&startDate="+day+"&endDate="+day, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct {
			Transactions []json.RawMessage `json:"transactions"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			b.Fatal(err)
		}
		return len(page.Transactions)
	}
	waitFor(b, time.Minute, "the first sync", func() bool { return listed(sm.State().Today) > 0 })
	if err := sm.SetWebhookURL("plaid", srv.URL+"/providers/plaid/webhooks"); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	took := make([]time.Duration, 0, noticeRounds)
	for range noticeRounds {
		time.Sleep(worker.NoticeQuiet) // the previous round's sync has ended
		start := time.Now()
		if err := sm.Advance(1); err != nil {
			b.Fatal(err)
		}
		day := sm.State().Today
		waitFor(b, time.Minute, "the day "+day+" listed", func() bool { return listed(day) > 0 })
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	q := func(p float64) float64 { return took[int(p*float64(len(took)-1))].Seconds() }
	b.ReportMetric(q(0.5), "p50-s")
	b.ReportMetric(q(0.95), "p95-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
}
