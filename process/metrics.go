package process

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/finsync/finsync/storage"
)

// BaseMetrics registers what every long-running process exports on reg:
// Go runtime, process and database pool statistics, and the read
// replica's when there is one.
func BaseMetrics(reg prometheus.Registerer, st *storage.Store) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newPoolCollector(st))
	if st.Replica() != nil {
		reg.MustRegister(newReplicaCollector(st))
	}
}

// poolCollector exports the database pool's statistics.
type poolCollector struct {
	st                               *storage.Store
	acquired, idle, total, wait, max *prometheus.Desc
}

func newPoolCollector(st *storage.Store) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("finsync_db_pool_"+name, help, nil, nil)
	}
	return &poolCollector{st: st,
		acquired: d("acquired_conns", "Connections in use."),
		idle:     d("idle_conns", "Idle connections."),
		total:    d("total_conns", "All open connections."),
		wait:     d("empty_acquire_total", "Acquires that had to wait for a connection."),
		max:      d("max_conns", "The pool's size (FINSYNC_DB_MAX_CONNS or the command's default)."),
	}
}

// Describe implements prometheus.Collector.
func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.acquired
	ch <- p.idle
	ch <- p.total
	ch <- p.wait
	ch <- p.max
}

// Collect implements prometheus.Collector.
func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.st.PoolStats()
	ch <- prometheus.MustNewConstMetric(p.acquired, prometheus.GaugeValue, float64(s.Acquired))
	ch <- prometheus.MustNewConstMetric(p.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(p.total, prometheus.GaugeValue, float64(s.Total))
	ch <- prometheus.MustNewConstMetric(p.wait, prometheus.CounterValue, float64(s.EmptyAcquires))
	ch <- prometheus.MustNewConstMetric(p.max, prometheus.GaugeValue, float64(s.Max))
}

// replicaCollector exports where reads went and the read replica's state.
type replicaCollector struct {
	st                 *storage.Store
	reads, usable, lag *prometheus.Desc
}

func newReplicaCollector(st *storage.Store) *replicaCollector {
	return &replicaCollector{st: st,
		reads:  prometheus.NewDesc("finsync_db_reads_total", "API reads by the database that served them.", []string{"server"}, nil),
		usable: prometheus.NewDesc("finsync_read_replica_usable", "1 while reads may go to the read replica.", nil, nil),
		lag: prometheus.NewDesc("finsync_read_replica_lag_seconds",
			"Upper bound of the read replica's lag at the last probe (-1 when unknown or past the samples kept).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (r *replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.reads
	ch <- r.usable
	ch <- r.lag
}

// Collect implements prometheus.Collector.
func (r *replicaCollector) Collect(ch chan<- prometheus.Metric) {
	replica, primary := r.st.GetReadCounts()
	ch <- prometheus.MustNewConstMetric(r.reads, prometheus.CounterValue, float64(replica), "replica")
	ch <- prometheus.MustNewConstMetric(r.reads, prometheus.CounterValue, float64(primary), "primary")
	st := r.st.Replica().Status()
	usable, lag := 0.0, -1.0
	if st.Usable {
		usable = 1
	}
	if st.Lag != math.MaxInt64 {
		lag = st.Lag.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(r.usable, prometheus.GaugeValue, usable)
	ch <- prometheus.MustNewConstMetric(r.lag, prometheus.GaugeValue, lag)
}
