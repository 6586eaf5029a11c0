package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// ReauthConnection puts new credentials (already sealed) on an existing
// connection after its user linked the bank again, with the base URL to
// reach the provider at (empty keeps the stored one). The connection keeps
// its id, status and error until its next successful sync (FinishSync
// makes it active and clears them); its sync cursor and adapter state,
// which were the old link's, are dropped, so that the next sync reads the
// new link from its start, and it is due for a sync now. Caveat: the
// caller enqueues that sync; the accounts and transactions the provider
// re-issues are matched to the stored ones by that sync (docs/relink.md).
func (s *Store) ReauthConnection(ctx context.Context, id uuid.UUID, sealedCredentials []byte, baseURL string) (domain.BankConnection, error) {
	c, err := scanConnection(s.pool.QueryRow(ctx, `
		UPDATE bank_connections c SET credentials_encrypted = $2, base_url = COALESCE(NULLIF($3, ''), c.base_url),
			sync_cursor = '', sync_state = '{}', next_sync_at = CASE WHEN c.status = 'disabled' THEN NULL ELSE now() END,
			consent_expires_at = NULL, updated_at = now()
		WHERE c.id = $1 RETURNING `+connectionColumns, id, sealedCredentials, baseURL))
	if err != nil {
		return c, fmt.Errorf("reauth connection %s: %w", id, err)
	}
	return c, nil
}
