package storage

import (
	"context"
	"fmt"
	"time"
)

// CreateOpsSession records a new ops console session: idHash is the
// SHA-256 of the id its cookie holds, fingerprint the keyed digest of the
// operator token it was made with, expires its end.
func (s *Store) CreateOpsSession(ctx context.Context, idHash, fingerprint []byte, expires time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO ops_sessions (id_hash, token_fingerprint, expires_at) VALUES ($1, $2, $3)`,
		idHash, fingerprint, expires)
	if err != nil {
		return fmt.Errorf("create ops session: %w", err)
	}
	return nil
}

// IsOpsSessionValid reports whether the session of idHash exists, was made
// under the token of fingerprint, is not revoked and has not expired at
// now. It reads the primary, so a sign-out committed anywhere is seen by
// the next request on every process.
func (s *Store) IsOpsSessionValid(ctx context.Context, idHash, fingerprint []byte, now time.Time) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ops_sessions
WHERE id_hash = $1 AND token_fingerprint = $2 AND revoked_at IS NULL AND expires_at > $3)`,
		idHash, fingerprint, now).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check ops session: %w", err)
	}
	return ok, nil
}

// RevokeOpsSession ends the session of idHash for good (sign-out); ending
// an unknown or already ended session is no error.
func (s *Store) RevokeOpsSession(ctx context.Context, idHash []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE ops_sessions SET revoked_at = now() WHERE id_hash = $1 AND revoked_at IS NULL`, idHash)
	if err != nil {
		return fmt.Errorf("revoke ops session: %w", err)
	}
	return nil
}

// PurgeOpsSessions deletes the sessions that expired before before,
// revoked or not, and returns how many.
func (s *Store) PurgeOpsSessions(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM ops_sessions WHERE expires_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge ops sessions: %w", err)
	}
	return tag.RowsAffected(), nil
}
