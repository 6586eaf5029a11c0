package storage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Credential kinds.
const (
	CredentialAPIKey     = "api_key"
	CredentialOAuthToken = "oauth_token"
)

// Secret prefixes: API keys are "fin_" and OAuth access tokens "fino_",
// each followed by SecretLength random base62 characters.
const (
	APIKeyPrefix     = "fin_"
	OAuthTokenPrefix = "fino_"
	SecretLength     = 40
)

// CredentialsChannel is the PostgreSQL NOTIFY channel on which every change
// to credentials, their scope or their users' plans is announced, so that
// API processes drop cached lookups at once.
const CredentialsChannel = "finsync_credentials"

// NewCredential describes a key or token to issue.
type NewCredential struct {
	UserID    uuid.UUID
	Kind      string
	Name      string
	AppName   string
	ExpiresAt *time.Time
	// AccountIDs limits the credential to these accounts; nil means all
	// accounts, including future ones.
	AccountIDs []uuid.UUID
}

// IssuedCredential is a newly created credential with its one-time secret.
type IssuedCredential struct {
	ID            uuid.UUID
	Secret        string
	DisplayPrefix string
}

// Principal is what an API request authenticates as: the credential, its
// user and its account scope.
type Principal struct {
	CredentialID uuid.UUID
	Kind         string
	Enabled      bool
	ExpiresAt    *time.Time
	UserID       uuid.UUID
	Email        string
	Plan         string
	PlanActive   bool
	StorageMode  bool
	// AccountIDs is the credential's scope as looked up, nil meaning every
	// account. A cached principal's list may lack accounts added since;
	// queries therefore resolve the scope in their SQL (see Scope).
	AccountIDs []uuid.UUID
}

// Scope returns the data scope the principal may read.
func (p *Principal) Scope() Scope {
	return Scope{UserID: p.UserID, CredentialID: p.CredentialID, AccountIDs: p.AccountIDs}
}

