package storage

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// SyncedSecurity is a security as a sync stores it for a user.
type SyncedSecurity = domain.ReportedSecurity

// upsertSecurities stores the user's securities and returns their ids by
// provider security id.
func upsertSecurities(ctx context.Context, tx pgx.Tx, userID uuid.UUID, provider string, secs []SyncedSecurity) (map[string]uuid.UUID, error) {
	ids := make(map[string]uuid.UUID, len(secs))
	for _, s := range secs {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			INSERT INTO securities (user_id, provider, provider_security_id, symbol, name, type, close_price, currency)
			VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''))
			ON CONFLICT (user_id, provider, provider_security_id) DO UPDATE SET symbol = excluded.symbol,
				name = excluded.name, type = excluded.type, close_price = excluded.close_price,
				currency = excluded.currency, updated_at = now()
			RETURNING id`, userID, provider, s.ProviderSecurityID, s.Symbol, s.Name, s.Type, s.ClosePrice, s.Currency).Scan(&id)
		if err != nil {
			return nil, fmt.Errorf("upsert security %s: %w", s.ProviderSecurityID, err)
		}
		ids[s.ProviderSecurityID] = id
	}
	return ids, nil
}

// replaceHoldings makes the connection's stored holdings exactly hs: new and
// changed positions are upserted and positions no longer reported removed.
func replaceHoldings(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, hs []domain.Holding) error {
	keep := make([]uuid.UUID, 0, len(hs))
	for _, h := range hs {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `
			INSERT INTO holdings (user_id, account_id, security_id, provider, quantity, cost_basis, institution_price,
				institution_value, currency, price_as_of)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (account_id, security_id, user_id) DO UPDATE SET quantity = excluded.quantity,
				cost_basis = excluded.cost_basis, institution_price = excluded.institution_price,
				institution_value = excluded.institution_value, currency = excluded.currency,
				price_as_of = excluded.price_as_of, updated_at = now()
			RETURNING id`, conn.UserID, h.AccountID, h.SecurityID, conn.Provider, h.Quantity, h.CostBasis,
			h.InstitutionPrice, h.InstitutionValue, h.Currency, h.PriceAsOf).Scan(&id)
		if err != nil {
			return fmt.Errorf("upsert holding: %w", err)
		}
		keep = append(keep, id)
	}
	_, err := tx.Exec(ctx, `DELETE FROM holdings h USING accounts a
		WHERE a.id = h.account_id AND a.bank_connection_id = $1 AND NOT (h.id = ANY($2))`, conn.ID, keep)
	if err != nil {
		return fmt.Errorf("remove sold holdings: %w", err)
	}
	return nil
}

// upsertInvestmentTransactions stores investment events by provider id.
func upsertInvestmentTransactions(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, its []domain.InvestmentTransaction) error {
	batch := &pgx.Batch{}
	for _, t := range its {
		batch.Queue(`
			INSERT INTO investment_transactions (user_id, bank_connection_id, account_id, security_id, provider, provider_id,
				date, type, subtype, quantity, price, amount, fees, currency, description)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (bank_connection_id, provider_id, user_id) DO UPDATE SET account_id = excluded.account_id,
				security_id = excluded.security_id, date = excluded.date, type = excluded.type, subtype = excluded.subtype,
				quantity = excluded.quantity, price = excluded.price, amount = excluded.amount, fees = excluded.fees,
				currency = excluded.currency, description = excluded.description, updated_at = now()`,
			conn.UserID, conn.ID, t.AccountID, t.SecurityID, conn.Provider, t.ProviderID, t.Date.Time, t.Type, t.Subtype,
			t.Quantity, t.Price, t.Amount, t.Fees, t.Currency, t.Description)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("upsert investment transactions: %w", err)
	}
	return nil
}
