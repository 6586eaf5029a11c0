package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/finsync/finsync/domain"
)

// ErrConflict is returned when a unique value (such as an email) is taken.
var ErrConflict = errors.New("already exists")

const userColumns = `id, email, plan, plan_active, storage_mode, created_at`

func scanUser(row pgx.Row) (domain.User, error) {
	var u domain.User
	err := row.Scan(&u.ID, &u.Email, &u.Plan, &u.PlanActive, &u.StorageMode, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, ErrNotFound
	}
	return u, err
}

// CreateUser stores a new user.
func (s *Store) CreateUser(ctx context.Context, email, plan string, storageMode bool) (domain.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx,
		`INSERT INTO users (email, plan, storage_mode) VALUES ($1, $2, $3) RETURNING `+userColumns,
		email, plan, storageMode))
	if isUniqueViolation(err) {
		return u, fmt.Errorf("create user %s: %w", email, ErrConflict)
	}
	if err != nil {
		return u, fmt.Errorf("create user %s: %w", email, err)
	}
	return u, nil
}

// UserUpdate names the user fields to change; nil leaves a field alone.
type UserUpdate struct {
	Plan        *string
	PlanActive  *bool
	StorageMode *bool
}

// UpdateUser changes a user's plan, plan activity or storage mode.
func (s *Store) UpdateUser(ctx context.Context, id uuid.UUID, up UserUpdate) (domain.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `
		UPDATE users SET
			plan = COALESCE($2, plan),
			plan_active = COALESCE($3, plan_active),
			storage_mode = COALESCE($4, storage_mode),
			updated_at = now()
		WHERE id = $1 RETURNING `+userColumns, id, up.Plan, up.PlanActive, up.StorageMode))
	if err != nil {
		return u, fmt.Errorf("update user %s: %w", id, err)
	}
	if err := s.notifyCredentialsChanged(ctx); err != nil {
		return u, err
	}
	return u, nil
}

// GetUserByEmail loads the user with the e-mail address, exactly as stored;
// ErrNotFound when there is none.
func (s *Store) GetUserByEmail(ctx context.Context, email string) (domain.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1`, email))
	if err != nil {
		return u, fmt.Errorf("get user %s: %w", email, err)
	}
	return u, nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
