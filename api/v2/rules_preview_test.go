package v2

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/finsync/finsync/storage"
)

// TestPreviewErrorAnswers400WhenTheBudgetRunsOut checks that a preview
// stopped by its own budget or by the statement timeout becomes a 400,
// and that other errors, or the caller's own end, do not.
func TestPreviewErrorAnswers400WhenTheBudgetRunsOut(t *testing.T) {
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	timeout := fmt.Errorf("preview rule: %w", storage.ErrStatementTimeout)
	budget := fmt.Errorf("preview rule: %w", context.DeadlineExceeded)
	other := errors.New("boom")
	var br *badRequest
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		bad  bool
	}{
		{"statement timeout", live, timeout, true},
		{"own budget", live, budget, true},
		{"request gone", gone, budget, false},
		{"other", live, other, false},
	} {
		got := previewError(tc.ctx, tc.err)
		if errors.As(got, &br) != tc.bad {
			t.Errorf("%s: %v, want a 400: %v", tc.name, got, tc.bad)
		}
		if !tc.bad && got != tc.err {
			t.Errorf("%s: %v, want the error itself", tc.name, got)
		}
	}
}
