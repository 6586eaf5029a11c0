package storage

import (
	"context"

	"github.com/google/uuid"

	"github.com/finsync/finsync/rules"
)

// PreviewRule reports what adding the rule (compiled as validated: it is
// not compiled again) limited to the accounts allowed
// (nil: all) to the user's active rules would change among the transactions
// within the scope, as the rule job would decide it now, without writing
// anything: the count, and up to limit changes after the keyset position
// after, newest first. The rule runs after every stored rule of its
// priority, as when created now; it has no id yet, so the New state of a
// category it sets names no rule.
//
// The database counts the rows whose change is certain, in one scan with
// the rule's prefilter: the rule matches them by its exact form
// (rules.Rule.Exact, on ASCII text), and for a field it sets no stored rule
// ranked after it that sets that field matches them (the later rule's
// exact form) while the rule's value differs from the stored one (it names
// no rule; a category the user chose is kept). The same scan returns the
// rows it cannot decide (a non-ASCII text the rule or a later rule reads, a
// later rule without an exact form that may match), which the rule engine
// evaluates, as it evaluates the page's rows the database found; the two
// disagreeing is an error. A rule without an exact form (a matches
// condition outside the translated subset, such as multi-line anchors; a
// non-ASCII text) is evaluated by the rule engine on every
// row its prefilter lets through. All reads share one snapshot.
//
// Caveat: transactions whose stored state lags the active rules (a rule job
// still running) are counted only when the new rule matches them, and
// those the database counts only when a field the rule wins changes.
//
// The user's active rules are compiled through cache (nil: no cache). A
// query the database cancelled for the statement timeout is marked
// ErrStatementTimeout (errors.Is), so callers need not inspect driver
// errors; a context that ran out is returned as it is
// (context.DeadlineExceeded).
func (s *Store) PreviewRule(ctx context.Context, sc Scope, rule *rules.Rule, cache *rules.Cache, allowed []uuid.UUID, after Keyset, limit int) (Preview, error) {
	pv, err := previewCompiled(ctx, s, sc, rule, allowed, after, limit, cache)
	return pv, markTimeout(err)
}
