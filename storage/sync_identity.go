package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// A re-link (new credentials on a connection: a new Plaid Item, a new
// Enable Banking session) may re-issue every account and transaction id.
// A sync then matches what the provider reports to what is stored, so that
// nothing is stored twice and the stored rows keep their ids, categories,
// rule outcomes and transfer pairs (docs/relink.md):
//
//   - applyAccountIdentities, on every sync but only when the report names an
//     account id the connection has not stored while a stored account is
//     no longer reported: first by the provider's persistent identity,
//     then by type, subtype, mask, currency and name, each only when
//     exactly one stored and one reported account fit. The stored account
//     takes the new provider id.
//   - The stored transactions of each re-matched account become relink
//     candidates (relink_candidates, migration 00025) and the connection
//     is marked relinking. Only while it is does a sync match
//     transactions: a
//     reported row whose provider id is unknown takes the id of the one
//     candidate of its account with the same amount, status and currency,
//     dated within two days, with a similar description.
//   - When the sync finishes, the candidates no reported row matched,
//     dated within the dates the new link reported for their account, are
//     marked deleted, as a provider's removals are; older ones are history
//     the new link does not reach, and stay.

// relinkDays is how far apart the dates of a stored transaction and the
// re-issued one it matches may be.
const relinkDays = 2

// minDescriptionSimilarity is the least similarity (descriptionSimilarity) of their
// descriptions a stored and a re-issued transaction must have to match.
const minDescriptionSimilarity = 0.5

// storedAccount is a connection's stored account as matching reads it.
type storedAccount struct {
	id                                 uuid.UUID
	providerID, persistentID           string
	typ, subtype, mask, currency, name string
}

// accountKey is what matches accounts without a persistent identity.
type accountKey struct{ typ, subtype, mask, currency, name string }

// applyAccountIdentities runs before a sync's accounts are stored: it
// gives stored accounts the ids the provider re-issued them under
// (pairAccounts), makes the transactions of those accounts relink
// candidates, and records whether the connection has candidates (the
// sync then matches its transactions). It returns the reported accounts
// whose persistent identity is not stored yet (recordPersistentIDs). An
// ordinary sync costs it one statement.
func (ss *SyncSession) applyAccountIdentities(ctx context.Context, tx pgx.Tx, reported []domain.ReportedAccount) ([]domain.ReportedAccount, error) {
	stored, relinking, err := storedAccounts(ctx, tx, ss.conn)
	if err != nil {
		return nil, err
	}
	pairs := pairAccounts(stored, reported)
	if len(pairs) > 0 {
		if err := ss.remapAccounts(ctx, tx, pairs); err != nil {
			return nil, err
		}
		relinking = true
	}
	ss.relinking = relinking
	persistent := make(map[string]string, len(stored))
	for _, a := range stored {
		pid := a.providerID
		if p, ok := pairs[a.id]; ok {
			pid = p
		}
		persistent[pid] = a.persistentID
	}
	var stale []domain.ReportedAccount
	for _, a := range reported {
		if a.PersistentID != "" && persistent[a.ProviderAccountID] != a.PersistentID {
			stale = append(stale, a)
		}
	}
	return stale, nil
}

