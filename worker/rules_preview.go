package worker

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
	"github.com/finsync/finsync/storage"
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
	Key          storage.Keyset
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

// PreviewRule reports what adding the rule def (a validated definition,
// as storage.Rule.DefinitionJSON gives it) limited to the accounts allowed
// (nil: all) to the user's active rules would change among the transactions
// within the scope, as the rule job would decide it now, without writing
// anything: the count, and up to limit changes after the keyset position
// after. The rule runs after every stored rule of its priority, as when
// created now; it has no id yet, so the New state of a category it sets
// names no rule. Only transactions the rule matches are evaluated (a rule
// that does not match a transaction changes nothing about it); the
// database narrows them first with the rule's prefilter. Caveat: transactions whose stored state lags the active
// rules (a rule job still running) are counted only when the new rule
// matches them.
func PreviewRule(ctx context.Context, st *storage.Store, sc storage.Scope, def []byte, allowed []uuid.UUID, after storage.Keyset, limit int) (Preview, error) {
	set, rule, err := previewSet(ctx, st, sc, def, allowed)
	if err != nil {
		return Preview{}, err
	}
	var out Preview
	var r ruleRow
	err = st.RuleCandidates(ctx, sc, rule.Prefilter(), ruleRowColumns, func(rows pgx.Rows) error {
		r = ruleRow{}
		if err := scanRuleRow(rows, &r); err != nil {
			return err
		}
		p := rules.Prepare(r.input())
		if !rule.Matches(&p) {
			return nil
		}
		res := set.Apply(&p)
		d := r.decide(&res)
		if !r.changed(&d) {
			return nil
		}
		out.Count++
		key := storage.Keyset{Date: r.day, ID: r.id}
		if !after.IsZero() && !listedAfter(key, after) {
			return nil
		}
		out.Changes = append(out.Changes, PreviewChange{ID: r.id, Key: key, Current: r.state(), New: d.state()})
		if len(out.Changes) >= 4*(limit+1)+64 {
			out.Changes = newestFirst(out.Changes, limit+1)
		}
		return nil
	})
	if err != nil {
		return Preview{}, fmt.Errorf("preview rule: %w", err)
	}
	out.Changes = newestFirst(out.Changes, limit+1)
	if len(out.Changes) > limit {
		out.HasMore, out.Changes = true, out.Changes[:limit]
	}
	return out, nil
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

// previewSet compiles the user's active rules and the previewed one,
// created after all of them, and returns the set and the previewed rule.
func previewSet(ctx context.Context, st *storage.Store, sc storage.Scope, def []byte, allowed []uuid.UUID) (*rules.Set, *rules.Rule, error) {
	stored, err := storage.ActiveRules(ctx, st.Pool(), sc.UserID)
	if err != nil {
		return nil, nil, fmt.Errorf("preview rule: %w", err)
	}
	compiled := make([]*rules.Rule, 0, len(stored)+1)
	latest := time.Now()
	for i := range stored {
		s := &stored[i]
		c, err := rules.CompileJSON(s.DefinitionJSON(), rules.Meta{ID: s.ID, CreatedAt: s.CreatedAt, AllowedAccountIDs: s.AllowedAccountIDs})
		if err != nil {
			return nil, nil, fmt.Errorf("preview rule: compile rule %s: %w", s.ID, err)
		}
		compiled = append(compiled, c)
		if s.CreatedAt.After(latest) {
			latest = s.CreatedAt
		}
	}
	rule, err := rules.CompileJSON(def, rules.Meta{CreatedAt: latest.Add(time.Microsecond), AllowedAccountIDs: allowed})
	if err != nil {
		return nil, nil, fmt.Errorf("preview rule: compile: %w", err)
	}
	return rules.NewSet(append(compiled, rule)...), rule, nil
}

// listedAfter reports whether k comes after the position pos in (date
// DESC, id DESC) order.
func listedAfter(k, pos storage.Keyset) bool {
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
