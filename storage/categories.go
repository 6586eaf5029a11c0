package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

const categoryColumns = `c.id, c.user_id, c.provider, c.provider_id, c.name, g.name, c.group_id,
	c.description, c.read_only, c.user_edited`

const categoryFrom = `categories c LEFT JOIN category_groups g ON g.id = c.group_id`

func scanCategory(row pgx.Row) (domain.Category, error) {
	var c domain.Category
	var providerID, group *string
	err := row.Scan(&c.ID, &c.UserID, &c.Provider, &providerID, &c.Name, &group, &c.CategoryGroupID,
		&c.Description, &c.ReadOnly, &c.UserEdited)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	c.ProviderID, c.Group = deref(providerID), deref(group)
	return c, err
}

// ListCategories lists the categories the scope can see, by name: all the
// user's for an unscoped credential; for a scoped one, the manual ones and
// those of the providers of its accounts (Scope.providerVisible).
func (s *Store) ListCategories(ctx context.Context, sc Scope) ([]domain.Category, error) {
	var w where
	w.add("c.user_id = ?", sc.UserID)
	w.providerVisible("c.provider", sc)
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+categoryColumns+` FROM `+categoryFrom+` WHERE `+w.sql()+` ORDER BY c.name, c.id`, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list categories: %w", err)
	}
	defer rows.Close()
	var out []domain.Category
	for rows.Next() {
		c, err := scanCategory(rows)
		if err != nil {
			return nil, fmt.Errorf("list categories: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// GetCategory loads one of the categories the scope can see; ErrNotFound
// for one it cannot, exactly as for a missing one.
func (s *Store) GetCategory(ctx context.Context, sc Scope, id uuid.UUID) (domain.Category, error) {
	var w where
	w.add("c.id = ?", id)
	w.add("c.user_id = ?", sc.UserID)
	w.providerVisible("c.provider", sc)
	c, err := scanCategory(s.reader(ctx).QueryRow(ctx, `SELECT `+categoryColumns+` FROM `+categoryFrom+` WHERE `+w.sql(), w.args...))
	if err != nil {
		return c, fmt.Errorf("get category %s: %w", id, err)
	}
	return c, nil
}

// ListCategoryGroups lists the category groups the scope can see, by
// name, under the rule of ListCategories.
func (s *Store) ListCategoryGroups(ctx context.Context, sc Scope) ([]domain.CategoryGroup, error) {
	var w where
	w.add("user_id = ?", sc.UserID)
	w.providerVisible("provider", sc)
	rows, err := s.reader(ctx).Query(ctx, `SELECT id, user_id, name, provider FROM category_groups WHERE `+w.sql()+` ORDER BY name, id`, w.args...)
	if err != nil {
		return nil, fmt.Errorf("list category groups: %w", err)
	}
	defer rows.Close()
	var out []domain.CategoryGroup
	for rows.Next() {
		var g domain.CategoryGroup
		if err := rows.Scan(&g.ID, &g.UserID, &g.Name, &g.Provider); err != nil {
			return nil, fmt.Errorf("list category groups: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// ListCategoriesByID loads the user's categories with the given ids, by name.
func (s *Store) ListCategoriesByID(ctx context.Context, userID uuid.UUID, ids []uuid.UUID) ([]domain.Category, error) {
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+categoryColumns+` FROM `+categoryFrom+
		` WHERE c.user_id = $1 AND c.id = ANY($2) ORDER BY c.name, c.id`, userID, ids)
	if err != nil {
		return nil, fmt.Errorf("categories by id: %w", err)
	}
	defer rows.Close()
	var out []domain.Category
	for rows.Next() {
		c, err := scanCategory(rows)
		if err != nil {
			return nil, fmt.Errorf("categories by id: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("categories by id: %w", err)
	}
	return out, nil
}