// remapAccounts gives stored accounts their re-issued provider ids (pairs:
// by account id) and makes their stored transactions relink candidates.
func (ss *SyncSession) remapAccounts(ctx context.Context, tx pgx.Tx, pairs map[uuid.UUID]string) error {
	ids, pids := make([]uuid.UUID, 0, len(pairs)), make([]string, 0, len(pairs))
	for id, pid := range pairs {
		ids, pids = append(ids, id), append(pids, pid)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE accounts a SET provider_account_id = m.pid, updated_at = now()
		FROM unnest($3::uuid[], $4::text[]) AS m(id, pid)
		WHERE a.id = m.id AND a.user_id = $2 AND a.bank_connection_id = $1`, ss.conn.ID, ss.conn.UserID, ids, pids); err != nil {
		return fmt.Errorf("give re-issued account ids: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO relink_candidates (user_id, bank_connection_id, account_id, transaction_id, amount, tx_date)
		SELECT t.user_id, t.bank_connection_id, t.account_id, t.id, t.amount, t.tx_date FROM transactions t
		WHERE t.account_id = ANY($1) AND t.user_id = $2 AND t.bank_connection_id = $3 AND t.status <> 'deleted'
		ON CONFLICT DO NOTHING`, ids, ss.conn.UserID, ss.conn.ID); err != nil {
		return fmt.Errorf("record relink candidates: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE bank_connections SET relinking = true WHERE id = $1`, ss.conn.ID); err != nil {
		return fmt.Errorf("mark the connection relinking: %w", err)
	}
	return nil
}

// recordPersistentIDs stores the persistent identity of each given
// account, once the accounts are stored.
func recordPersistentIDs(ctx context.Context, tx pgx.Tx, conn domain.BankConnection, accounts []domain.ReportedAccount) error {
	if len(accounts) == 0 {
		return nil
	}
	pids, persistent := make([]string, len(accounts)), make([]string, len(accounts))
	for i, a := range accounts {
		pids[i], persistent[i] = a.ProviderAccountID, a.PersistentID
	}
	_, err := tx.Exec(ctx, `
		UPDATE accounts a SET provider_persistent_id = r.p
		FROM unnest($3::text[], $4::text[]) AS r(pid, p)
		WHERE a.bank_connection_id = $1 AND a.user_id = $2 AND a.provider_account_id = r.pid`, conn.ID, conn.UserID, pids, persistent)
	if err != nil {
		return fmt.Errorf("record persistent account ids: %w", err)
	}
	return nil
}

// storedAccounts reads the connection's stored accounts, and whether it
// has relink candidates (bank_connections.relinking), in one statement.
func storedAccounts(ctx context.Context, tx pgx.Tx, conn domain.BankConnection) ([]storedAccount, bool, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, provider_account_id, COALESCE(provider_persistent_id, ''), COALESCE(type, ''), COALESCE(subtype, ''),
			COALESCE(mask, ''), currency, name, (SELECT c.relinking FROM bank_connections c WHERE c.id = $1)
		FROM accounts WHERE bank_connection_id = $1 AND user_id = $2 AND NOT manual`, conn.ID, conn.UserID)
	if err != nil {
		return nil, false, fmt.Errorf("read stored accounts: %w", err)
	}
	var out []storedAccount
	var a storedAccount
	var relinking bool
	_, err = pgx.ForEachRow(rows, []any{&a.id, &a.providerID, &a.persistentID, &a.typ, &a.subtype, &a.mask, &a.currency, &a.name, &relinking}, func() error {
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("read stored accounts: %w", err)
	}
	return out, relinking, nil
}

// pairAccounts pairs stored accounts the report no longer names with
// reported accounts unknown to the connection: first on the persistent
// identity, then on accountKey, each only where exactly one account of
// either side fits. Two accounts whose persistent identities are both
// known and differ never pair. It returns provider ids by stored account id.
func pairAccounts(stored []storedAccount, reported []domain.ReportedAccount) map[uuid.UUID]string {
	known := make(map[string]bool, len(stored))
	for _, s := range stored {
		known[s.providerID] = true
	}
	named := make(map[string]bool, len(reported))
	var fresh []domain.ReportedAccount
	for _, r := range reported {
		named[r.ProviderAccountID] = true
		if !known[r.ProviderAccountID] {
			fresh = append(fresh, r)
		}
	}
	var orphans []storedAccount
	for _, s := range stored {
		if !named[s.providerID] {
			orphans = append(orphans, s)
		}
	}
	if len(fresh) == 0 || len(orphans) == 0 {
		return nil
	}
	pairs := map[uuid.UUID]string{}
	taken := map[string]bool{}
	pairUnique(orphans, fresh, pairs, taken,
		func(s storedAccount) string { return s.persistentID },
		func(r domain.ReportedAccount) string { return r.PersistentID })
	pairUnique(orphans, fresh, pairs, taken,
		func(s storedAccount) accountKey { return accountKey{s.typ, s.subtype, s.mask, s.currency, s.name} },
		func(r domain.ReportedAccount) accountKey {
			return accountKey{r.Type, r.Subtype, r.Mask, r.Currency, r.Name}
		})
	return pairs
}

// pairUnique adds to pairs every stored and reported account not paired
// yet that share a non-zero key no other unpaired account of either side
// has, unless both have persistent identities that differ.
func pairUnique[K comparable](orphans []storedAccount, fresh []domain.ReportedAccount, pairs map[uuid.UUID]string, taken map[string]bool,
	storedKey func(storedAccount) K, reportedKey func(domain.ReportedAccount) K) {
	var zero K
	byKey := map[K][]int{}
	for i, s := range orphans {
		if _, done := pairs[s.id]; !done {
			if k := storedKey(s); k != zero {
				byKey[k] = append(byKey[k], i)
			}
		}
	}
	reportedBy := map[K][]int{}
	for j, r := range fresh {
		if !taken[r.ProviderAccountID] {
			if k := reportedKey(r); k != zero {
				reportedBy[k] = append(reportedBy[k], j)
			}
		}
	}
	for k, js := range reportedBy {
		is := byKey[k]
		if len(js) != 1 || len(is) != 1 {
			continue
		}
		s, r := orphans[is[0]], fresh[js[0]]
		if s.persistentID != "" && r.PersistentID != "" && s.persistentID != r.PersistentID {
			continue
		}
		pairs[s.id] = r.ProviderAccountID
		taken[r.ProviderAccountID] = true
	}
}

// relinkCandidate is a stored transaction a reported one may be.
type relinkCandidate struct {
	row  int
	id   uuid.UUID
	gap  int
	desc [3]string
	// The stored row's details that tell apart transactions equal in
	// amount and description (dates as text, empty when null).
	authorized, posted, channel, check string
	postedAt                           *time.Time
}

// agreement counts the details in which row t and candidate c agree.
func (c *relinkCandidate) agreement(t *domain.Transaction) int {
	n := 0
	for _, f := range [...]struct{ a, b string }{
		{dateText(t.AuthorizedDate), c.authorized}, {dateText(t.PostedDate), c.posted},
		{deref(t.PaymentChannel), c.channel}, {deref(t.CheckNumber), c.check},
	} {
		if f.a == f.b {
			n++
		}
	}
	if (t.PostedAt == nil && c.postedAt == nil) || (t.PostedAt != nil && c.postedAt != nil && t.PostedAt.Equal(*c.postedAt)) {
		n++
	}
	return n
}

// dateText is d as text, empty for nil.
func dateText(d *domain.Date) string {
	if d == nil {
		return ""
	}
	return d.String()
}

// matchTransactions gives the relink candidates that rows re-issue the
// rows' provider ids (see the top of this file), then drops from the
// candidates every stored row the page reports. Called for each page of a
// sync while the connection has candidates, before the page is stored.
func (ss *SyncSession) matchTransactions(ctx context.Context, tx pgx.Tx, rows []domain.Transaction) error {
	if len(rows) == 0 {
		return nil
	}
	cands, err := ss.relinkCandidates(ctx, tx, rows)
	if err != nil {
		return err
	}
	pairs := pairTransactions(rows, cands)
	if len(pairs) > 0 {
		ids, pids := make([]uuid.UUID, 0, len(pairs)), make([]string, 0, len(pairs))
		for id, row := range pairs {
			ids, pids = append(ids, id), append(pids, rows[row].ProviderID)
		}
		// Rows are found by primary key from the array (a join with the
		// unnested pairs lets stale statistics scan the whole table).
		if _, err := tx.Exec(ctx, `
			UPDATE transactions t SET provider_id = ($3::text[])[array_position($2::uuid[], t.id)], updated_at = now()
			WHERE t.id = ANY($2::uuid[]) AND t.user_id = $1`, ss.conn.UserID, ids, pids); err != nil {
			return fmt.Errorf("give re-issued transaction ids: %w", err)
		}
	}
	pids := make([]string, len(rows))
	for i := range rows {
		pids[i] = rows[i].ProviderID
	}
	if _, err := tx.Exec(ctx, `
		DELETE FROM relink_candidates WHERE user_id = $2 AND transaction_id = ANY (ARRAY(
			SELECT (SELECT t.id FROM transactions t WHERE t.bank_connection_id = $1 AND t.provider_id = r.pid)
			FROM unnest($3::text[]) AS r(pid)))`, ss.conn.ID, ss.conn.UserID, pids); err != nil {
		return fmt.Errorf("drop reported relink candidates: %w", err)
	}
	return nil
}

// relinkCandidates returns, for each row whose provider id the connection
// has not stored, the candidates of its account with its amount, status
// and currency dated within relinkDays of it, by index on the candidates.
func (ss *SyncSession) relinkCandidates(ctx context.Context, tx pgx.Tx, rows []domain.Transaction) ([]relinkCandidate, error) {
	n := len(rows)
	pids, accts, amounts, statuses, dates, currencies := make([]string, n), make([]uuid.UUID, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	for i := range rows {
		t := &rows[i]
		if d := t.Day(); d != nil {
			dates[i] = d.String()
		}
		pids[i], accts[i], amounts[i], statuses[i], currencies[i] = t.ProviderID, t.AccountID, t.Amount.String(), t.Status, t.Currency
	}
	q, err := tx.Query(ctx, relinkSQL,
		ss.conn.ID, ss.conn.UserID, pids, accts, amounts, statuses, dates, currencies, relinkDays)
	if err != nil {
		return nil, fmt.Errorf("find relink candidates: %w", err)
	}
	var out []relinkCandidate
	var c relinkCandidate
	_, err = pgx.ForEachRow(q, []any{&c.row, &c.id, &c.gap, &c.desc[0], &c.desc[1], &c.desc[2],
		&c.authorized, &c.posted, &c.channel, &c.check, &c.postedAt}, func() error {
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find relink candidates: %w", err)
	}
	return out, nil
}

// pairTransactions picks, for each row, the candidate whose description
// is most similar (at least minDescriptionSimilarity), then that agrees
// in most details (agreement), then nearest in date; a row whose best two
// are equally good, and a candidate that is the best of two rows, pair
// with nothing (a wrong match is worse than a new row). It returns row
// indices by stored transaction id.
func pairTransactions(rows []domain.Transaction, cands []relinkCandidate) map[uuid.UUID]int {
	type choice struct {
		id        uuid.UUID
		score     matchScore
		ambiguous bool
	}
	best := map[int]*choice{}
	for i := range cands {
		c := &cands[i]
		t := &rows[c.row]
		sc := matchScore{
			sim:   descriptionSimilarity([3]string{t.Summary, deref(t.MerchantName), deref(t.OriginalDescription)}, c.desc),
			agree: c.agreement(t), gap: max(c.gap, -c.gap),
		}
		if sc.sim < minDescriptionSimilarity {
			continue
		}
		b, ok := best[c.row]
		switch {
		case !ok:
			best[c.row] = &choice{id: c.id, score: sc}
		case sc.better(b.score):
			*b = choice{id: c.id, score: sc}
		case sc == b.score && c.id != b.id:
			b.ambiguous = true
		}
	}
	claims := map[uuid.UUID]int{}
	for _, b := range best {
		if !b.ambiguous {
			claims[b.id]++
		}
	}
	out := map[uuid.UUID]int{}
	for row, b := range best {
		if !b.ambiguous && claims[b.id] == 1 {
			out[b.id] = row
		}
	}
	return out
}

// matchScore ranks a candidate for a row.
type matchScore struct {
	sim   float64
	agree int
	gap   int
}

// better reports whether s ranks above o: more similar description, then
// more details agreeing, then nearer dates.
func (s matchScore) better(o matchScore) bool {
	if s.sim != o.sim {
		return s.sim > o.sim
	}
	if s.agree != o.agree {
		return s.agree > o.agree
	}
	return s.gap < o.gap
}

// descriptionSimilarity is the highest word-set similarity (Jaccard: the
// words both have over the words either has, case and punctuation
// ignored) between any of a's descriptions and any of b's that are not
// empty; 1 when neither side has one, 0 when only one has.
func descriptionSimilarity(a, b [3]string) float64 {
	var best float64
	anyA, anyB := false, false
	for _, x := range a {
		wx := words(x)
		if len(wx) == 0 {
			continue
		}
		anyA = true
		for _, y := range b {
			wy := words(y)
			if len(wy) == 0 {
				continue
			}
			anyB = true
			best = max(best, jaccard(wx, wy))
		}
	}
	if !anyA {
		for _, y := range b {
			anyB = anyB || len(words(y)) > 0
		}
		if !anyB {
			return 1
		}
	}
	return best
}

// words returns the lower-cased words (letters and digits) of s.
func words(s string) map[string]bool {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(fields) == 0 {
		return nil
	}
	out := make(map[string]bool, len(fields))
	for _, f := range fields {
		out[f] = true
	}
	return out
}

// jaccard is |a ∩ b| / |a ∪ b| of two non-empty word sets.
func jaccard(a, b map[string]bool) float64 {
	both := 0
	for w := range a {
		if b[w] {
			both++
		}
	}
	return float64(both) / float64(len(a)+len(b)-both)
}

// finishRelink ends a connection's re-link when a sync of it succeeded:
// the relink candidates no reported row matched are marked deleted where
// they are dated on or after the earliest date the new link reported for
// their account (older ones are history the new link does not reach),
// and the candidates are dropped. It returns how many rows it marked; a
// connection that is not relinking marks nothing (finishSyncTx calls it
// only for one that was when the outcome's transaction locked it). The earliest date per
// account is computed once (MATERIALIZED), not per candidate, from the
// candidates as they were before the statement.
func finishRelink(ctx context.Context, tx pgx.Tx, connectionID uuid.UUID) (int64, error) {
	tag, err := tx.Exec(ctx, `UPDATE bank_connections SET relinking = false WHERE id = $1 AND relinking`, connectionID)
	if err != nil || tag.RowsAffected() == 0 {
		if err != nil {
			return 0, fmt.Errorf("finish relink: %w", err)
		}
		return 0, nil
	}
	tag, err = tx.Exec(ctx, `
		WITH gone AS (
			DELETE FROM relink_candidates WHERE bank_connection_id = $1
			RETURNING user_id, account_id, transaction_id, tx_date),
		reach AS MATERIALIZED (
			SELECT a.account_id, a.user_id, (SELECT min(t.tx_date) FROM transactions t
				WHERE t.account_id = a.account_id AND t.user_id = a.user_id AND t.status <> 'deleted'
					AND NOT EXISTS (SELECT 1 FROM relink_candidates x WHERE x.transaction_id = t.id AND x.user_id = t.user_id)) AS since
			FROM (SELECT DISTINCT account_id, user_id FROM gone) a)
		UPDATE transactions t SET status = 'deleted', updated_at = now()
		FROM gone c JOIN reach r ON r.account_id = c.account_id AND r.user_id = c.user_id
		WHERE t.id = c.transaction_id AND t.user_id = c.user_id
			AND r.since IS NOT NULL AND c.tx_date >= r.since AND t.status <> 'deleted'`, connectionID)
	if err != nil {
		return 0, fmt.Errorf("finish relink: %w", err)
	}
	return tag.RowsAffected(), nil
}

// relinkSQL finds relink candidates (relinkCandidates). The look-up per
// reported row is a LATERAL subquery kept whole (OFFSET 0), so that it
// stays on the candidates' index and the transactions' primary key
// whatever the statistics say: a re-link's first sync outgrows them, and a
// plan made for a few rows would join every reported row with every
// stored one. Whether a row's provider id is stored is a scalar subquery
// for the same reason: one probe of the unique index per row.
const relinkSQL = `
SELECT u.i::int - 1, m.transaction_id, m.gap, m.summary, m.merchant, m.descr,
	m.authorized, m.posted, m.channel, m.check_number, m.posted_at
FROM unnest($3::text[], $4::uuid[], $5::numeric[], $6::text[], $7::date[], $8::text[])
	WITH ORDINALITY AS u(pid, acct, amount, status, d, currency, i)
CROSS JOIN LATERAL (
	SELECT c.transaction_id, c.tx_date - u.d AS gap, t.summary, COALESCE(t.provider_merchant_name, '') AS merchant,
		COALESCE(t.original_description, '') AS descr, COALESCE(t.authorized_date::text, '') AS authorized,
		COALESCE(t.posted_date::text, '') AS posted, COALESCE(t.payment_channel, '') AS channel,
		COALESCE(t.check_number, '') AS check_number, t.posted_at
	FROM relink_candidates c JOIN transactions t ON t.id = c.transaction_id AND t.user_id = c.user_id
	WHERE c.bank_connection_id = $1 AND c.user_id = $2 AND c.account_id = u.acct AND c.amount = u.amount
		AND c.tx_date BETWEEN u.d - $9::int AND u.d + $9::int AND t.status = u.status AND t.currency = u.currency
	OFFSET 0) m
WHERE (SELECT x.id FROM transactions x WHERE x.bank_connection_id = $1 AND x.provider_id = u.pid) IS NULL`
