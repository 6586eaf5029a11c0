package worker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// Default intervals between periodic syncs. GoCardless banks allow as few as
// four successful calls per account per day for each of details, balances
// and transactions; syncing every eight hours spends three and leaves one
// for a sync on demand.
const (
	DefaultSyncInterval    = 6 * time.Hour
	GoCardlessSyncInterval = 8 * time.Hour
)

// ApplyRulesFunc applies a user's active rules to the given transactions
// inside the caller's transaction.
type ApplyRulesFunc func(ctx context.Context, tx pgx.Tx, userID uuid.UUID, transactionIDs []uuid.UUID) error

// Syncer pulls one connection's data from its provider into storage.
type Syncer struct {
	Store     *storage.Store
	Providers map[string]providers.Provider
	Box       *secrets.Box
	Log       *slog.Logger
	// ReconnectURL is a template for the page where a user re-links a
	// connection; "{connection_id}" is replaced by the connection's id.
	ReconnectURL string
	// ApplyRules runs the user's rules on each stored page; nil skips it.
	ApplyRules ApplyRulesFunc
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// CodeCredentialsUnreadable is recorded on a connection whose stored
// credentials the configured encryption key cannot open.
const CodeCredentialsUnreadable = "CREDENTIALS_UNREADABLE"

// errSkipped marks a sync that did not run (disabled, storage mode off).
var errSkipped = errors.New("sync skipped")

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Sync fetches accounts and balances, transactions from the stored cursor,
// and investments where offered, storing each transaction page with its
// cursor in one database transaction, and records the outcome on the
// connection.
func (s *Syncer) Sync(ctx context.Context, id uuid.UUID) error {
	target, err := s.Store.SyncTarget(ctx, id)
	if err != nil {
		return err
	}
	conn := target.Connection
	if conn.Status == domain.ConnectionDisabled || !target.StorageMode {
		return errSkipped
	}
	p, ok := s.Providers[conn.Provider]
	if !ok {
		return fmt.Errorf("sync connection %s: no adapter for provider %q", id, conn.Provider)
	}
	creds, err := s.Box.Open(target.SealedCredentials)
	if err != nil {
		// No retry can help: the credentials were sealed with another key.
		// Record it on the connection so operators see why it stopped.
		return s.fail(ctx, conn, "", &providers.Error{Provider: conn.Provider, Class: providers.Permanent,
			Code: CodeCredentialsUnreadable, Message: "stored credentials cannot be decrypted with the configured key", Err: err})
	}
	pc := providers.Connection{ID: id.String(), Provider: conn.Provider, InstitutionID: conn.InstitutionID, BaseURL: conn.BaseURL, Credentials: creds}
	run := &syncRun{Syncer: s, conn: conn, pc: pc, p: p, today: domain.DateOf(s.now()), fresh: !target.HasTransactions}
	outcome, err := run.all(ctx, target.Cursor)
	if err != nil {
		return s.fail(ctx, conn, run.dataset, err)
	}
	outcome.OK = true
	next := s.nextSync(conn, run.nextAllowedAt)
	outcome.NextSyncAt = &next
	return s.Store.FinishSync(ctx, id, outcome)
}

// nextSync spreads periodic syncs over a tenth of the interval, by
// connection id, so that connections added together do not all fire together.
func (s *Syncer) nextSync(conn domain.BankConnection, notBefore time.Time) time.Time {
	interval := conn.SyncInterval
	if interval == 0 {
		interval = DefaultSyncInterval
		if conn.Provider == domain.ProviderGoCardless {
			interval = GoCardlessSyncInterval
		}
	}
	h := fnv.New32a()
	h.Write(conn.ID[:])
	jitter := time.Duration(h.Sum32()) % (interval / 10)
	next := s.now().Add(interval + jitter)
	if next.Before(notBefore) {
		next = notBefore
	}
	return next
}

// fail records a failed sync on the connection and returns the error River
// should see: cancel for re-auth and permanent failures, snooze for rate
// limits and open breakers, a plain error (retried with backoff) otherwise.
func (s *Syncer) fail(ctx context.Context, conn domain.BankConnection, dataset string, err error) error {
	pe := providers.AsError(err)
	if pe == nil {
		return fmt.Errorf("sync connection %s: %w", conn.ID, err)
	}
	o := storage.SyncOutcome{ErrorCode: pe.Code, ErrorMessage: pe.Message, ErrorClass: className(pe.Class)}
	if pe.Class == providers.ReauthRequired {
		o.ReconnectURL = strings.ReplaceAll(s.ReconnectURL, "{connection_id}", conn.ID.String())
	}
	if pe.Class == providers.RateLimited && pe.RetryAfter > 0 {
		next := s.now().Add(pe.RetryAfter)
		o.NextSyncAt = &next
	}
	for _, d := range datasetsFrom(conn.Provider, dataset) {
		if mErr := storage.MarkDataset(ctx, s.Store.Pool(), conn.ID, d, false, o.ErrorClass); mErr != nil {
			s.Log.Error("record dataset failure", "connection_id", conn.ID, "error", mErr)
		}
	}
	if rErr := s.Store.FinishSync(ctx, conn.ID, o); rErr != nil {
		return errors.Join(err, rErr)
	}
	wrapped := fmt.Errorf("sync connection %s: %w", conn.ID, err)
	switch {
	case pe.Class == providers.ReauthRequired, pe.Class == providers.Permanent:
		return river.JobCancel(wrapped)
	case pe.Class == providers.RateLimited, pe.Code == providers.CodeCircuitOpen:
		wait := pe.RetryAfter
		if wait <= 0 {
			wait = 30 * time.Second
		}
		return river.JobSnooze(wait)
	}
	return wrapped
}

// className is the stored name of a failure class.
func className(c providers.Class) string { return c.String() }

// SyncWorker runs sync_connection jobs.
type SyncWorker struct {
	river.WorkerDefaults[jobargs.SyncConnection]
	Syncer *Syncer
}

// Timeout allows a first sync of a very large history.
func (w *SyncWorker) Timeout(*river.Job[jobargs.SyncConnection]) time.Duration { return time.Hour }

// Work syncs the job's connection.
func (w *SyncWorker) Work(ctx context.Context, job *river.Job[jobargs.SyncConnection]) error {
	err := w.Syncer.Sync(ctx, job.Args.ConnectionID)
	if errors.Is(err, errSkipped) {
		return nil
	}
	return err
}

// datasetsFrom lists the dataset a sync failed on and those it would have
// fetched after it, which this failure kept from being stored: an
// aggregator connection whose first sync fails at its accounts has not
// stored its holdings either.
func datasetsFrom(provider, failed string) []string {
	order := []string{"accounts", "transactions"}
	if provider == domain.ProviderPlaid {
		order = append(order, "holdings", "investment_transactions")
	}
	for i, d := range order {
		if d == failed {
			return order[i:]
		}
	}
	return nil
}
