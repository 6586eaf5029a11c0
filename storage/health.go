package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/domain"
)

// Circuit breaker states as stored and shown by the API.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerReport is one circuit breaker of one worker process as it saw it.
type BreakerReport struct {
	// Provider names the guarded provider; InstitutionID is empty for the
	// provider-wide breaker.
	Provider      string
	InstitutionID string
	// State is BreakerClosed, BreakerOpen or BreakerHalfOpen.
	State string
	// ConsecutiveFailures is the breaker's current run of counted failures.
	ConsecutiveFailures int
	// RetryAfter is, for an open breaker, the time left before it lets a
	// probe through.
	RetryAfter time.Duration
}

// breakerReportWindow is how far back from a breaker's latest report the
// reports of other processes still count: a process that stopped
// reporting long before (it died, or no longer calls the provider) no
// longer decides what the breaker shows.
const breakerReportWindow = 10 * time.Minute

// breakerRetention is how long a report is kept once no longer refreshed.
const breakerRetention = 7 * 24 * time.Hour

// SaveBreakerStates records the breakers of one process (holder), in one
// round trip, and drops reports nobody refreshed for a week. Caveat: the
// open breaker's end is computed with the database's clock from
// RetryAfter, so a slow round trip shortens it by that much.
func (s *Store) SaveBreakerStates(ctx context.Context, holder uuid.UUID, reports []BreakerReport) error {
	if len(reports) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range reports {
		state := r.State
		if state != BreakerOpen && state != BreakerHalfOpen {
			state = BreakerClosed
		}
		var openFor *float64
		if state == BreakerOpen {
			secs := r.RetryAfter.Seconds()
			openFor = &secs
		}
		b.Queue(`
INSERT INTO provider_breakers (provider, institution_id, holder, state, consecutive_failures, open_until, updated_at)
VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::float8), now())
ON CONFLICT (provider, institution_id, holder) DO UPDATE SET
    state = EXCLUDED.state, consecutive_failures = EXCLUDED.consecutive_failures,
    open_until = EXCLUDED.open_until, updated_at = EXCLUDED.updated_at`,
			r.Provider, r.InstitutionID, holder, state, r.ConsecutiveFailures, openFor)
	}
	b.Queue(`DELETE FROM provider_breakers WHERE updated_at < now() - make_interval(secs => $1::float8)`, breakerRetention.Seconds())
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("save %d breaker states: %w", len(reports), err)
	}
	return nil
}

// ConnectionHealth is what ops and API clients see of how a connection's
// syncs are going.
type ConnectionHealth struct {
	// LastSuccessfulSyncAt and NextSyncAt are the connection's.
	LastSuccessfulSyncAt *time.Time
	NextSyncAt           *time.Time
	// Breaker is the worse of the provider-wide breaker's state and the
	// connection's institution's, as the workers last reported them
	// (BreakerClosed when none did).
	Breaker string
	// QuotaRemaining is the fewest calls the provider still allows on any
	// of the connection's accounts and endpoints in the current quota
	// window, as the provider last reported it; nil when the provider
	// reported none for this connection (it has no such quota, or every
	// window reported has reset).
	QuotaRemaining *int
	// ConsecutiveFailures counts the failed sync attempts since the last
	// successful sync.
	ConsecutiveFailures int
	// HeldBackUntil and HeldBackReason (one of the HeldBack* reasons) are
	// set while a worker holds the connection's sync back (HoldBack); both
	// are nil once that time has passed or a sync ran.
	HeldBackUntil  *time.Time
	HeldBackReason *string
	// ConsentExpiresAt is when the user's consent to the provider ends, as
	// the provider reported it at the last successful sync; nil when it
	// reports none (or no sync has succeeded since a re-auth).
	ConsentExpiresAt *time.Time
	// Action is what the operator's app should do about the connection now
	// (one of the Action* values; connectionAction decides).
	Action string
}

