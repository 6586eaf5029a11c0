package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/storage"
)

// Metrics are the worker's Prometheus metrics of its own events: provider
// calls, syncs and destination deliveries (docs/metrics.md). The methods of
// a nil *Metrics do nothing, so a Syncer or worker built without metrics
// (tests, one-off commands) needs no registry. It is safe for concurrent
// use.
type Metrics struct {
	providerCalls *prometheus.HistogramVec
	syncDuration  *prometheus.HistogramVec
	syncRows      *prometheus.CounterVec
	deliveryLag   *prometheus.GaugeVec
	webhookSends  *prometheus.CounterVec
	webhookLag    *prometheus.HistogramVec
}

// Outcomes of a consumer webhook delivery attempt
// (finsync_webhook_attempts_total).
const (
	webhookDelivered = "delivered"
	webhookRetry     = "retry"
	webhookGivenUp   = "given_up"
)

// Outcome label values besides the failure classes' names.
const (
	// OutcomeOK labels a call or sync that succeeded.
	OutcomeOK = "ok"
)

// NewMetrics registers the worker's metrics on reg. The series of every
// provider in providerNames start at zero (outcome ok for the histograms,
// every change for the row counter), so rates and ratios exist before the
// first event. The last-success gauge is LastSyncCollector's, read from
// the database.
func NewMetrics(reg prometheus.Registerer, providerNames []string) *Metrics {
	m := &Metrics{
		providerCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "finsync_provider_request_duration_seconds",
			Help: "Duration of each call an adapter makes to its provider (each attempt the resilience guard lets through), by operation and outcome (ok or the failure class).",
			// Provider APIs answer in tens of milliseconds to tens of seconds.
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"provider", "operation", "outcome"}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "finsync_sync_duration_seconds",
			Help: "Duration of whole syncs of a connection, across the slices of its job, by outcome (ok or the failure class).",
			// From a quick re-sync to a first sync of a million rows.
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
		}, []string{"provider", "outcome"}),
		syncRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "finsync_sync_rows_total",
			Help: "Transaction rows syncs stored: added, modified (stored values changed) or removed (marked deleted).",
		}, []string{"provider", "change"}),
		deliveryLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "finsync_destination_delivery_lag_seconds",
			Help: "Time from an account change to its delivery to a destination, for the last event delivered, by destination kind.",
		}, []string{"kind"}),
		webhookSends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "finsync_webhook_attempts_total",
			Help: "Consumer webhook delivery attempts, by event type and outcome: delivered (acknowledged with a 2xx), retry (failed, tried again later) or given_up (failed for good: past the retry period, or an address refused).",
		}, []string{"type", "outcome"}),
		webhookLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "finsync_webhook_delivery_lag_seconds",
			Help: "Time from a consumer webhook event's creation to its acknowledged delivery, by event type.",
			// From an immediate delivery to one that waited out a day of retries.
			Buckets: []float64{.1, .5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}, []string{"type"}),
	}
	reg.MustRegister(m.providerCalls, m.syncDuration, m.syncRows, m.deliveryLag, m.webhookSends, m.webhookLag)
	for _, p := range providerNames {
		for _, op := range providers.Operations() {
			m.providerCalls.WithLabelValues(p, op, OutcomeOK)
		}
		m.syncDuration.WithLabelValues(p, OutcomeOK)
		for _, c := range []string{"added", "modified", "removed"} {
			m.syncRows.WithLabelValues(p, c)
		}
	}
	return m
}

// outcome is the outcome label of err: ok, or its failure class.
func outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	return resilience.ClassOf(err).String()
}

// ObserveProviderCall records one call to a provider; it is a
// providers.CallObserver.
func (m *Metrics) ObserveProviderCall(provider, operation string, took time.Duration, err error) {
	if m == nil {
		return
	}
	m.providerCalls.WithLabelValues(provider, operation, outcome(err)).Observe(took.Seconds())
}

// observeSync records a whole sync.
func (m *Metrics) observeSync(provider, outcome string, took time.Duration, changes storage.RowChanges) {
	if m == nil {
		return
	}
	m.syncDuration.WithLabelValues(provider, outcome).Observe(took.Seconds())
	m.syncRows.WithLabelValues(provider, "added").Add(float64(changes.Added))
	m.syncRows.WithLabelValues(provider, "modified").Add(float64(changes.Modified))
	m.syncRows.WithLabelValues(provider, "removed").Add(float64(changes.Removed))
}

