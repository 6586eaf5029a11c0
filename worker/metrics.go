package worker

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// JobCollector exports the number of River jobs by kind and state.
type JobCollector struct {
	pool *pgxpool.Pool
	desc *prometheus.Desc
}

// NewJobCollector returns a collector over the pool's river_job table.
func NewJobCollector(pool *pgxpool.Pool) *JobCollector {
	return &JobCollector{pool: pool, desc: prometheus.NewDesc("finsync_jobs",
		"River jobs by kind and state.", []string{"kind", "state"}, nil)}
}

// Describe implements prometheus.Collector.
func (j *JobCollector) Describe(ch chan<- *prometheus.Desc) { ch <- j.desc }

// Collect implements prometheus.Collector.
func (j *JobCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT kind, state::text, count(*) FROM river_job GROUP BY 1, 2`)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(j.desc, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var kind, state string
		var n int64
		if err := rows.Scan(&kind, &state, &n); err != nil {
			ch <- prometheus.NewInvalidMetric(j.desc, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(j.desc, prometheus.GaugeValue, float64(n), kind, state)
	}
}
