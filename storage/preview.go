package storage

import (
	"context"

	"github.com/google/uuid"
)

// PreviewRule is the package function PreviewRule on this store, with a
// query the database cancelled for the statement timeout marked
// ErrStatementTimeout (errors.Is), so callers need not inspect driver
// errors. A context that ran out is returned as it is
// (context.DeadlineExceeded).
func (s *Store) PreviewRule(ctx context.Context, sc Scope, def []byte, allowed []uuid.UUID, after Keyset, limit int) (Preview, error) {
	pv, err := PreviewRule(ctx, s, sc, def, allowed, after, limit)
	return pv, markTimeout(err)
}
