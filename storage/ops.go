package storage

import (
	"context"
	"fmt"

	"github.com/finsync/finsync/domain"
)

// OpsConnection is one row of the ops console: a connection of any user,
// its health and how many of its transactions are stored.
type OpsConnection struct {
	domain.BankConnection
	Health       ConnectionHealth
	Transactions int64
}

// OpsConnections lists the connections of every user for ops, in creation
// order, at most limit of them. Caveat: it counts each connection's stored
// transactions (an index-only scan per connection), which takes a while
// for connections of millions of rows.
func (s *Store) OpsConnections(ctx context.Context, limit int) ([]OpsConnection, error) {
	rows, err := s.reader(ctx).Query(ctx, `SELECT `+connectionColumns+`,
    (SELECT count(*) FROM transactions t WHERE t.bank_connection_id = c.id)
FROM bank_connections c ORDER BY c.created_at, c.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list ops connections: %w", err)
	}
	var out []OpsConnection
	var conns []domain.BankConnection
	for rows.Next() {
		var oc OpsConnection
		c, err := scanConnection(countingRow{rows, &oc.Transactions})
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list ops connections: %w", err)
		}
		oc.BankConnection = c
		out = append(out, oc)
		conns = append(conns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list ops connections: %w", err)
	}
	health, err := s.ConnectionHealth(ctx, conns)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Health = health[out[i].ID]
	}
	return out, nil
}

// countingRow scans a connection row followed by one more column.
type countingRow struct {
	row   interface{ Scan(...any) error }
	extra any
}

// Scan scans the connection's columns and the extra one.
func (r countingRow) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra)...) }