// What the operator's app should do about a connection now
// (ConnectionHealth.Action).
const (
	// ActionNone: nothing; its syncs go as scheduled.
	ActionNone = "none"
	// ActionReauth: ask the user to link the bank again (`connections
	// reauth`): its consent has ended, or the provider asks for the user.
	ActionReauth = "reauth"
	// ActionWait: nothing yet; the sync is held back or failing for a
	// while (a quota, a rate limit, an open breaker, a provider outage)
	// and resumes by itself.
	ActionWait = "wait"
	// ActionContactSupport: the provider refuses the connection for a
	// reason no wait or re-link mends (bad credentials or a bad request).
	ActionContactSupport = "contact_support"
)

// connectionAction decides a connection's Action from its status, the
// class of its last provider error, its consent's end, whether its sync
// is held back and its breaker's state, as of now.
func connectionAction(status string, errorClass *string, consentEnds *time.Time, heldBack bool, breaker string, now time.Time) string {
	class := deref(errorClass)
	switch {
	case status == domain.ConnectionDisabled:
		return ActionNone
	case consentEnds != nil && !consentEnds.After(now), status == domain.ConnectionError && class == "reauth_required":
		return ActionReauth
	case status == domain.ConnectionError && class == "permanent":
		return ActionContactSupport
	case heldBack, breaker == BreakerOpen, status == domain.ConnectionError:
		return ActionWait
	}
	return ActionNone
}

// breakerRank orders states from best to worst.
func breakerRank(state string) int {
	switch state {
	case BreakerOpen:
		return 2
	case BreakerHalfOpen:
		return 1
	}
	return 0
}

// breakerKey names one breaker.
type breakerKey struct{ provider, institution string }

