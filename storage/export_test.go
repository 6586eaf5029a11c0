package storage

import (
	"context"

	"github.com/google/uuid"

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
	n, changes, err := previewScan(ctx, st.pool, sc, set, rule, rules.Prefilter{}, nil, after, limit)
	if err != nil {
		return Preview{}, err
	}
	return pageOf(n, changes, limit), nil
}

// MarkTimeout exposes markTimeout to the external tests.
var MarkTimeout = markTimeout

// OnlyAdds exposes onlyAdds to the external tests.
var OnlyAdds = onlyAdds
