package worker

import "context"

// statsRefresher runs one sync's refreshes of the planner's statistics in
// the background, one at a time, so that the writer does not wait for
// ANALYZE between batches (it reads about 30,000 rows, a good part of a
// second on a large table). The zero value is ready; analyze must be set.
// Caveat: not safe for concurrent use; the sync's writer owns it.
type statsRefresher struct {
	analyze func(context.Context) error
	done    chan error // set while a refresh runs
}

// start begins a refresh unless one is still running, and reports whether
// it began. A finished refresh's error is returned (and none begins).
// ctx must outlive the refresh: call wait before it ends.
func (s *statsRefresher) start(ctx context.Context) (bool, error) {
	if s.done != nil {
		select {
		case err := <-s.done:
			s.done = nil
			if err != nil {
				return false, err
			}
		default:
			return false, nil
		}
	}
	done := make(chan error, 1)
	s.done = done
	go func() { done <- s.analyze(ctx) }()
	return true, nil
}

// wait waits for the running refresh, if any, and returns its error.
func (s *statsRefresher) wait() error {
	if s.done == nil {
		return nil
	}
	err := <-s.done
	s.done = nil
	return err
}
