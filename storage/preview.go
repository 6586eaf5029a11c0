package storage

import (
	"context"

	"github.com/google/uuid"

	"github.com/finsync/finsync/rules"
)

// PreviewRule is the package function PreviewRule on this store, with a
// query the database cancelled for the statement timeout marked
// ErrStatementTimeout (errors.Is), so callers need not inspect driver
// errors. A context that ran out is returned as it is
// (context.DeadlineExceeded).
//
// The rule comes compiled (as validated: it is not compiled again); the
// user's active rules are compiled through cache (nil: no cache).
func (s *Store) PreviewRule(ctx context.Context, sc Scope, rule *rules.Rule, cache *rules.Cache, allowed []uuid.UUID, after Keyset, limit int) (Preview, error) {
	pv, err := previewCompiled(ctx, s, sc, rule, allowed, after, limit, cache)
	return pv, markTimeout(err)
}
