package ops_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/process"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// browserToken is the operator token of these tests: 32 random bytes in
// hex, as `finsync keys generate` makes.
const browserToken = "69d76aa0731ca7183a8f4faa6ec72e79c6d6fbefc949fb5d4f94c7f2f61f6212"

// chromium finds a Chromium binary: FINSYNC_CHROMIUM, else the usual names
// on PATH.
func chromium() string {
	if p := os.Getenv("FINSYNC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// console is the API with the ops console over a fresh database, a real
// River worker syncing from the simulator, and a user with connections.
type console struct {
	t      *testing.T
	url    string
	sim    *sim.Simulator
	st     *storage.Store
	client *river.Client[pgx.Tx]
	conns  map[string]uuid.UUID
}

func newConsole(t *testing.T) *console {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := allsim.New(sim.Options{Seed: 5, HistoryTransactions: 60})
	simSrv := httptest.NewServer(s)
	t.Cleanup(simSrv.Close)
	box, err := secrets.FromHex(strings.Repeat("3c", 32))
	if err != nil {
		t.Fatal(err)
	}
	provs, err := worker.NewProviders(all.NewRegistry(), worker.ProviderOptions{Unlimited: true, Rates: st, Quotas: st})
	if err != nil {
		t.Fatal(err)
	}
	syncer := &worker.Syncer{Store: st, Providers: provs, Box: box, Log: log, Holder: uuid.New()}
	client, err := worker.NewClient(worker.Config{Store: st, Log: log, Syncer: syncer})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		defer stop()
		_ = client.StopAndCancel(stopCtx)
	})
	linker := &linking.Linker{Store: st, Registry: all.NewRegistry(), Box: box, Jobs: client}
	var names []string
	for _, d := range all.NewRegistry().Descriptions() {
		names = append(names, d.Name)
	}
	c, err := ops.New(ctx, ops.Config{Token: browserToken, Store: st, Jobs: client, Log: log, Providers: names, Reauth: process.OpsReauth(linker)})
	if err != nil {
		t.Fatal(err)
	}
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: st, Log: log,
		CursorKey: []byte("test cursor key, 32 bytes long!!"), Auth: middleware.DefaultAuthConfig(), Jobs: client, Ops: c})
	go a.Run(ctx)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)

	e := &console{t: t, url: srv.URL, sim: s, st: st, client: client, conns: map[string]uuid.UUID{}}
	u, err := st.CreateUser(ctx, uuid.NewString()+"@example.com", domain.PlanPro, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"plaid", "gocardless", "mercury"} {
		sealed, err := box.Seal(allsim.Credentials(p, "browser-"+p))
		if err != nil {
			t.Fatal(err)
		}
		bc, err := st.CreateConnection(ctx, storage.NewConnection{UserID: u.ID, Provider: p, BaseURL: allsim.BaseURL(p, simSrv.URL), SealedCredentials: sealed})
		if err != nil {
			t.Fatal(err)
		}
		e.conns[p] = bc.ID
		e.syncAndWait(bc.ID)
	}
	return e
}