// HashSecret is the stored form of a key or token.
func HashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newSecret returns prefix followed by SecretLength uniformly random base62
// characters.
func newSecret(prefix string) (string, error) {
	out := make([]byte, 0, len(prefix)+SecretLength)
	out = append(out, prefix...)
	buf := make([]byte, 64)
	for len(out) < len(prefix)+SecretLength {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("random secret: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(out) < len(prefix)+SecretLength { // 248 = 4*62: no modulo bias
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out), nil
}

// IssueCredential creates an API key or OAuth token. Creating an API key
// turns the user's storage mode on. Scoped account ids must be the user's.
func (s *Store) IssueCredential(ctx context.Context, nc NewCredential) (IssuedCredential, error) {
	prefix := APIKeyPrefix
	if nc.Kind == CredentialOAuthToken {
		prefix = OAuthTokenPrefix
	}
	secret, err := newSecret(prefix)
	if err != nil {
		return IssuedCredential{}, err
	}
	ic := IssuedCredential{Secret: secret, DisplayPrefix: secret[:len(prefix)+6]}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `
			INSERT INTO credentials (user_id, kind, name, app_name, token_hash, display_prefix, expires_at, all_accounts)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			nc.UserID, nc.Kind, nc.Name, nc.AppName, HashSecret(secret), ic.DisplayPrefix, nc.ExpiresAt, nc.AccountIDs == nil,
		).Scan(&ic.ID); err != nil {
			return fmt.Errorf("insert credential: %w", err)
		}
		if nc.AccountIDs != nil {
			tag, err := tx.Exec(ctx, `
				INSERT INTO credential_accounts (user_id, credential_id, account_id)
				SELECT a.user_id, $1, a.id FROM accounts a WHERE a.user_id = $2 AND a.id = ANY($3)`,
				ic.ID, nc.UserID, nc.AccountIDs)
			if err != nil {
				return fmt.Errorf("scope credential: %w", err)
			}
			if int(tag.RowsAffected()) != len(uniqueIDs(nc.AccountIDs)) {
				return fmt.Errorf("scope credential: %w: an account is not the user's", ErrNotFound)
			}
		}
		if nc.Kind == CredentialAPIKey {
			if _, err := tx.Exec(ctx, `UPDATE users SET storage_mode = true, updated_at = now() WHERE id = $1`, nc.UserID); err != nil {
				return fmt.Errorf("enable storage mode: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return IssuedCredential{}, fmt.Errorf("issue credential for user %s: %w", nc.UserID, err)
	}
	return ic, s.notifyCredentialsChanged(ctx)
}

// DisableCredential turns a key or token off.
func (s *Store) DisableCredential(ctx context.Context, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `UPDATE credentials SET enabled = false, updated_at = now() WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("disable credential %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("disable credential %s: %w", id, ErrNotFound)
	}
	return s.notifyCredentialsChanged(ctx)
}

// LookupCredential finds the principal for a secret's hash.
func (s *Store) LookupCredential(ctx context.Context, hash []byte) (Principal, error) {
	var p Principal
	var allAccounts bool
	err := s.pool.QueryRow(ctx, `
		SELECT c.id, c.kind, c.enabled, c.expires_at, c.all_accounts,
		       u.id, u.email, u.plan, u.plan_active, u.storage_mode,
		       COALESCE((SELECT array_agg(ca.account_id) FROM credential_accounts ca WHERE ca.credential_id = c.id), '{}')
		FROM credentials c JOIN users u ON u.id = c.user_id
		WHERE c.token_hash = $1`, hash,
	).Scan(&p.CredentialID, &p.Kind, &p.Enabled, &p.ExpiresAt, &allAccounts,
		&p.UserID, &p.Email, &p.Plan, &p.PlanActive, &p.StorageMode, &p.AccountIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("look up credential: %w", err)
	}
	if allAccounts {
		p.AccountIDs = nil
	}
	return p, nil
}

// TouchCredentials records when credentials were last used.
func (s *Store) TouchCredentials(ctx context.Context, used map[uuid.UUID]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(used))
	times := make([]time.Time, 0, len(used))
	for id, t := range used {
		ids = append(ids, id)
		times = append(times, t)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE credentials c SET last_used_at = GREATEST(c.last_used_at, u.t)
		FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, t) WHERE c.id = u.id`, ids, times)
	if err != nil {
		return fmt.Errorf("record credential use: %w", err)
	}
	return nil
}

// addAccountToScope adds an account to a scoped credential's scope (an
// account created through a scoped key joins it). Unscoped credentials are
// left alone.
func addAccountToScope(ctx context.Context, q querier, credentialID, accountID uuid.UUID) error {
	_, err := q.Exec(ctx, `
		INSERT INTO credential_accounts (user_id, credential_id, account_id)
		SELECT user_id, id, $2 FROM credentials WHERE id = $1 AND NOT all_accounts
		ON CONFLICT DO NOTHING`, credentialID, accountID)
	if err != nil {
		return fmt.Errorf("add account %s to credential %s: %w", accountID, credentialID, err)
	}
	_, err = q.Exec(ctx, `SELECT pg_notify($1, '')`, CredentialsChannel)
	return err
}

func (s *Store) notifyCredentialsChanged(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, CredentialsChannel); err != nil {
		return fmt.Errorf("announce credential change: %w", err)
	}
	return nil
}

func uniqueIDs(ids []uuid.UUID) map[uuid.UUID]struct{} {
	m := make(map[uuid.UUID]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}

// GetCredentialsVersion returns the credentials version (migration 00009):
// database triggers move it in every transaction that issues, disables,
// expires or deletes a credential or changes a user's plan, plan activity,
// storage mode or e-mail, whoever makes the change. One single-row read.
func (s *Store) GetCredentialsVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.pool.QueryRow(ctx, `SELECT version FROM credentials_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read credentials version: %w", err)
	}
	return v, nil
}

// ListenCredentialChanges holds one connection of the primary pool
// listening on CredentialsChannel until ctx ends or the connection fails:
// it calls listening once the LISTEN took, then changed on every
// notification. connected says whether it got as far as listening; err is
// what ended it (ctx's end included), never nil. The connection is
// UNLISTENed (within a second) before it goes back to the pool. Caveat:
// notifications sent while no listener is connected are lost; callers
// cover that gap themselves (CredentialsVersion).
func (s *Store) ListenCredentialChanges(ctx context.Context, listening, changed func()) (connected bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("acquire listener connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+CredentialsChannel); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	defer func() {
		unlistenCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Exec(unlistenCtx, "UNLISTEN *") //nolint:errcheck
	}()
	listening()
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return true, fmt.Errorf("wait for notification: %w", err)
		}
		changed()
	}
}