// observeDelivery records the lag of an event just delivered to a
// destination of the kind.
func (m *Metrics) observeDelivery(kind string, lag time.Duration) {
	if m == nil {
		return
	}
	m.deliveryLag.WithLabelValues(kind).Set(lag.Seconds())
}

// observeWebhook records one attempt to deliver a consumer webhook event
// of the type; lag is how long after its creation it was delivered (for
// outcome delivered).
func (m *Metrics) observeWebhook(eventType, outcome string, lag time.Duration) {
	if m == nil {
		return
	}
	m.webhookSends.WithLabelValues(eventType, outcome).Inc()
	if outcome == webhookDelivered {
		m.webhookLag.WithLabelValues(eventType).Observe(lag.Seconds())
	}
}

// BreakerCollector exports finsync_provider_breaker_state: the state of
// each provider's provider-wide circuit breaker (0 closed, 1 half-open, 2
// open), read from the adapters at each scrape. Caveat: per-institution
// breakers are left out (one series per provider keeps the cardinality
// bounded); an institution's outage shows in the provider call outcomes.
type BreakerCollector struct {
	provs map[string]providers.Provider
	desc  *prometheus.Desc
}

// NewBreakerCollector returns a collector over the adapters NewProviders
// built (adapters that are not *providers.Resilient are skipped).
func NewBreakerCollector(provs map[string]providers.Provider) *BreakerCollector {
	return &BreakerCollector{provs: provs, desc: prometheus.NewDesc("finsync_provider_breaker_state",
		"State of the provider-wide circuit breaker: 0 closed, 1 half-open, 2 open.", []string{"provider"}, nil)}
}

// Describe implements prometheus.Collector.
func (b *BreakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

// Collect implements prometheus.Collector.
func (b *BreakerCollector) Collect(ch chan<- prometheus.Metric) {
	for name, p := range b.provs {
		r, ok := p.(*providers.Resilient)
		if !ok {
			continue
		}
		states := r.States()
		if len(states) == 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, breakerValue(states[0].State), name)
	}
}

// breakerValue maps a breaker state to the gauge's value.
func breakerValue(state string) float64 {
	switch state {
	case "open":
		return 2
	case "half-open":
		return 1
	}
	return 0
}

// JobCountCap bounds each count of JobCollector: a value of JobCountCap
// means "JobCountCap or more".
const JobCountCap = 1000

// JobCountTTL is how long JobCollector serves its last counts before
// counting again.
const JobCountTTL = 5 * time.Second

// JobCollector exports finsync_river_jobs: River jobs by state and kind,
// one sample for every state of every job kind it is given (zeros
// included).
//
// It is cheap whatever the size of river_job: each count stops at
// JobCountCap, read from the index on (state, kind) (migration 00013), so
// one count touches at most JobCountCap index entries and a scrape at most
// River's states × kinds × JobCountCap (32,000 with finsync's 4 kinds), never the
// whole table; and counts are cached for JobCountTTL, so scrapes by several
// Prometheus servers, or a tight scrape interval, query once. A backlog
// above JobCountCap reads as JobCountCap: enough to alert on and to see a
// queue grow, not an exact size (finalized jobs, kept by River for a day,
// are usually past it). A scrape waits for the query (2 s at most); when
// it fails, the scrape reports the error for this metric alone.
type JobCollector struct {
	store  *storage.Store
	states []string
	kinds  []string
	desc   *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	counts []int64
}

// NewJobCollector returns a collector over the store's river_job table for
// the given job kinds (JobKinds gives those a client registers).
func NewJobCollector(st *storage.Store, kinds []string) *JobCollector {
	var states []string
	for _, s := range rivertype.JobStates() {
		states = append(states, string(s))
	}
	return &JobCollector{store: st, states: states, kinds: kinds, desc: prometheus.NewDesc("finsync_river_jobs",
		fmt.Sprintf("River jobs by state and kind, each count capped at %d (a value of %d means at least that many).", JobCountCap, JobCountCap),
		[]string{"state", "kind"}, nil)}
}

// Describe implements prometheus.Collector.
func (j *JobCollector) Describe(ch chan<- *prometheus.Desc) { ch <- j.desc }

