package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// OpsConnection is one row of the ops console: a connection of any user,
// its health and how many of its transactions are stored.
type OpsConnection struct {
	domain.BankConnection
	Health       ConnectionHealth
	Transactions int64
}

// OpsFilter selects and pages the connections OpsConnections lists.
type OpsFilter struct {
	// Provider and Status, when not empty, keep the connections of that
	// provider, in that status (domain.Connection*). They are compared as
	// given: the caller validates them.
	Provider, Status string
	// After, when not zero, starts the listing after that position (the
	// Next of the previous page).
	After Keyset
	// Limit is the most connections a page lists (at least 1).
	Limit int
}

// OpsPage is one page of OpsConnections: the connections, in creation
// order, and Next, the position after the last of them when more follow
// (zero when none do).
type OpsPage struct {
	Connections []OpsConnection
	Next        Keyset
}

// ListOpsConnections lists the connections of every user for ops that pass
// the filter, in creation order (then id), one page at a time: a page
// seeks past the previous one's last (created_at, id) through the index on
// both, never skipping rows with OFFSET. Caveat: it counts each listed
// connection's stored transactions (an index-only scan per connection),
// which takes a while for connections of millions of rows.
func (s *Store) ListOpsConnections(ctx context.Context, f OpsFilter) (OpsPage, error) {
	limit := max(f.Limit, 1)
	var w where
	if f.Provider != "" {
		w.add("c.provider = ?", f.Provider)
	}
	if f.Status != "" {
		w.add("c.status = ?", f.Status)
	}
	if !f.After.IsZero() {
		w.add("(c.created_at, c.id) > (?, ?)", f.After.Date, f.After.ID)
	}
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+connectionColumns+`,
    (SELECT count(*) FROM transactions t WHERE t.bank_connection_id = c.id)
FROM bank_connections c WHERE `+w.sql()+` ORDER BY c.created_at, c.id LIMIT `+w.arg(limit+1), w.args...)
	if err != nil {
		return OpsPage{}, fmt.Errorf("list ops connections: %w", err)
	}
	var page OpsPage
	var conns []domain.BankConnection
	for rows.Next() {
		var oc OpsConnection
		c, err := scanConnection(countingRow{rows, &oc.Transactions})
		if err != nil {
			rows.Close()
			return OpsPage{}, fmt.Errorf("list ops connections: %w", err)
		}
		oc.BankConnection = c
		page.Connections = append(page.Connections, oc)
		conns = append(conns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return OpsPage{}, fmt.Errorf("list ops connections: %w", err)
	}
	if len(page.Connections) > limit {
		page.Connections, conns = page.Connections[:limit], conns[:limit]
		last := conns[limit-1]
		page.Next = Keyset{Date: last.CreatedAt, ID: last.ID}
	}
	health, err := s.GetConnectionHealth(ctx, conns)
	if err != nil {
		return OpsPage{}, err
	}
	for i := range page.Connections {
		page.Connections[i].Health = health[page.Connections[i].ID]
	}
	return page, nil
}

// GetOpsConnection returns one connection of any user for ops, with its
// health and stored transactions; storage.ErrNotFound when there is none.
func (s *Store) GetOpsConnection(ctx context.Context, id uuid.UUID) (OpsConnection, error) {
	var oc OpsConnection
	c, err := scanConnection(countingRow{s.reader(ctx).QueryRow(ctx, `SELECT `+connectionColumns+`,
    (SELECT count(*) FROM transactions t WHERE t.bank_connection_id = c.id)
FROM bank_connections c WHERE c.id = $1`, id), &oc.Transactions})
	if err != nil {
		return oc, fmt.Errorf("get ops connection %s: %w", id, err)
	}
	oc.BankConnection = c
	health, err := s.GetConnectionHealth(ctx, []domain.BankConnection{c})
	if err != nil {
		return oc, err
	}
	oc.Health = health[c.ID]
	return oc, nil
}

// countingRow scans a connection row followed by one more column.
type countingRow struct {
	row   interface{ Scan(...any) error }
	extra any
}

// Scan scans the connection's columns and the extra one.
func (r countingRow) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra)...) }
