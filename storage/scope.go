package storage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Scope is the data a request may reach: one user's, limited, when the
// credential is scoped, to the accounts its credential_accounts rows name.
//
// Queries resolve a scoped credential's accounts in their own SQL (a
// subquery on credential_accounts by CredentialID), never from AccountIDs,
// so an account that joins the scope is reachable by the very next query,
// on any API process, without an extra round trip. AccountIDs is the scope
// as it was when the credential was looked up (possibly cached, so
// possibly missing accounts added since); it only says whether the scope is
// limited (nil: every account) and serves Go-side checks that tolerate a
// stale list; code that needs the current list reads it with
// CurrentScopeAccounts.
type Scope struct {
	UserID uuid.UUID
	// CredentialID is the scoped credential; it must be set when
	// AccountIDs is non-nil.
	CredentialID uuid.UUID
	AccountIDs   []uuid.UUID
}

// Scoped reports whether the scope is limited to some accounts.
func (s Scope) Scoped() bool { return s.AccountIDs != nil }

// scopeAccounts is the SQL subquery of a scoped credential's accounts
// (credential id, then user id, as placeholders).
const scopeAccounts = `(SELECT sca.account_id FROM credential_accounts sca WHERE sca.credential_id = ? AND sca.user_id = ?)`

// inScope adds "col is one of the scope's accounts" for a scoped scope.
func (w *where) inScope(col string, s Scope) {
	if s.Scoped() {
		w.add(col+" IN "+scopeAccounts, s.CredentialID, s.UserID)
	}
}

// ProviderManual is the provider of what a user makes by hand (manual
// accounts, categories and category groups): visible to every credential
// of the user, scoped or not.
const ProviderManual = "manual"

// providerVisible adds, for a scoped scope, "the provider in col is one
// the credential can see": manual, or the provider of one of its
// accounts. A scoped key thus lists no category (or group) of a provider
// whose accounts are all outside its scope.
func (w *where) providerVisible(col string, s Scope) {
	if s.Scoped() {
		w.add("("+col+" = ? OR "+col+" IN (SELECT spa.provider FROM accounts spa WHERE spa.user_id = ? AND spa.id IN "+scopeAccounts+"))",
			ProviderManual, s.UserID, s.CredentialID, s.UserID)
	}
}

// currentScopeAccounts reads a scoped credential's accounts as they are
// now, within q (a transaction sees its own additions); nil for an
// unscoped scope. One query: for write paths that check a list in Go.
func currentScopeAccounts(ctx context.Context, q querier, s Scope) ([]uuid.UUID, error) {
	if !s.Scoped() {
		return nil, nil
	}
	ids := []uuid.UUID{}
	err := q.QueryRow(ctx, `SELECT COALESCE(array_agg(account_id), '{}') FROM credential_accounts WHERE credential_id = $1 AND user_id = $2`,
		s.CredentialID, s.UserID).Scan(&ids)
	if err != nil {
		return nil, fmt.Errorf("read scope of credential %s: %w", s.CredentialID, err)
	}
	return ids, nil
}

// Keyset is a position in a listing ordered by (Date DESC, ID DESC); the
// zero value is the start.
type Keyset struct {
	Date time.Time
	ID   uuid.UUID
}

// IsZero reports whether the position is the start of the listing.
func (k Keyset) IsZero() bool { return k.ID == uuid.Nil }

// where builds a WHERE clause from the predicates that apply, numbering
// placeholders as it goes, so each query shape gets a plan that uses its
// indexes instead of a generic plan full of "IS NULL OR".
type where struct {
	clauses []string
	args    []any
}

// add appends a predicate; each "?" in clause becomes the next placeholder.
func (w *where) add(clause string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		clause = strings.Replace(clause, "?", fmt.Sprintf("$%d", len(w.args)), 1)
	}
	w.clauses = append(w.clauses, clause)
}

// oneOf adds col's predicate for a filter by any of values: none filters
// nothing, one is an equality (which the planner estimates best), more are
// ANY.
func (w *where) oneOf(col string, values []string) {
	switch len(values) {
	case 0:
	case 1:
		w.add(col+" = ?", values[0])
	default:
		w.add(col+" = ANY(?)", values)
	}
}

// scope adds the user and account-scope predicates for a table alias whose
// rows carry user_id and account_id.
func (w *where) scope(alias string, s Scope) {
	w.add(alias+".user_id = ?", s.UserID)
	w.inScope(alias+".account_id", s)
}

// keyset adds the seek predicate for (dateCol DESC, id DESC) ordering.
func (w *where) keyset(dateCol, idCol string, k Keyset) {
	if !k.IsZero() {
		w.add("("+dateCol+", "+idCol+") < (?, ?)", k.Date, k.ID)
	}
}

// arg adds a value and returns its placeholder.
func (w *where) arg(v any) string {
	w.args = append(w.args, v)
	return fmt.Sprintf("$%d", len(w.args))
}

// expr returns, parenthesised, the conjunction of the predicates f adds
// (TRUE when none), numbering its placeholders after w's, without adding
// it to w.
func (w *where) expr(f func(*where)) string {
	sub := where{args: w.args}
	f(&sub)
	w.args = sub.args
	return "(" + sub.sql() + ")"
}

func (w *where) sql() string {
	if len(w.clauses) == 0 {
		return "TRUE"
	}
	return strings.Join(w.clauses, " AND ")
}

// ListScopeAccounts reads a scoped credential's accounts as the primary
// database holds them now (not a replica: an account just added is in
// it); nil for an unscoped scope.
func (s *Store) ListScopeAccounts(ctx context.Context, sc Scope) ([]uuid.UUID, error) {
	return currentScopeAccounts(ctx, s.pool, sc)
}

// ListScopeAccounts is ListScopeAccounts inside the transaction,
// which sees its own additions.
func (t *Tx) ListScopeAccounts(ctx context.Context, sc Scope) ([]uuid.UUID, error) {
	return currentScopeAccounts(ctx, t.tx, sc)
}
