package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// upsertSecurities stores the user's securities, in one statement, and
// returns their ids by provider security id. Caveat: secs must not list a
// provider security id twice (ApplyInvestments keeps the first).
func upsertSecurities(ctx context.Context, tx pgx.Tx, userID uuid.UUID, provider string, secs []domain.ReportedSecurity) (map[string]uuid.UUID, error) {
	ids := make(map[string]uuid.UUID, len(secs))
	if len(secs) == 0 {
		return ids, nil
	}
	pids, names, types, currencies := make([]string, len(secs)), make([]string, len(secs)), make([]string, len(secs)), make([]string, len(secs))
	symbols, prices := make([]*string, len(secs)), make([]*string, len(secs))
	for i, s := range secs {
		pids[i], symbols[i], names[i], types[i], currencies[i] = s.ProviderSecurityID, s.Symbol, s.Name, s.Type, s.Currency
		prices[i] = moneyText(s.ClosePrice)
	}
	rows, err := tx.Query(ctx, `
		INSERT INTO securities (user_id, provider, provider_security_id, symbol, name, type, close_price, currency)
		SELECT $1, $2, u.pid, u.symbol, u.name, u.type, u.price::numeric, NULLIF(u.currency, '')
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS u(pid, symbol, name, type, price, currency)
		ON CONFLICT (user_id, provider, provider_security_id) DO UPDATE SET symbol = excluded.symbol,
			name = excluded.name, type = excluded.type, close_price = excluded.close_price,
			currency = excluded.currency, updated_at = now()
		RETURNING provider_security_id, id`, userID, provider, pids, symbols, names, types, prices, currencies)
	if err != nil {
		return nil, fmt.Errorf("upsert %d securities: %w", len(secs), err)
	}
	var pid string
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&pid, &id}, func() error { ids[pid] = id; return nil }); err != nil {
		return nil, fmt.Errorf("upsert %d securities: %w", len(secs), err)
	}
	return ids, nil
}

// replaceHoldings makes the connection's stored holdings exactly hs: new and
// changed positions are upserted (in one statement; a position listed twice
// is stored as its last listing says) and positions no longer reported
// removed.
func replaceHoldings(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, hs []domain.Holding) error {
	hs = oneOfEach(hs, func(h *domain.Holding) [2]uuid.UUID { return [2]uuid.UUID{h.AccountID, h.SecurityID} }, true)
	n := len(hs)
	accounts, securities := make([]uuid.UUID, n), make([]uuid.UUID, n)
	quantities, costs, prices, values := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	currencies, asOf := make([]string, n), make([]*time.Time, n)
	for i := range hs {
		h := &hs[i]
		accounts[i], securities[i], currencies[i] = h.AccountID, h.SecurityID, h.Currency
		quantities[i], costs[i] = moneyText(&h.Quantity), moneyText(h.CostBasis)
		prices[i], values[i] = moneyText(&h.InstitutionPrice), moneyText(&h.InstitutionValue)
		if h.PriceAsOf != nil {
			asOf[i] = &h.PriceAsOf.Time
		}
	}
	_, err := tx.Exec(ctx, `
		WITH kept AS (
			INSERT INTO holdings (user_id, account_id, security_id, provider, quantity, cost_basis, institution_price,
				institution_value, currency, price_as_of)
			SELECT $1, u.account_id, u.security_id, $3, u.quantity::numeric, u.cost_basis::numeric,
				u.price::numeric, u.value::numeric, u.currency, u.as_of
			FROM unnest($4::uuid[], $5::uuid[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::date[])
				AS u(account_id, security_id, quantity, cost_basis, price, value, currency, as_of)
			ON CONFLICT (account_id, security_id, user_id) DO UPDATE SET quantity = excluded.quantity,
				cost_basis = excluded.cost_basis, institution_price = excluded.institution_price,
				institution_value = excluded.institution_value, currency = excluded.currency,
				price_as_of = excluded.price_as_of, updated_at = now()
			RETURNING id
		)
		DELETE FROM holdings h USING accounts a
		WHERE a.id = h.account_id AND a.bank_connection_id = $2 AND h.user_id = $1
			AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.id = h.id)`,
		conn.UserID, conn.ID, conn.Provider, accounts, securities, quantities, costs, prices, values, currencies, asOf)
	if err != nil {
		return fmt.Errorf("replace %d holdings: %w", n, err)
	}
	return nil
}

// moneyText is m as decimal text for a text[] parameter cast to numeric;
// nil stays NULL.
func moneyText(m *domain.Money) *string {
	if m == nil {
		return nil
	}
	s := m.String()
	return &s
}

// upsertInvestmentTransactions stores investment events by provider id, in
// one statement; an event listed twice is stored as its last listing says,
// and one stored already with the same values is left as it is.
func upsertInvestmentTransactions(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, its []domain.InvestmentTransaction) error {
	its = oneOfEach(its, func(t *domain.InvestmentTransaction) string { return t.ProviderID }, true)
	n := len(its)
	if n == 0 {
		return nil
	}
	accounts, securities := make([]uuid.UUID, n), make([]*uuid.UUID, n)
	pids, types, subtypes, currencies, descriptions := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	dates := make([]time.Time, n)
	quantities, prices, amounts, fees := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	for i := range its {
		t := &its[i]
		accounts[i], securities[i], pids[i], dates[i] = t.AccountID, t.SecurityID, t.ProviderID, t.Date.Time
		types[i], subtypes[i], currencies[i], descriptions[i] = t.Type, t.Subtype, t.Currency, t.Description
		quantities[i], prices[i], amounts[i], fees[i] = moneyText(&t.Quantity), moneyText(&t.Price), moneyText(&t.Amount), moneyText(t.Fees)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO investment_transactions (user_id, bank_connection_id, account_id, security_id, provider, provider_id,
			date, type, subtype, quantity, price, amount, fees, currency, description)
		SELECT $1, $2, u.account_id, u.security_id, $3, u.pid, u.date, u.type, u.subtype,
			u.quantity::numeric, u.price::numeric, u.amount::numeric, u.fees::numeric, u.currency, u.description
		FROM unnest($4::uuid[], $5::uuid[], $6::text[], $7::date[], $8::text[], $9::text[],
			$10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[])
			AS u(account_id, security_id, pid, date, type, subtype, quantity, price, amount, fees, currency, description)
		ON CONFLICT (bank_connection_id, provider_id, user_id) DO UPDATE SET account_id = excluded.account_id,
			security_id = excluded.security_id, date = excluded.date, type = excluded.type, subtype = excluded.subtype,
			quantity = excluded.quantity, price = excluded.price, amount = excluded.amount, fees = excluded.fees,
			currency = excluded.currency, description = excluded.description, updated_at = now()
		-- An event reported again unchanged (every sync re-reads the window)
		-- is not rewritten.
		WHERE (investment_transactions.account_id, investment_transactions.security_id, investment_transactions.date,
			investment_transactions.type, investment_transactions.subtype, investment_transactions.quantity,
			investment_transactions.price, investment_transactions.amount, investment_transactions.fees,
			investment_transactions.currency, investment_transactions.description)
			IS DISTINCT FROM (excluded.account_id, excluded.security_id, excluded.date, excluded.type, excluded.subtype,
			excluded.quantity, excluded.price, excluded.amount, excluded.fees, excluded.currency, excluded.description)`,
		conn.UserID, conn.ID, conn.Provider, accounts, securities, pids, dates, types, subtypes,
		quantities, prices, amounts, fees, currencies, descriptions)
	if err != nil {
		return fmt.Errorf("upsert %d investment transactions: %w", n, err)
	}
	return nil
}
