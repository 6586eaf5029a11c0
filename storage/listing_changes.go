package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// A user's listing version is the sum of the weights of their rows in
// listing_changes, which triggers append to in every transaction that
// changes what a transaction listing reads (migration 00035,
// docs/read-cache.md). Every committed change adds a random positive
// weight; compaction keeps the sum as it is. Two reads that return the
// same version therefore saw the same listed data, on the primary or on
// any replica, but for a chance of about one in two billion that two
// different sets of changes sum alike.

// listingVersionColumn is the SQL of the user's listing version, read in
// the statement it is part of (so with that statement's snapshot), with
// the user as its placeholder.
func listingVersionColumn(w *where, userID uuid.UUID) string {
	return `(SELECT COALESCE(sum(lc.weight), 0)::bigint FROM listing_changes lc WHERE lc.user_id = ` + w.arg(userID) + `)`
}

// GetListingVersion reads the user's listing version where the user's
// reads go (the replica when the request's context routes there). A page
// read with ListTransactions is still what ListTransactions would return
// while this returns the version that page was read at.
func (s *Store) GetListingVersion(ctx context.Context, userID uuid.UUID) (int64, error) {
	var w where
	var v int64
	if err := s.reader(ctx).QueryRow(ctx, `SELECT `+listingVersionColumn(&w, userID), w.args...).Scan(&v); err != nil {
		return 0, fmt.Errorf("get listing version of user %s: %w", userID, err)
	}
	return v, nil
}

// compactListingChangesSQL replaces, for up to $1 users with more than one
// row, their rows by one row of their total, in one statement: a reader
// sees the rows before or after it, with the same sum either way. Rows
// inserted while it runs are not in its snapshot and stay. It also drops
// the rows of users that no longer exist (a note that raced its user's
// deletion), and writes no row for them.
const compactListingChangesSQL = `
WITH busy AS (
    SELECT lc.user_id FROM listing_changes lc GROUP BY lc.user_id
    HAVING count(*) > 1 OR NOT EXISTS (SELECT 1 FROM users u WHERE u.id = lc.user_id)
    LIMIT $1
), gone AS (
    DELETE FROM listing_changes lc USING busy WHERE lc.user_id = busy.user_id
    RETURNING lc.user_id, lc.weight
)
INSERT INTO listing_changes (user_id, weight)
SELECT g.user_id, sum(g.weight) FROM gone g
WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = g.user_id)
GROUP BY g.user_id`

// CompactListingChanges folds the listing_changes rows of up to limit
// users into one row each, keeping every user's listing version; it
// returns how many users it folded. The scheduler runs it every minute, so
// a version is read from at most about a minute's worth of a user's write
// statements.
func (s *Store) CompactListingChanges(ctx context.Context, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, compactListingChangesSQL, limit)
	if err != nil {
		return 0, fmt.Errorf("compact listing changes: %w", err)
	}
	return tag.RowsAffected(), nil
}
