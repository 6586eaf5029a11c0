package storage

import (
	"context"
	"fmt"
)

// countJobsSQL counts, for each state and kind, the jobs up to a cap; the
// rows come state by state, kinds in the order given.
const countJobsSQL = `
SELECT (SELECT count(*) FROM (SELECT 1 FROM river_job j WHERE j.state = s.state AND j.kind = k.kind LIMIT $3) c)
FROM unnest($1::river_job_state[]) WITH ORDINALITY AS s(state, si)
CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS k(kind, ki)
ORDER BY s.si, k.ki`

// CountJobs counts River's jobs of each state and kind, each count stopping
// at limit (a count of limit means "limit or more"), in one query that
// reads the index on (state, kind) and touches at most
// len(states) × len(kinds) × limit entries, never the whole table. The
// result holds the counts state by state, kinds in the order given:
// counts[si*len(kinds)+ki]. States must be River job states.
func (s *Store) CountJobs(ctx context.Context, states, kinds []string, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, countJobsSQL, states, kinds, limit)
	if err != nil {
		return nil, fmt.Errorf("count river jobs: %w", err)
	}
	defer rows.Close()
	counts := make([]int64, 0, len(states)*len(kinds))
	for rows.Next() {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("count river jobs: %w", err)
		}
		counts = append(counts, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count river jobs: %w", err)
	}
	if len(counts) != len(states)*len(kinds) {
		return nil, fmt.Errorf("count river jobs: %d counts for %d states and %d kinds", len(counts), len(states), len(kinds))
	}
	return counts, nil
}
