package storage

import (
	"context"
	"errors"
	"testing"
)

// TestStatsRefreshRunsOneRefreshAtATime checks that a refresh due while
// another runs is put off, and that a refresh's error reaches the writer.
func TestStatsRefreshRunsOneRefreshAtATime(t *testing.T) {
	release := make(chan error)
	runs := 0
	analyze := func(context.Context) error { runs++; return <-release }
	var s statsRefresh
	ctx := context.Background()

	if began, err := s.start(ctx, analyze); !began || err != nil {
		t.Fatalf("first start = %v, %v; want true, nil", began, err)
	}
	if began, err := s.start(ctx, analyze); began || err != nil {
		t.Fatalf("start while one runs = %v, %v; want false, nil", began, err)
	}
	release <- nil
	if err := s.wait(); err != nil {
		t.Fatalf("wait = %v", err)
	}
	if err := s.wait(); err != nil {
		t.Fatalf("wait with none running = %v", err)
	}

	boom := errors.New("boom")
	if began, _ := s.start(ctx, analyze); !began {
		t.Fatal("start after wait did not begin")
	}
	release <- boom
	// The failed refresh is reported by the next start, which begins none.
	for {
		began, err := s.start(ctx, analyze)
		if errors.Is(err, boom) && !began {
			break
		}
		if err != nil || began {
			t.Fatalf("start after a failed refresh = %v, %v; want false, boom", began, err)
		}
	}
	if runs != 2 {
		t.Fatalf("analyze ran %d times, want 2", runs)
	}
}