// GetConnectionHealth returns the health of each given connection, by id, in
// three queries whatever their number; what it reads of each connection
// (its status, error, hold and consent) is as stored now, not as in conns. Breaker states come from the
// reports of every worker (SaveBreakerStates), not from this process.
func (s *Store) GetConnectionHealth(ctx context.Context, conns []domain.BankConnection) (map[uuid.UUID]ConnectionHealth, error) {
	out := make(map[uuid.UUID]ConnectionHealth, len(conns))
	if len(conns) == 0 {
		return out, nil
	}
	ids := make([]uuid.UUID, len(conns))
	provs := map[string]bool{}
	var names []string
	for i, c := range conns {
		ids[i] = c.ID
		if !provs[c.Provider] {
			provs[c.Provider] = true
			names = append(names, c.Provider)
		}
	}
	breakers, err := s.breakerStates(ctx, names)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader(ctx).Query(ctx, `
SELECT c.id, c.consecutive_failures,
    (SELECT min(q.remaining) FROM accounts a
        JOIN provider_quotas q ON q.provider = c.provider AND q.resource = a.provider_account_id
        WHERE a.bank_connection_id = c.id AND a.user_id = c.user_id AND q.reset_at > now()),
    CASE WHEN c.held_back_until > now() THEN c.held_back_until END,
    CASE WHEN c.held_back_until > now() THEN c.held_back_reason END,
    c.last_error_class, c.status, c.consent_expires_at, now()
FROM bank_connections c WHERE c.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("connection health: %w", err)
	}
	type counts struct {
		failures   int
		quota      *int
		heldUntil  *time.Time
		heldWhy    *string
		errorClass *string
		status     string
		consent    *time.Time
		now        time.Time
	}
	byID := map[uuid.UUID]counts{}
	for rows.Next() {
		var id uuid.UUID
		var c counts
		if err := rows.Scan(&id, &c.failures, &c.quota, &c.heldUntil, &c.heldWhy, &c.errorClass, &c.status, &c.consent, &c.now); err != nil {
			rows.Close()
			return nil, fmt.Errorf("connection health: %w", err)
		}
		byID[id] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("connection health: %w", err)
	}
	for _, c := range conns {
		state := breakers[breakerKey{c.Provider, ""}]
		if c.InstitutionID != "" {
			if inst := breakers[breakerKey{c.Provider, c.InstitutionID}]; breakerRank(inst) > breakerRank(state) {
				state = inst
			}
		}
		if state == "" {
			state = BreakerClosed
		}
		n := byID[c.ID]
		out[c.ID] = ConnectionHealth{
			LastSuccessfulSyncAt: c.LastSyncedAt, NextSyncAt: c.NextSyncAt,
			Breaker: state, QuotaRemaining: n.quota, ConsecutiveFailures: n.failures,
			HeldBackUntil: n.heldUntil, HeldBackReason: n.heldWhy, ConsentExpiresAt: n.consent,
			Action: connectionAction(n.status, n.errorClass, n.consent, n.heldUntil != nil, state, n.now),
		}
	}
	return out, nil
}

// breakerStates returns, per breaker of the named providers, the worst
// state among the reports made within breakerReportWindow of its latest
// one; an open breaker whose open period has passed counts as half-open.
func (s *Store) breakerStates(ctx context.Context, providers []string) (map[breakerKey]string, error) {
	rows, err := s.reader(ctx).Query(ctx, `
WITH r AS (
    SELECT provider, institution_id,
        CASE WHEN state = 'open' AND open_until <= now() THEN 'half_open' ELSE state END AS state,
        updated_at, max(updated_at) OVER (PARTITION BY provider, institution_id) AS latest
    FROM provider_breakers WHERE provider = ANY($1)
)
SELECT provider, institution_id, state FROM r
WHERE updated_at >= latest - make_interval(secs => $2::float8)`, providers, breakerReportWindow.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read breaker states: %w", err)
	}
	defer rows.Close()
	out := map[breakerKey]string{}
	for rows.Next() {
		var k breakerKey
		var state string
		if err := rows.Scan(&k.provider, &k.institution, &state); err != nil {
			return nil, fmt.Errorf("read breaker states: %w", err)
		}
		if breakerRank(state) >= breakerRank(out[k]) {
			out[k] = state
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read breaker states: %w", err)
	}
	return out, nil
}

// ProviderTime is one time of a provider's connections (a gauge's
// reading).
type ProviderTime struct {
	Provider string
	At       time.Time
}

// ProviderLastSync is when a provider's connections last synced
// successfully: At is the newest successful sync of any of them; when none
// has ever synced, the creation of its oldest connection (Synced false),
// so that "no success for N hours" counts from the moment the provider had
// a connection to sync.
type ProviderLastSync struct {
	ProviderTime
	Synced bool
}

// ListEarliestConsentEnds returns, for each provider with connections that
// are not disabled and whose consent has a recorded end, the earliest
// such end, in provider order. Caveat: like LastSuccessfulSyncs, one
// aggregate over bank_connections; cache it when polling.
func (s *Store) ListEarliestConsentEnds(ctx context.Context) ([]ProviderTime, error) {
	rows, err := s.reader(ctx).Query(ctx, `
SELECT provider, min(consent_expires_at) FROM bank_connections
WHERE status <> 'disabled' AND consent_expires_at IS NOT NULL
GROUP BY provider ORDER BY provider`)
	if err != nil {
		return nil, fmt.Errorf("read earliest consent ends: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ProviderTime])
	if err != nil {
		return nil, fmt.Errorf("read earliest consent ends: %w", err)
	}
	return out, nil
}

// ListLastSuccessfulSyncs returns, for each provider with connections that are
// not disabled, when they last synced successfully, in provider order.
// Caveat: it reads every connection row (one aggregate over
// bank_connections); callers that poll it, like a metrics scrape, should
// cache it.
func (s *Store) ListLastSuccessfulSyncs(ctx context.Context) ([]ProviderLastSync, error) {
	rows, err := s.reader(ctx).Query(ctx, `
SELECT provider, COALESCE(max(last_synced_at), min(created_at)), max(last_synced_at) IS NOT NULL
FROM bank_connections WHERE status <> 'disabled'
GROUP BY provider ORDER BY provider`)
	if err != nil {
		return nil, fmt.Errorf("read last successful syncs: %w", err)
	}
	defer rows.Close()
	var out []ProviderLastSync
	for rows.Next() {
		var p ProviderLastSync
		if err := rows.Scan(&p.Provider, &p.At, &p.Synced); err != nil {
			return nil, fmt.Errorf("read last successful syncs: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read last successful syncs: %w", err)
	}
	return out, nil
}
