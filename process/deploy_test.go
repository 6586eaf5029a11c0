package process

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// recordingRegisterer registers on a real registry and records the name of
// every metric a registered collector describes, so that metrics with no
// series yet (a vector before its first event) are known too.
type recordingRegisterer struct {
	*prometheus.Registry
	described map[string]bool
}

// fqName reads a metric's name from its description.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.described[m[1]] = true
		}
	}
	return r.Registry.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// processMetrics builds the registries of `finsync serve` and `finsync
// worker` (and of `finsync dev`, which runs both on one) as those commands
// do, serves one API request so that the API's histogram has a series, and
// returns every name a query may use: each metric's name and, for
// histograms and summaries, their _bucket, _sum and _count series.
func processMetrics(t *testing.T) map[string]bool {
	t.Helper()
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0a", 32))
	t.Setenv("FINSYNC_CURSOR_KEY", strings.Repeat("0b", 32))
	pool, _ := storagetest.NewDB(t)
	st := storage.New(pool)
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	box, err := cfg.RequireKeys()
	if err != nil {
		t.Fatal(err)
	}
	e := Env{Config: cfg, Registry: all.NewRegistry(), Log: slog.New(slog.DiscardHandler)}
	names := map[string]bool{}
	gather := func(process string, r *recordingRegisterer) {
		fams, err := r.Gather()
		if err != nil {
			t.Fatalf("%s: gather: %v", process, err)
		}
		for n := range r.described {
			names[n] = true
		}
		for _, f := range fams {
			names[f.GetName()] = true
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
				names[f.GetName()+"_sum"], names[f.GetName()+"_count"] = true, true
				if f.GetType() == dto.MetricType_HISTOGRAM {
					names[f.GetName()+"_bucket"] = true
				}
			}
		}
	}
	newReg := func() *recordingRegisterer {
		return &recordingRegisterer{Registry: prometheus.NewRegistry(), described: map[string]bool{}}
	}

	serve := newReg()
	BaseMetrics(serve, st)
	srv, err := e.NewAPI(context.Background(), st, serve)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler)
	resp, err := http.Get(hs.URL + "/v2/health")
	hs.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	gather("serve", serve)

	work := newReg()
	BaseMetrics(work, st)
	if _, err := e.NewWorkerClient(st, box, WorkerOptions{}, work); err != nil {
		t.Fatal(err)
	}
	gather("worker", work)

	// dev: both on one registry, with no name registered twice.
	dev := newReg()
	BaseMetrics(dev, st)
	if _, err := e.NewWorkerClient(st, box, WorkerOptions{}, dev); err != nil {
		t.Fatal(err)
	}
	if _, err := e.NewAPI(context.Background(), st, dev); err != nil {
		t.Fatal(err)
	}
	gather("dev", dev)
	return names
}

// TestProcessesRegisterTheIssuesMetrics checks the names the operations
// issue fixed against the processes' real registries.
func TestProcessesRegisterTheIssuesMetrics(t *testing.T) {
	names := processMetrics(t)
	for _, n := range []string{
		"finsync_provider_request_duration_seconds_bucket", "finsync_sync_duration_seconds_bucket",
		"finsync_sync_rows_total", "finsync_last_successful_sync_timestamp_seconds", "finsync_provider_breaker_state",
		"finsync_river_jobs", "finsync_destination_delivery_lag_seconds", "finsync_http_request_duration_seconds_count",
	} {
		if !names[n] {
			t.Errorf("no process registers %s", n)
		}
	}
	if names["finsync_jobs"] {
		t.Error("finsync_jobs is still registered; finsync_river_jobs replaces it")
	}
}

// grafanaVars are the dashboard's variables, replaced by values PromQL
// accepts before parsing.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$provider", ".*")

// TestDashboardAndAlertsUseRegisteredMetrics parses every query of the
// Grafana dashboard and every expression of the Prometheus rules with
// Prometheus's own parsers and checks that each metric they select is one
// that serve or worker registers.
func TestDashboardAndAlertsUseRegisteredMetrics(t *testing.T) {
	names := processMetrics(t)
	p := parser.NewParser(parser.Options{})
	check := func(where, expr string) {
		t.Helper()
		e, err := p.ParseExpr(grafanaVars.Replace(expr))
		if err != nil {
			t.Errorf("%s: %q: %v", where, expr, err)
			return
		}
		selected := 0
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			selected++
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					name = m.Value
				}
			}
			if !names[name] {
				t.Errorf("%s: %q selects %s, which no finsync process registers", where, expr, name)
			}
			return nil
		})
		if selected == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
	}

	rules, errs := rulefmt.ParseFile("../deploy/prometheus/alerts.yml", false, model.UTF8Validation, p, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("alert rules: %v", errs)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			check("alert "+r.Alert, r.Expr)
		}
	}
	sort.Strings(alerts)
	for _, want := range []string{"FinsyncAPI5xx", "FinsyncNoSuccessfulSync", "FinsyncProviderBreakerOpen", "FinsyncQueueBacklog", "FinsyncSyncFailureRatioHigh"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s in %v", want, alerts)
		}
	}

	b, err := os.ReadFile("../deploy/grafana/finsync.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	queries := 0
	for _, panel := range dash.Panels {
		for _, target := range panel.Targets {
			queries++
			check("panel "+panel.Title, target.Expr)
		}
	}
	if queries < 10 {
		t.Fatalf("%d dashboard queries found", queries)
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)
	for _, v := range dash.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			check("variable "+v.Name, m[1])
		}
	}
}
