package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ProviderSettingsInfo says that a provider's settings are set, and when
// they last changed; it never carries the settings.
type ProviderSettingsInfo struct {
	Provider  string
	UpdatedAt time.Time
}

// SetProviderSettings stores the sealed settings of provider (set once by
// an operator for every connection of the provider), replacing any it had.
// The caller seals them; the store never sees them in clear.
func (s *Store) SetProviderSettings(ctx context.Context, provider string, sealed []byte) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO provider_settings (provider, settings_encrypted) VALUES ($1, $2)
		ON CONFLICT (provider) DO UPDATE SET settings_encrypted = excluded.settings_encrypted, updated_at = now()`,
		provider, sealed); err != nil {
		return fmt.Errorf("set %s settings: %w", provider, err)
	}
	return nil
}

// GetProviderSettings returns the sealed settings of provider, nil when none
// are set.
func (s *Store) GetProviderSettings(ctx context.Context, provider string) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT settings_encrypted FROM provider_settings WHERE provider = $1`, provider).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s settings: %w", provider, err)
	}
	return sealed, nil
}

// DeleteProviderSettings removes provider's settings; ErrNotFound when it
// had none. Connections that relied on them fail until they are set again.
func (s *Store) DeleteProviderSettings(ctx context.Context, provider string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM provider_settings WHERE provider = $1`, provider)
	if err != nil {
		return fmt.Errorf("delete %s settings: %w", provider, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete %s settings: %w", provider, ErrNotFound)
	}
	return nil
}

// ListProviderSettings lists the providers whose settings are set, by name.
func (s *Store) ListProviderSettings(ctx context.Context) ([]ProviderSettingsInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT provider, updated_at FROM provider_settings ORDER BY provider`)
	if err != nil {
		return nil, fmt.Errorf("list provider settings: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ProviderSettingsInfo])
	if err != nil {
		return nil, fmt.Errorf("list provider settings: %w", err)
	}
	return out, nil
}
