package storage

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Scope is the data a request may reach: one user's, limited to AccountIDs
// when the credential is scoped (nil means every account of the user).
type Scope struct {
	UserID     uuid.UUID
	AccountIDs []uuid.UUID
}

// Scoped reports whether the scope is limited to some accounts.
func (s Scope) Scoped() bool { return s.AccountIDs != nil }

// Allows reports whether the scope reaches the account.
func (s Scope) Allows(accountID uuid.UUID) bool {
	if s.AccountIDs == nil {
		return true
	}
	for _, id := range s.AccountIDs {
		if id == accountID {
			return true
		}
	}
	return false
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

// scope adds the user and account-scope predicates for a table alias whose
// rows carry user_id and account_id.
func (w *where) scope(alias string, s Scope) {
	w.add(alias+".user_id = ?", s.UserID)
	if s.Scoped() {
		w.add(alias+".account_id = ANY(?)", s.AccountIDs)
	}
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

func (w *where) sql() string {
	if len(w.clauses) == 0 {
		return "TRUE"
	}
	return strings.Join(w.clauses, " AND ")
}
