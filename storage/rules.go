package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Rule is a stored transaction rule. Conditions and Outcomes are the JSON
// arrays the rule engine validated.
type Rule struct {
	ID         uuid.UUID
	UserID     uuid.UUID
	Conditions json.RawMessage
	Outcomes   json.RawMessage
	Priority   int
	// AllowedAccountIDs limits the rule to these accounts; nil means all.
	AllowedAccountIDs []uuid.UUID
	CreatedAt         time.Time
	UpdatedAt         time.Time
	ArchivedAt        *time.Time
}

// DefinitionJSON is the rule as one JSON object (conditions, outcomes and
// priority), the form the rule engine decodes.
func (r *Rule) DefinitionJSON() []byte {
	b := make([]byte, 0, len(r.Conditions)+len(r.Outcomes)+64)
	b = append(b, `{"conditions":`...)
	b = append(b, r.Conditions...)
	b = append(b, `,"outcomes":`...)
	b = append(b, r.Outcomes...)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(r.Priority), 10)
	return append(b, '}')
}

// RuleInput is a rule's definition as stored.
type RuleInput struct {
	Conditions json.RawMessage
	Outcomes   json.RawMessage
	Priority   int
}

const ruleColumns = `id, user_id, conditions, outcomes, priority, allowed_account_ids, created_at, updated_at, archived_at`

func scanRule(row pgx.Row) (Rule, error) {
	var r Rule
	err := row.Scan(&r.ID, &r.UserID, &r.Conditions, &r.Outcomes, &r.Priority, &r.AllowedAccountIDs,
		&r.CreatedAt, &r.UpdatedAt, &r.ArchivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// ruleScope limits rules to those a scoped credential may see: rules whose
// allowed accounts all lie within its scope.
func ruleScope(w *where, sc Scope) {
	w.add("user_id = ?", sc.UserID)
	if sc.Scoped() {
		w.add("allowed_account_ids IS NOT NULL AND allowed_account_ids <@ ARRAY"+scopeAccounts, sc.CredentialID, sc.UserID)
	}
}

// createRule stores a rule of the user limited to allowed (nil for every
// account) inside the caller's transaction.
func createRule(ctx context.Context, tx pgx.Tx, userID uuid.UUID, in RuleInput, allowed []uuid.UUID) (Rule, error) {
	r, err := scanRule(tx.QueryRow(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority, allowed_account_ids)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+ruleColumns,
		userID, in.Conditions, in.Outcomes, in.Priority, allowed))
	if err != nil {
		return r, fmt.Errorf("create rule: %w", err)
	}
	return r, nil
}

// ListRules lists the rules the scope may see, in the order they run;
// archived rules only when includeArchived.
func (s *Store) ListRules(ctx context.Context, sc Scope, includeArchived bool) ([]Rule, error) {
	var w where
	ruleScope(&w, sc)
	if !includeArchived {
		w.add("archived_at IS NULL")
	}
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+ruleColumns+` FROM rules WHERE `+w.sql()+` ORDER BY priority, created_at, id`, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, fmt.Errorf("list rules: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// lockRule loads and locks a rule the scope may see, inside the caller's
// transaction; ErrNotFound otherwise.
func lockRule(ctx context.Context, tx pgx.Tx, sc Scope, id uuid.UUID) (Rule, error) {
	var w where
	w.add("id = ?", id)
	ruleScope(&w, sc)
	r, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleColumns+` FROM rules WHERE `+w.sql()+` FOR UPDATE`, w.args...))
	if err != nil {
		return r, fmt.Errorf("get rule %s: %w", id, err)
	}
	return r, nil
}

// updateRule replaces a rule's definition inside the caller's transaction.
func updateRule(ctx context.Context, tx pgx.Tx, id uuid.UUID, in RuleInput) (Rule, error) {
	r, err := scanRule(tx.QueryRow(ctx, `UPDATE rules SET conditions = $2, outcomes = $3, priority = $4,
		updated_at = clock_timestamp() WHERE id = $1 RETURNING `+ruleColumns, id, in.Conditions, in.Outcomes, in.Priority))
	if err != nil {
		return r, fmt.Errorf("update rule %s: %w", id, err)
	}
	return r, nil
}

// archiveRule archives a rule inside the caller's transaction: it stops
// running and is listed only when archived rules are asked for.
func archiveRule(ctx context.Context, tx pgx.Tx, id uuid.UUID) (Rule, error) {
	r, err := scanRule(tx.QueryRow(ctx, `UPDATE rules SET archived_at = clock_timestamp(), updated_at = clock_timestamp()
		WHERE id = $1 RETURNING `+ruleColumns, id))
	if err != nil {
		return r, fmt.Errorf("archive rule %s: %w", id, err)
	}
	return r, nil
}

// activeRulesSQL selects the user's active rules in the order they run;
// it reads the partial index of active rules (migration 00018), so its
// cost does not grow with the user's archived rules.
const activeRulesSQL = `SELECT ` + ruleColumns + ` FROM rules WHERE user_id = $1 AND archived_at IS NULL
	ORDER BY priority, created_at, id`

// activeRules loads the user's active (not archived) rules.
func activeRules(ctx context.Context, q querier, userID uuid.UUID) ([]Rule, error) {
	rows, err := q.Query(ctx, activeRulesSQL, userID)
	if err != nil {
		return nil, fmt.Errorf("load active rules: %w", err)
	}
	return scanActiveRules(rows)
}

// scanActiveRules reads the rows of activeRulesSQL and closes them.
func scanActiveRules(rows pgx.Rows) ([]Rule, error) {
	defer rows.Close()
	var out []Rule
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, fmt.Errorf("load active rules: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load active rules: %w", err)
	}
	return out, nil
}

// LockActiveRules takes the user's rule-creation lock for the rest of
// the transaction (held across every process: it is PostgreSQL's) and
// loads the user's active rules, so that a limit checked on them (their
// number, their total size) holds against concurrent creations and
// changes that take the same lock. Archived rules are not loaded.
func (t *Tx) LockActiveRules(ctx context.Context, userID uuid.UUID) ([]Rule, error) {
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('finsync.rules.create:' || $1::text, 0))`, userID); err != nil {
		return nil, fmt.Errorf("lock rule creation of user %s: %w", userID, err)
	}
	out, err := activeRules(ctx, t.tx, userID)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", userID, err)
	}
	return out, nil
}

// CreateRule is CreateRule inside the transaction.
func (t *Tx) CreateRule(ctx context.Context, userID uuid.UUID, in RuleInput, allowed []uuid.UUID) (Rule, error) {
	return createRule(ctx, t.tx, userID, in, allowed)
}

// LockRule is LockRule inside the transaction: the row stays locked until
// it ends.
func (t *Tx) LockRule(ctx context.Context, sc Scope, id uuid.UUID) (Rule, error) {
	return lockRule(ctx, t.tx, sc, id)
}

// UpdateRule is UpdateRule inside the transaction.
func (t *Tx) UpdateRule(ctx context.Context, id uuid.UUID, in RuleInput) (Rule, error) {
	return updateRule(ctx, t.tx, id, in)
}

// ArchiveRule is ArchiveRule inside the transaction.
func (t *Tx) ArchiveRule(ctx context.Context, id uuid.UUID) (Rule, error) {
	return archiveRule(ctx, t.tx, id)
}
