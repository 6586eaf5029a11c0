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

// ListCategories lists the user's categories by name.
func (s *Store) ListCategories(ctx context.Context, userID uuid.UUID) ([]domain.Category, error) {
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+categoryColumns+` FROM `+categoryFrom+` WHERE c.user_id = $1 ORDER BY c.name, c.id`, userID)
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

// GetCategory loads one of the user's categories.
func (s *Store) GetCategory(ctx context.Context, userID, id uuid.UUID) (domain.Category, error) {
	c, err := scanCategory(s.reader(ctx).QueryRow(ctx, `SELECT `+categoryColumns+` FROM `+categoryFrom+` WHERE c.id = $1 AND c.user_id = $2`, id, userID))
	if err != nil {
		return c, fmt.Errorf("get category %s: %w", id, err)
	}
	return c, nil
}

// ListCategoryGroups lists the user's category groups by name.
func (s *Store) ListCategoryGroups(ctx context.Context, userID uuid.UUID) ([]domain.CategoryGroup, error) {
	rows, err := s.reader(ctx).Query(ctx, `SELECT id, user_id, name, provider FROM category_groups WHERE user_id = $1 ORDER BY name, id`, userID)
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