// syncAndWait runs a sync of the connection through the worker.
func (e *console) syncAndWait(id uuid.UUID) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := e.client.Insert(ctx, jobargs.SyncConnection{ConnectionID: id}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for {
		job, err := e.client.JobGet(ctx, res.Job.ID)
		if err != nil {
			e.t.Fatal(err)
		}
		if job.State == "completed" {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("first sync of %s: job %s", id, job.State)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitText polls the page's visible text until it contains every want
// (ignoring case).
func waitText(want ...string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for {
			// River's UI folds older attempts behind "Show all N attempts".
			text, err := chromedp.Evaluate[string](`(() => {
				for (const b of document.querySelectorAll("button")) {
					if (b.innerText.startsWith("Show all")) b.click();
				}
				return document.body ? document.body.innerText : "";
			})()`)(ctx, t)
			if err != nil && !navigating(err) {
				return err
			}
			missing := ""
			for _, w := range want {
				if !strings.Contains(strings.ToLower(text), strings.ToLower(w)) {
					missing = w
					break
				}
			}
			if missing == "" {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("page never showed %q; it shows:\n%s", missing, text)
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
}

// navigating reports whether err is the browser saying the page being
// read is being replaced (a click's navigation under way): the read is
// tried again on the new page.
func navigating(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Cannot find context with specified id")
}

// TestOpsConsoleInBrowser drives headless Chromium through /ops and
// /ops/jobs: sign in, the synced connections, Sync now and its job
// finishing in River's UI, then a provider outage and the failed job's
// error on both pages — all under the console's Content-Security-Policy,
// which no page may break.
func TestOpsConsoleInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium binary found: install it (Debian: apt-get install -y chromium) or set FINSYNC_CHROMIUM to one; skipping the ops console's browser test")
	}
	e := newConsole(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.WindowSize(1500, 700))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// The first run starts the browser, with no timeout (it would stop it).
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium (%s): %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()
	// Whatever the pages try that their Content-Security-Policy blocks,
	// the browser reports on the console; River's UI must need none of it.
	var cspMu sync.Mutex
	var violations []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if strings.Contains(m.Text, "Content Security Policy") {
				cspMu.Lock()
				violations = append(violations, m.Text)
				cspMu.Unlock()
			}
		}
	}()
	defer func() {
		cspMu.Lock()
		defer cspMu.Unlock()
		if len(violations) > 0 {
			t.Errorf("the pages broke their Content-Security-Policy:\n%s", strings.Join(violations, "\n"))
		}
	}()
	do := func(step string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	jobLink := func() string {
		t.Helper()
		a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#notice a"), "href"))
		if err != nil || !strings.HasPrefix(a.Value, "/ops/jobs/jobs/") {
			t.Fatalf("the notice links to %q (%v), want a job of River's UI", a.Value, err)
		}
		return a.Value
	}
	plaid := e.conns["plaid"].String()
	row := `tr[data-connection="` + plaid + `"]`
	token := chromedp.ID("token")

	// Signed out, /ops is the sign-in form; a wrong token is refused.
	do("open /ops", chromedp.Navigate(e.url+"/ops"), chromedp.WaitVisible(token))
	do("wrong token", chromedp.SendKeys(token, "not-the-token"), chromedp.Submit(token),
		waitText("That is not the operator token."))
	do("sign in", chromedp.WaitVisible(token), chromedp.SendKeys(token, browserToken),
		chromedp.Submit(token), chromedp.WaitVisible(chromedp.ID("connections")))

	// The synced connections, healthy, with their transactions.
	want := []string{"Sync now"}
	for p, id := range e.conns {
		want = append(want, p, id.String()[:8])
	}
	do("connections listed", waitText(want...))
	status, breaker, txs := text(row+" td.status"), text(row+" td.breaker"), text(row+" td.transactions")
	quota := text(`tr[data-connection="` + e.conns["gocardless"].String() + `"] td.quota`)
	if status != "active" || breaker != "closed" || txs == "0" || quota != "3" {
		t.Fatalf("row after the first sync: status %q, breaker %q, transactions %q, quota left %q", status, breaker, txs, quota)
	}
	screenshot(ctx, t, "FINSYNC_OPS_SCREENSHOT", "/ops")

	// The filters: mercury's connections only, then all again.
	mercury := `tr[data-connection="` + e.conns["mercury"].String() + `"]`
	do("filter by provider", chromedp.SetValue(chromedp.CSS(`#filters select[name="provider"]`), "mercury"),
		chromedp.Submit(chromedp.CSS(`#filters select[name="provider"]`)), waitText("Clear"), chromedp.WaitVisible(chromedp.CSS(mercury)))
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#connections tbody tr[data-connection]").length`))
	if err != nil || shown != 1 {
		t.Fatalf("filtered by provider mercury, the list shows %d connections (%v), want 1", shown, err)
	}
	do("clear the filters", chromedp.Click(chromedp.CSS(`#filters a`)), chromedp.WaitVisible(chromedp.CSS(row)))

	// Sync now: the notice links to the job, which River's UI shows completed.
	do("sync now", chromedp.Click(chromedp.CSS(row+` button[value="sync"]`)), chromedp.WaitVisible(chromedp.CSS("#notice a")))
	jobLink()
	do("job completes", chromedp.Click(chromedp.CSS("#notice a")), waitText("sync_connection", "completed"))

	// A provider outage: the next sync fails; River's UI shows the job's
	// error and /ops the connection's.
	if err := e.sim.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	do("sync during the outage", chromedp.Navigate(e.url+"/ops"), chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row+` button[value="sync"]`)), chromedp.WaitVisible(chromedp.CSS("#notice a")))
	jobLink()
	do("failed job's error", chromedp.Click(chromedp.CSS("#notice a")), waitText("sync_connection", "sync connection "+plaid))
	// The connection's error as recorded, shown by /ops. A retry of the
	// failed job may replace it (CIRCUIT_OPEN once the breaker opens), so
	// the page is compared with the record of the same moment until both
	// settle.
	recorded := func() string {
		conn, err := e.st.GetConnectionAnyUser(context.Background(), e.conns["plaid"])
		if err != nil {
			t.Fatal(err)
		}
		if conn.LastProviderErrorCode == nil {
			return ""
		}
		return *conn.LastProviderErrorCode
	}
	var rowStatus, msg, code string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if code = recorded(); code == "" {
			continue
		}
		do("connection's error on /ops", chromedp.Navigate(e.url+"/ops"), chromedp.WaitVisible(chromedp.CSS(row)))
		rowStatus, msg = text(row+" td.status"), text(row+" td.error-cell")
		if strings.Contains(msg, code) && recorded() == code {
			break
		}
	}
	if code == "" {
		t.Fatal("no provider error recorded on the connection during the outage")
	}
	if !strings.Contains(rowStatus, "error") || !strings.Contains(msg, code) {
		t.Fatalf("row during the outage: status %q, error %q, recorded %q", rowStatus, msg, code)
	}

	// The connection's page, from its row's link: its health, its syncs
	// (the first, Sync now's, and the outage's failures, newest first)
	// and their chart, drawn as SVG with one point per sync.
	do("open the connection's page", chromedp.Navigate(e.url+"/ops"), chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row+" a.history-link")), chromedp.WaitVisible(chromedp.ID("history-chart")),
		waitText("Last successful sync", "Consent ends", "Held back", "Syncs over time"))
	syncs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#history tr.sync td.outcome")].map(td => td.innerText.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	if len(syncs) < 3 || syncs[0] == "ok" || syncs[len(syncs)-1] != "ok" || syncs[len(syncs)-2] != "ok" {
		t.Fatalf("the history table's outcomes, newest first: %v; want the outage's failures above two successes", syncs)
	}
	svg, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
		const svg = document.getElementById("history-chart"), box = svg.getBoundingClientRect();
		return {title: svg.querySelector("title").textContent, label: svg.getAttribute("aria-labelledby"),
			points: svg.querySelectorAll("circle").length, failed: svg.querySelectorAll("circle[fill='#c62828']").length,
			line: svg.querySelector("polyline").getAttribute("points").trim().split(/\s+/).length,
			bars: svg.querySelectorAll("rect").length, width: box.width, height: box.height};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	n := float64(len(syncs))
	if svg["title"] != fmt.Sprintf("Duration and rows stored of the last %d syncs", len(syncs)) || svg["label"] != "chart-title chart-desc" ||
		svg["points"] != n || svg["line"] != n || svg["bars"] != n || svg["failed"] != n-2 || svg["width"].(float64) < 300 || svg["height"].(float64) < 80 {
		t.Fatalf("the chart of %d syncs: %v", len(syncs), svg)
	}
	// A retry of the failed job may have replaced the error since the list
	// was read (CIRCUIT_OPEN once the breaker opens): the page shows the
	// error recorded when it was drawn, or the one recorded just after.
	before := recorded()
	do("reload the connection's page", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("history-chart")))
	status = text("#health dd.status")
	shownErr := text("#health dd.error-cell")
	if !strings.Contains(status, "error") || (!strings.Contains(shownErr, before) && !strings.Contains(shownErr, recorded())) {
		t.Fatalf("the page's health: status %q, error %q; recorded %q, then %q", status, shownErr, before, recorded())
	}

	// The re-auth form: a wrong object is refused on the page, the
	// credentials not shown again.
	creds := chromedp.ID("credentials")
	do("refused re-auth", chromedp.SendKeys(creds, `{"api_key":"sk_live_SHOWN_NOWHERE"}`), chromedp.Submit(creds),
		chromedp.WaitVisible(chromedp.ID("reauth-error")), waitText(`unknown key "api_key"`))
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil || strings.Contains(page, "SHOWN_NOWHERE") {
		t.Fatalf("the refused re-auth's page shows the credentials (%v)", err)
	}
	screenshot(ctx, t, "FINSYNC_OPS_HISTORY_SCREENSHOT", "a connection's page")
}

// screenshot saves a full-page screenshot of what the browser shows to the
// path in the environment variable env (from the module root when
// relative), when it is set; what names the page in the log.
func screenshot(ctx context.Context, t *testing.T, env, what string) {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(moduleRoot(t), path)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s saved to %s", what, path)
}

// moduleRoot is the folder holding go.mod, found upward from the test's
// working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}
