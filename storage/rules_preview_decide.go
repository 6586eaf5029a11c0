package storage

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/finsync/finsync/rules"
)

// PreviewState is the rule-dependent state of a transaction.
type PreviewState struct {
	CategoryID     *uuid.UUID
	CategorySource *string
	CategoryRuleID *uuid.UUID
	MerchantName   *string
	Hidden         bool
}

// PreviewChange is one transaction a previewed rule would change.
type PreviewChange struct {
	ID           uuid.UUID
	Key          Keyset
	Current, New PreviewState
}

// Preview is what adding a rule would change.
type Preview struct {
	// Count is how many transactions would change.
	Count int
	// Changes are the first changes after the requested position, newest
	// first; HasMore is set when more follow.
	Changes []PreviewChange
	HasMore bool
}

// previewScan is the preview's evaluation in Go: it reads on q every
// transaction within the scope that satisfies pf and the predicates more
// adds (nil: none), evaluates set on those rule matches, and returns how
// many change and the first limit+1 changes after the position after,
// newest first.
func previewScan(ctx context.Context, q querier, sc Scope, set *rules.Set, rule *rules.Rule, pf rules.Prefilter, more func(*where), after Keyset, limit int) (int, []PreviewChange, error) {
	var (
		count   int
		changes []PreviewChange
		r       ruleRow
	)
	err := ruleCandidates(ctx, q, sc, pf, more, ruleRowColumns, func(rows pgx.Rows) error {
		// Every row, so that the preview stops within one row's
		// evaluation of its deadline.
		if err := ctx.Err(); err != nil {
			return err
		}
		r = ruleRow{}
		if err := scanRuleRow(rows, &r); err != nil {
			return err
		}
		ch, ok := previewRow(set, rule, &r)
		if !ok {
			return nil
		}
		count++
		if !after.IsZero() && !listedAfter(ch.Key, after) {
			return nil
		}
		changes = append(changes, ch)
		if len(changes) >= 4*(limit+1)+64 {
			changes = newestFirst(changes, limit+1)
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("preview rule: %w", err)
	}
	return count, newestFirst(changes, limit+1), nil
}

// previewRow evaluates the rule set on one row: the change, and whether
// the previewed rule matches the row and the row changes. This is the one
// decision of the preview (the rule job's decide and changed).
func previewRow(set *rules.Set, rule *rules.Rule, r *ruleRow) (PreviewChange, bool) {
	p := rules.Prepare(r.input())
	if !rule.Matches(&p) {
		return PreviewChange{}, false
	}
	res := set.Apply(&p)
	d := r.decide(&res)
	if !r.changed(&d) {
		return PreviewChange{}, false
	}
	return PreviewChange{ID: r.id, Key: Keyset{Date: r.day, ID: r.id}, Current: r.state(), New: d.state()}, true
}

// pageOf cuts the first limit+1 changes, newest first, into a page.
func pageOf(count int, changes []PreviewChange, limit int) Preview {
	out := Preview{Count: count, Changes: changes}
	if len(out.Changes) > limit {
		out.HasMore, out.Changes = true, out.Changes[:limit]
	}
	return out
}

// newestFirst sorts changes newest first (date, then id, descending) and
// keeps the first n. The candidates arrive in no order (an ORDER BY would
// make the database sort or walk an index over the whole history), so the
// page is kept this way, in memory bounded by a few pages.
func newestFirst(changes []PreviewChange, n int) []PreviewChange {
	slices.SortFunc(changes, func(a, b PreviewChange) int {
		if c := b.Key.Date.Compare(a.Key.Date); c != 0 {
			return c
		}
		return bytes.Compare(b.Key.ID[:], a.Key.ID[:])
	})
	if len(changes) > n {
		changes = changes[:n]
	}
	return changes
}

// previewSet compiles the user's active rules (through cache; nil: no
// cache) and joins the previewed rule, already compiled, as if created
// after all of them; it returns the set and the previewed rule.
func previewSet(ctx context.Context, st *Store, sc Scope, rule *rules.Rule, allowed []uuid.UUID, cache *rules.Cache) (*rules.Set, *rules.Rule, error) {
	stored, err := activeRules(ctx, st.reader(ctx), sc.UserID)
	if err != nil {
		return nil, nil, fmt.Errorf("preview rule: %w", err)
	}
	compiled, err := compileStored(ctx, stored, cache)
	if err != nil {
		return nil, nil, fmt.Errorf("preview rule: %w", err)
	}
	latest := time.Now()
	for i := range stored {
		if stored[i].CreatedAt.After(latest) {
			latest = stored[i].CreatedAt
		}
	}
	rule = rule.WithMeta(rules.Meta{CreatedAt: latest.Add(time.Microsecond), AllowedAccountIDs: allowed})
	return rules.NewSet(append(compiled, rule)...), rule, nil
}

// listedAfter reports whether k comes after the position pos in (date
// DESC, id DESC) order.
func listedAfter(k, pos Keyset) bool {
	if !k.Date.Equal(pos.Date) {
		return k.Date.Before(pos.Date)
	}
	return uuidLess(k.ID, pos.ID)
}

func uuidLess(a, b uuid.UUID) bool { return bytes.Compare(a[:], b[:]) < 0 }

func (r *ruleRow) state() PreviewState {
	return PreviewState{
		CategoryID: uuidOrNil(r.categoryID), CategorySource: textOrNil(r.categorySource),
		CategoryRuleID: uuidOrNil(r.categoryRuleID), MerchantName: textOrNil(r.merchantName), Hidden: r.hidden,
	}
}

func (d *decision) state() PreviewState {
	s := PreviewState{
		CategoryID: uuidOrNil(d.categoryID), CategorySource: textOrNil(d.categorySource),
		CategoryRuleID: uuidOrNil(d.categoryRuleID), MerchantName: textOrNil(d.merchantName), Hidden: d.hidden,
	}
	if s.CategoryRuleID != nil && *s.CategoryRuleID == uuid.Nil {
		s.CategoryRuleID = nil
	}
	return s
}

func uuidOrNil(v pgtype.UUID) *uuid.UUID {
	if !v.Valid {
		return nil
	}
	id := uuid.UUID(v.Bytes)
	return &id
}

func textOrNil(v pgtype.Text) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}
