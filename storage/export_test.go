package storage

import (
	"context"

	"github.com/google/uuid"
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
