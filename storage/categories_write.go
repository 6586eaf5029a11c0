package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// ErrReadOnly is returned for an edit of a read-only (business-bank) category.
var ErrReadOnly = errors.New("category is read-only")

// CategoryInput is a category's editable fields. For a patch, nil fields are
// left alone and SetGroup with a nil Group clears the group.
type CategoryInput struct {
	Name        *string
	SetGroup    bool
	Group       *string
	Description *string
}

// CreateCategory stores a manual category of the user; a group named for the
// first time is created.
func (s *Store) CreateCategory(ctx context.Context, userID uuid.UUID, in CategoryInput) (domain.Category, error) {
	var out domain.Category
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		groupID, err := groupFor(ctx, tx, userID, in.Group)
		if err != nil {
			return err
		}
		var id uuid.UUID
		err = tx.QueryRow(ctx, `INSERT INTO categories (user_id, provider, name, group_id, description)
			VALUES ($1, 'manual', $2, $3, COALESCE($4, '')) RETURNING id`,
			userID, in.Name, groupID, in.Description).Scan(&id)
		if err != nil {
			return fmt.Errorf("create category: %w", err)
		}
		out, err = getCategory(ctx, tx, userID, id, "")
		return err
	})
	return out, err
}

// UpdateCategory edits one of the user's categories. Business-bank
// categories are read-only (ErrReadOnly). Any edit marks the category
// user_edited, which tells the sync not to overwrite its name, group and
// description with the provider's values, so edits to aggregator
// categories persist across syncs.
func (s *Store) UpdateCategory(ctx context.Context, userID, id uuid.UUID, in CategoryInput) (domain.Category, error) {
	var out domain.Category
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		cur, err := getCategory(ctx, tx, userID, id, " FOR UPDATE OF c")
		if err != nil {
			return err
		}
		if cur.ReadOnly {
			return fmt.Errorf("update category %s: %w", id, ErrReadOnly)
		}
		groupID := cur.CategoryGroupID
		if in.SetGroup {
			if groupID, err = groupFor(ctx, tx, userID, in.Group); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE categories SET name = COALESCE($2, name), group_id = $3,
			description = COALESCE($4, description), user_edited = true, updated_at = now() WHERE id = $1`,
			id, in.Name, groupID, in.Description)
		if err != nil {
			return fmt.Errorf("update category %s: %w", id, err)
		}
		out, err = getCategory(ctx, tx, userID, id, "")
		return err
	})
	return out, err
}

// groupFor returns the id of the user's group with that name, creating a
// manual group when none exists; nil name means no group.
func groupFor(ctx context.Context, tx pgx.Tx, userID uuid.UUID, name *string) (*uuid.UUID, error) {
	if name == nil {
		return nil, nil
	}
	var id uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id FROM category_groups WHERE user_id = $1 AND name = $2
		ORDER BY provider = 'manual' DESC, created_at, id LIMIT 1`, userID, *name).Scan(&id)
	if err == nil {
		return &id, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("find category group %q: %w", *name, err)
	}
	err = tx.QueryRow(ctx, `INSERT INTO category_groups (user_id, name) VALUES ($1, $2)
		ON CONFLICT (user_id, provider, name) DO UPDATE SET name = excluded.name RETURNING id`, userID, *name).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("create category group %q: %w", *name, err)
	}
	return &id, nil
}

func getCategory(ctx context.Context, q querier, userID, id uuid.UUID, lock string) (domain.Category, error) {
	c, err := scanCategory(q.QueryRow(ctx, `SELECT `+categoryColumns+` FROM `+categoryFrom+` WHERE c.id = $1 AND c.user_id = $2`+lock, id, userID))
	if err != nil {
		return c, fmt.Errorf("get category %s: %w", id, err)
	}
	return c, nil
}

// categoriesOwned reports whether every id is one of the user's categories.
func categoriesOwned(ctx context.Context, q querier, userID uuid.UUID, ids []uuid.UUID) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM categories WHERE user_id = $1 AND id = ANY($2)`, userID, ids).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check categories: %w", err)
	}
	return n == len(uniqueIDs(ids)), nil
}

// AreCategoriesOwned reports whether every id is one of the user's categories,
// as the primary database holds them now.
func (s *Store) AreCategoriesOwned(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) (bool, error) {
	return categoriesOwned(ctx, s.pool, userID, ids)
}

// AreCategoriesOwned is AreCategoriesOwned inside the transaction.
func (t *Tx) AreCategoriesOwned(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) (bool, error) {
	return categoriesOwned(ctx, t.tx, userID, ids)
}
