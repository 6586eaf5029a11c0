package domain

import (
	"testing"
	"time"
)

// TestDateAppendIsTheLayout compares the hand-written date form with time's
// formatter over every day of four centuries and a few far years.
func TestDateAppendIsTheLayout(t *testing.T) {
	day := time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC)
	days := []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC)}
	for range 400 * 366 {
		days = append(days, day)
		day = day.AddDate(0, 0, 1)
	}
	for _, d := range days {
		if got, want := string(Date{Time: d}.Append(nil)), d.Format(DateLayout); got != want {
			t.Fatalf("Append(%v) = %q, want %q", d, got, want)
		}
	}
}