// Collect implements prometheus.Collector.
func (j *JobCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := j.cached()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(j.desc, err)
		return
	}
	for si, state := range j.states {
		for ki, kind := range j.kinds {
			ch <- prometheus.MustNewConstMetric(j.desc, prometheus.GaugeValue, float64(counts[si*len(j.kinds)+ki]), state, kind)
		}
	}
}

// cached returns the counts, counting again once JobCountTTL has passed.
func (j *JobCollector) cached() ([]int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.counts != nil && time.Since(j.at) < JobCountTTL {
		return j.counts, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := j.store.CountJobs(ctx, j.states, j.kinds, JobCountCap)
	if err != nil {
		return nil, err
	}
	j.counts, j.at = counts, time.Now()
	return counts, nil
}

// LastSyncTTL is how long a ProviderTimeCollector serves its last reading
// before reading the database again.
const LastSyncTTL = 5 * time.Second

// ProviderTimeCollector exports a gauge of one Unix time per registered
// provider, read from PostgreSQL, so the series exists from a process's
// start and agrees across processes. Readings are cached for LastSyncTTL;
// a scrape waits for the query (2 s at most), and when it fails reports
// the error for this metric alone.
type ProviderTimeCollector struct {
	read      func(context.Context) ([]storage.ProviderTime, error)
	providers map[string]bool
	desc      *prometheus.Desc

	mu   sync.Mutex
	at   time.Time
	last []storage.ProviderTime
}

// NewLastSyncCollector returns the collector of
// finsync_last_successful_sync_timestamp_seconds: for every provider with
// connections (disabled ones aside), the newest successful sync of any of
// them; for one none of whose connections ever synced, its oldest
// connection's creation instead, so an alert on the gauge's age counts
// from then. Connections of providers not named are left out.
func NewLastSyncCollector(st *storage.Store, providerNames []string) *ProviderTimeCollector {
	read := func(ctx context.Context) ([]storage.ProviderTime, error) {
		last, err := st.ListLastSuccessfulSyncs(ctx)
		out := make([]storage.ProviderTime, len(last))
		for i := range last {
			out[i] = last[i].ProviderTime
		}
		return out, err
	}
	return newProviderTimeCollector(read, providerNames, prometheus.NewDesc("finsync_last_successful_sync_timestamp_seconds",
		"Unix time of the newest successful sync of any connection of the provider (stored in the database); for a provider none of whose connections has synced, its oldest connection's creation time.",
		[]string{"provider"}, nil))
}

// NewConsentExpiryCollector returns the collector of
// finsync_connection_consent_expiry_timestamp_seconds: for every provider
// with a connection (disabled ones aside) whose consent has a recorded
// end, the earliest such end. A provider without one has no series.
func NewConsentExpiryCollector(st *storage.Store, providerNames []string) *ProviderTimeCollector {
	return newProviderTimeCollector(st.ListEarliestConsentEnds, providerNames, prometheus.NewDesc("finsync_connection_consent_expiry_timestamp_seconds",
		"Unix time of the earliest end of a connection's consent among the provider's connections, as the providers reported it (stored in the database).",
		[]string{"provider"}, nil))
}

func newProviderTimeCollector(read func(context.Context) ([]storage.ProviderTime, error), providerNames []string, desc *prometheus.Desc) *ProviderTimeCollector {
	known := map[string]bool{}
	for _, p := range providerNames {
		known[p] = true
	}
	return &ProviderTimeCollector{read: read, providers: known, desc: desc}
}

// Describe implements prometheus.Collector.
func (l *ProviderTimeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

// Collect implements prometheus.Collector.
func (l *ProviderTimeCollector) Collect(ch chan<- prometheus.Metric) {
	last, err := l.cached()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(l.desc, err)
		return
	}
	for _, p := range last {
		if !l.providers[p.Provider] {
			continue
		}
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, float64(p.At.UnixNano())/1e9, p.Provider)
	}
}

// cached returns the readings, reading again once LastSyncTTL has passed.
func (l *ProviderTimeCollector) cached() ([]storage.ProviderTime, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last != nil && time.Since(l.at) < LastSyncTTL {
		return l.last, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	last, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	if last == nil {
		last = []storage.ProviderTime{}
	}
	l.last, l.at = last, time.Now()
	return last, nil
}
