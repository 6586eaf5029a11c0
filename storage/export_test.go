package storage

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/rules"
)

// PreviewRuleInGo is PreviewRule evaluated in Go on every transaction of
// the scope, without a prefilter or the database's count: the reference
// the tests compare PreviewRule with.
func PreviewRuleInGo(ctx context.Context, st *Store, sc Scope, def []byte, allowed []uuid.UUID, after Keyset, limit int) (Preview, error) {
	set, rule, err := previewSet(ctx, st, sc, def, allowed)
	if err != nil {
		return Preview{}, err
	}
	return previewOnce(ctx, st, sc, set, rule, after, limit, false)
}

// MarkTimeout exposes markTimeout to the external tests.
var MarkTimeout = markTimeout

// OnlyAdds exposes onlyAdds to the external tests.
var OnlyAdds = onlyAdds

// RuleCandidates exposes ruleCandidates on the store's reader, so that the
// tests check the database's prefilter against the rule engine.
func (s *Store) RuleCandidates(ctx context.Context, sc Scope, pf rules.Prefilter, columns string, each func(pgx.Rows) error) error {
	return ruleCandidates(ctx, s.reader(ctx), sc, pf, nil, columns, each)
}
