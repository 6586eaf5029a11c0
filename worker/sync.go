package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// DefaultSyncInterval is the time between periodic syncs of a connection
// that sets none, for a provider that declares none (a provider whose daily
// quota affords fewer syncs declares a longer ProviderProfile.SyncInterval).
const DefaultSyncInterval = 6 * time.Hour

// Syncer pulls one connection's data from its provider into storage.
type Syncer struct {
	Store     *storage.Store
	Providers map[string]providers.Provider
	Box       *secrets.Box
	Log       *slog.Logger
	// ReconnectURL is a template for the page where a user re-links a
	// connection; "{connection_id}" is replaced by the connection's id.
	ReconnectURL string
	// Rules compiles the users' rules that every sync applies to the rows
	// it stores, each rule version once across batches and syncs; give it
	// the rule worker's cache (Config.Rules) so that a process holds one.
	// Nil compiles them afresh for every batch.
	Rules *rules.Cache
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Slice bounds the work of one sync_connection job attempt: once it has
	// passed, the sync commits the batch in hand and its cursor, and the job
	// snoozes to continue from that cursor in a new attempt, so that a short
	// job timeout (and River's rescue of a killed worker's job soon after it)
	// is safe for a sync of any size. Zero means DefaultSlice; Sync itself
	// (outside River) is never sliced.
	Slice time.Duration
	// WriteRate bounds the transaction rows a second that the syncs of
	// every worker together store, through a budget kept in PostgreSQL, so
	// that a large first sync leaves the database room for API reads.
	// Zero means unbounded (finsync worker's default is 5,000). Caveat: a batch is paced as a whole, so the
	// rate holds over seconds, not within one batch.
	WriteRate float64
	// Metrics records each whole sync; nil records none.
	Metrics *Metrics
	// Holder names this process's reports of its circuit breakers to the
	// database (what the API shows as a connection's breaker); zero derives
	// one from the host name and process id.
	Holder uuid.UUID
	// ConsentWarning is how long before a connection's consent ends the
	// sync that sees the end near sends connection.consent_expiring (once
	// per consent); zero means DefaultConsentWarning.
	ConsentWarning time.Duration
	// SkipTransfers turns transfer detection off in the syncs' write
	// sessions: a knob for benchmarks that measure detection's cost, never
	// set by finsync's commands.
	SkipTransfers bool
}

// DefaultConsentWarning is how long before a consent ends it is warned of
// (connection.consent_expiring) when Syncer.ConsentWarning is zero.
const DefaultConsentWarning = 7 * 24 * time.Hour

// DefaultSlice is the slice of a sync job that NewClient's timeouts assume.
const DefaultSlice = 30 * time.Second

// errSliceEnded marks a sync that stopped after a committed batch because
// its slice ran out or its worker is stopping; it continues from the stored
// cursor in its job's next attempt.
var errSliceEnded = errors.New("sync slice ended")

// CodeCredentialsUnreadable is recorded on a connection whose stored
// credentials the configured encryption key cannot open.
const CodeCredentialsUnreadable = "CREDENTIALS_UNREADABLE"

// CodeConsentExpired is recorded on a connection whose consent, as its
// provider reported the end, has ended: its sync fails without calling
// the provider until a re-auth.
const CodeConsentExpired = "CONSENT_EXPIRED"

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
	rep := syncReport{StartedAt: time.Now()}
	err := s.sync(ctx, id, sliceEnd{}, &rep)
	if !errors.Is(err, errSkipped) {
		s.finished(ctx, &rep, err)
	}
	return err
}

// syncTally counts what a sync stored: transaction pages and row changes.
type syncTally struct {
	Pages   int64              `json:"pages"`
	Changes storage.RowChanges `json:"changes"`
}

// syncReport is what one whole sync of a connection did, across the slices
// (job attempts) it took. Between slices it rides in the job's metadata
// under syncReportKey. Caveat: a slice whose worker was killed records
// nothing there, so its pages and rows are missing from the report (its
// committed rows still count in the database, of course).
type syncReport struct {
	StartedAt time.Time `json:"started_at"`
	Slices    int       `json:"slices"`
	syncTally
	connectionID uuid.UUID
	provider     string
	// cause is the failure that ended the sync as the provider or storage
	// returned it (before it became a River snooze or cancel); nil on success.
	cause error
	// held is set when the attempt was held back without a provider call
	// (heldBack): the sync waits rather than ends.
	held bool
	// recorded is set once the sync's end is in the connection's history,
	// written with its outcome (finishSync); finished then writes none.
	recorded bool
	// again is set when a provider notification asked for a sync after
	// this one began reading: the job runs again once it has ended.
	again bool
	// sealed are the credentials the attempt read with: its outcome is
	// recorded only while they are the connection's
	// (storage.ErrCredentialsChanged).
	sealed []byte
}

// syncReportKey is the job metadata key holding a sync's report between
// its slices.
const syncReportKey = "finsync_sync"

// finished records a whole sync that ended with err: one log line with
// exactly the keys connection_id, provider, duration_ms, pages, added,
// modified, removed, outcome and error_class, and its metrics. It is the
// one place a sync's end is reported, from Sync and from SyncWorker.Work
// alike; a slice that continues in the job's next attempt reports nothing.
// The line is logged with ctx (cancelled or not), so it carries the
// request id of a request-enqueued job.
func (s *Syncer) finished(ctx context.Context, rep *syncReport, err error) {
	now := time.Now() // wall time, not Syncer.Now (the data's clock)
	cause := rep.cause
	if cause == nil {
		cause = err
	}
	result, class := OutcomeOK, ""
	if cause != nil {
		result = outcome(cause)
		class = result
	}
	took := max(now.Sub(rep.StartedAt), 0)
	if rep.provider != "" { // else the connection could not even be read
		s.Metrics.observeSync(rep.provider, result, took, rep.Changes)
	}
	level := slog.LevelInfo
	if cause != nil {
		level = slog.LevelWarn
	}
	s.Log.LogAttrs(context.WithoutCancel(ctx), level, "sync finished",
		slog.String("connection_id", rep.connectionID.String()),
		slog.String("provider", rep.provider),
		slog.Int64("duration_ms", took.Milliseconds()),
		slog.Int64("pages", rep.Pages),
		slog.Int64("added", rep.Changes.Added),
		slog.Int64("modified", rep.Changes.Modified),
		slog.Int64("removed", rep.Changes.Removed),
		slog.String("outcome", result),
		slog.String("error_class", class))
	if !rep.recorded && !rep.held && rep.provider != "" {
		s.recordHistory(ctx, rep, cause)
	}
}

// record is the history row of the sync rep reports, ending now with
// cause (nil: it succeeded): the pages and rows the sync's tally counted,
// the worker's outcome, and the provider's error code and message (the
// error's text for a failure that is no provider's).
func (s *Syncer) record(rep *syncReport, cause error) *storage.SyncRecord {
	r := &storage.SyncRecord{StartedAt: rep.StartedAt, FinishedAt: time.Now(), Pages: rep.Pages, Changes: rep.Changes, Outcome: outcome(cause)}
	if pe := resilience.AsError(cause); pe != nil {
		r.ErrorCode, r.ErrorMessage = pe.Code, pe.Message
	} else if cause != nil {
		r.ErrorMessage = cause.Error()
	}
	return r
}

// historySaveTimeout bounds the write of a sync's history row when it is
// written alone, which runs even when the sync's own context has ended.
const historySaveTimeout = 5 * time.Second

// recordHistory writes the sync's end to the connection's history on its
// own, for a sync whose end was recorded nowhere else (a failure that is
// no provider's). A failure to write is logged, never the sync's.
func (s *Syncer) recordHistory(ctx context.Context, rep *syncReport, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historySaveTimeout)
	defer cancel()
	if err := s.Store.RecordSync(ctx, rep.connectionID, *s.record(rep, cause)); err != nil {
		s.Log.WarnContext(ctx, "record sync history", "connection_id", rep.connectionID, "error", err)
	}
}

// sliceEnd says when a sliced sync stops after its current batch: at the
// deadline (zero: none) or when stop closes (nil: never).
type sliceEnd struct {
	deadline time.Time
	stop     <-chan struct{}
}

// over reports whether the slice has ended.
func (e sliceEnd) over(now time.Time) bool {
	if !e.deadline.IsZero() && !now.Before(e.deadline) {
		return true
	}
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

// sleep waits for d and reports true, or reports false as soon as the
// worker begins to stop, and the context's error when it is done first.
func (e sliceEnd) sleep(ctx context.Context, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true, nil
	case <-e.stop:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// sync is Sync, ending early with errSliceEnded after a committed batch
// once end is over. It adds what it stored, and the failure that ended
// it, to rep.
func (s *Syncer) sync(ctx context.Context, id uuid.UUID, end sliceEnd, rep *syncReport) error {
	rep.connectionID = id
	target, err := s.Store.GetSyncTarget(ctx, id)
	if err != nil {
		return err
	}
	conn := target.Connection
	rep.provider, rep.sealed = conn.Provider, target.SealedCredentials
	if conn.Status == domain.ConnectionDisabled || !target.StorageMode {
		return errSkipped
	}
	p, ok := s.Providers[conn.Provider]
	if !ok {
		return fmt.Errorf("sync connection %s: no adapter for provider %q", id, conn.Provider)
	}
	if ends := conn.ConsentExpiresAt; ends != nil && !ends.After(s.now()) {
		// No provider call can succeed until the user links the bank
		// again (connections reauth, which clears the recorded end).
		rep.cause = &resilience.Error{Provider: conn.Provider, Class: resilience.ReauthRequired, Code: CodeConsentExpired,
			Message: "the user's consent to the provider ended at " + ends.UTC().Format(time.RFC3339) + "; the bank must be linked again"}
		return s.fail(ctx, conn, "", rep.cause, rep)
	}
	defer s.saveBreakers(ctx, conn.Provider)
	creds, err := s.Box.Open(target.SealedCredentials)
	if err != nil {
		// No retry can help: the credentials were sealed with another key.
		// Record it on the connection so operators see why it stopped.
		rep.cause = &resilience.Error{Provider: conn.Provider, Class: resilience.Permanent,
			Code: CodeCredentialsUnreadable, Message: "stored credentials cannot be decrypted with the configured key", Err: err}
		return s.fail(ctx, conn, "", rep.cause, rep)
	}
	if creds, err = s.withSettings(ctx, conn.Provider, creds); err != nil {
		if resilience.AsError(err) == nil {
			return err // the database: the job retries
		}
		rep.cause = err
		return s.fail(ctx, conn, "", err, rep)
	}
	readFrom, err := s.settle(ctx, id, target.Request)
	if err != nil {
		return err
	}
	pc := providers.Connection{ID: id.String(), Provider: conn.Provider, InstitutionID: conn.InstitutionID, BaseURL: conn.BaseURL, Credentials: creds}
	openBefore := s.breakerOpen(conn)
	session := s.Store.OpenSyncSession(target, storage.SyncSessionOptions{
		ReadOnlyCategories: p.Describe().ReadOnlyCategories, RuleCache: s.Rules, JobID: syncJobID(ctx),
		Now: s.now, SkipTransfers: s.SkipTransfers})
	run := &syncRun{Syncer: s, conn: conn, pc: pc, p: p, today: domain.DateOf(s.now()), session: session, end: end}
	result, err := run.all(ctx, target.Cursor)
	err = s.afterRun(ctx, run, err)
	rep.Pages += run.tally.Pages
	rep.Changes = rep.Changes.Add(run.tally.Changes)
	s.recordHold(ctx, conn.ID, err, openBefore)
	if errors.Is(err, errSliceEnded) {
		return err
	}
	if err != nil {
		rep.cause = err
		if heldBack(err, openBefore) {
			// No provider failure: nothing is recorded on the connection, so
			// its last real provider error and its consecutive failures stay
			// as they were (the breaker and the hold show in its health).
			rep.held = true
			return river.JobSnooze(heldWait(resilience.AsError(err)))
		}
		return s.fail(ctx, conn, run.dataset, err, rep)
	}
	result.OK, result.Credentials = true, target.SealedCredentials
	result.ReadFrom = readFrom
	result.ConsentWarning, result.ConsentNow = cmp.Or(s.ConsentWarning, DefaultConsentWarning), s.now()
	next := s.nextSync(conn, run.nextAllowedAt)
	result.NextSyncAt = &next
	result.Changes = rep.Changes
	result.Record = s.record(rep, nil)
	if err := s.finishSync(ctx, id, result); err != nil {
		return err
	}
	rep.recorded = true
	// A notification that came after the run began reading may announce
	// data it missed: the job runs again at once (SyncWorker.Work).
	req, err := s.Store.GetSyncRequest(ctx, id)
	rep.again = err == nil && !readFrom.IsZero() && req.RequestedAt.After(readFrom)
	return nil
}

// afterRun closes the run's session (daily balances and statistics from
// what it stored), whether it ended, ended its slice or failed after
// storing some pages, and returns the error the run ends with: the run's
// own, else the close's (the sync is then retried; every write is an
// upsert).
func (s *Syncer) afterRun(ctx context.Context, run *syncRun, err error) error {
	cErr := run.session.Close(ctx)
	if cErr == nil {
		return err
	}
	if err != nil {
		s.Log.ErrorContext(ctx, "close sync session", "connection_id", run.conn.ID, "error", cErr)
		return err
	}
	return cErr
}

// profile returns what the provider declares; the zero profile when this
// process has no adapter of that name.
func (s *Syncer) profile(provider string) domain.ProviderProfile {
	if p, ok := s.Providers[provider]; ok {
		return p.Describe().ProviderProfile
	}
	return domain.ProviderProfile{}
}

// nextSync spreads periodic syncs over a tenth of the interval, by
// connection id, so that connections added together do not all fire together.
func (s *Syncer) nextSync(conn domain.BankConnection, notBefore time.Time) time.Time {
	interval := conn.SyncInterval
	if interval == 0 {
		interval = s.profile(conn.Provider).SyncInterval
		if interval == 0 {
			interval = DefaultSyncInterval
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

// fail records a failed sync on the connection, and in its history with
// what rep counted, and returns the error River should see: cancel for
// re-auth and permanent failures, snooze for rate limits and open
// breakers, a plain error (retried with backoff) otherwise.
func (s *Syncer) fail(ctx context.Context, conn domain.BankConnection, dataset string, err error, rep *syncReport) error {
	pe := resilience.AsError(err)
	if pe == nil {
		return fmt.Errorf("sync connection %s: %w", conn.ID, err)
	}
	o := storage.SyncOutcome{ErrorCode: pe.Code, ErrorMessage: pe.Message, ErrorClass: className(pe.Class),
		// The user must act: no periodic sync until a re-auth schedules one.
		Unschedule: pe.Class == resilience.ReauthRequired, Record: s.record(rep, err), Credentials: rep.sealed}
	if pe.Class == resilience.ReauthRequired {
		o.ReconnectURL = strings.ReplaceAll(s.ReconnectURL, "{connection_id}", conn.ID.String())
	}
	if pe.Class == resilience.RateLimited && pe.RetryAfter > 0 {
		next := s.now().Add(pe.RetryAfter)
		o.NextSyncAt = &next
	}
	for _, d := range datasetsFrom(s.profile(conn.Provider).HasInvestments, dataset) {
		if mErr := s.Store.MarkDatasetFailed(ctx, conn.ID, d, o.ErrorClass); mErr != nil {
			s.Log.ErrorContext(ctx, "record dataset failure", "connection_id", conn.ID, "error", mErr)
		}
	}
	if rErr := s.finishSync(ctx, conn.ID, o); rErr != nil {
		return errors.Join(err, rErr)
	}
	rep.recorded = true
	wrapped := fmt.Errorf("sync connection %s: %w", conn.ID, err)
	switch {
	case pe.Class == resilience.ReauthRequired, pe.Class == resilience.Permanent:
		return river.JobCancel(wrapped)
	case pe.Class == resilience.RateLimited:
		return river.JobSnooze(heldWait(pe))
	}
	return wrapped
}

// heldBack reports whether err refused a call without making it and is no
// provider failure: the local rate limiter, a provider quota known to be
// spent, or a breaker that was already open when the attempt began
// (openBefore). Caveat: a breaker that opens during the attempt, after
// calls that failed, ends it as a failure.
func heldBack(err error, openBefore bool) bool {
	pe := resilience.AsError(err)
	return pe != nil && (pe.Code == resilience.CodeRateLimit || pe.Code == resilience.CodeQuotaExhausted ||
		pe.Code == resilience.CodeCircuitOpen && openBefore)
}

// holdReason says why the attempt that ended with err holds its sync
// back (one of storage's HeldBack* reasons), or "" when the sync is not
// held back: it ran, or failed. A provider's own 429 holds it back too (the
// failure is also recorded, see fail).
func holdReason(err error, openBefore bool) string {
	pe := resilience.AsError(err)
	switch {
	case pe == nil:
		return ""
	case pe.Code == resilience.CodeQuotaExhausted:
		return storage.HeldBackProviderQuota
	case pe.Code == resilience.CodeCircuitOpen && openBefore:
		return storage.HeldBackBreakerOpen
	case pe.Class == resilience.RateLimited:
		return storage.HeldBackRateLimit
	}
	return ""
}

// holdSaveTimeout bounds the write of a sync's hold, which runs even when
// the sync's own context has ended.
const holdSaveTimeout = 5 * time.Second

// recordHold records on the connection that the attempt which ended with
// err holds its sync back, until when and why (what its health, the ops
// console and `finsync sync --wait` show), or clears the hold when the
// sync ran. A failure to write is logged, never the sync's.
func (s *Syncer) recordHold(ctx context.Context, id uuid.UUID, err error, openBefore bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdSaveTimeout)
	defer cancel()
	var wErr error
	if reason := holdReason(err, openBefore); reason != "" {
		wErr = s.Store.HoldBack(ctx, id, heldWait(resilience.AsError(err)), reason)
	} else {
		wErr = s.Store.ReleaseHold(ctx, id)
	}
	if wErr != nil && s.Log != nil {
		s.Log.WarnContext(ctx, "record held-back sync", "connection_id", id, "error", wErr)
	}
}

// breakerOpen reports whether the provider's breaker, or that of the
// connection's institution, is open in this process.
func (s *Syncer) breakerOpen(conn domain.BankConnection) bool {
	r, ok := s.Providers[conn.Provider].(*providers.Resilient)
	if !ok {
		return false
	}
	for i, st := range r.States() {
		if (i == 0 || st.InstitutionID == conn.InstitutionID) && st.State == "open" {
			return true
		}
	}
	return false
}

// heldWait is how long a sync refused by pe snoozes: its Retry-After, else
// 30 s.
func heldWait(pe *resilience.Error) time.Duration {
	if pe.RetryAfter > 0 {
		return pe.RetryAfter
	}
	return 30 * time.Second
}

// className is the stored name of a failure class.
func className(c resilience.Class) string { return c.String() }

// SyncWorker runs sync_connection jobs, one slice per attempt (see
// Syncer.Slice).
type SyncWorker struct {
	river.WorkerDefaults[jobargs.SyncConnection]
	Syncer *Syncer
	// Stopping closes when the process begins to stop: a running sync ends
	// its slice after the batch in hand, so the job snoozes at once and
	// another worker continues it.
	Stopping <-chan struct{}
}

// slice is the Syncer's slice, DefaultSlice when unset.
func (s *Syncer) slice() time.Duration {
	if s.Slice > 0 {
		return s.Slice
	}
	return DefaultSlice
}

// syncJobTimeout is a sliced sync attempt's timeout: the slice, plus the
// accounts call at its start and the batch in hand when it ends.
func syncJobTimeout(slice time.Duration) time.Duration {
	return slice + 30*time.Second
}

// Timeout bounds one attempt: a slice and the batch that ends it.
func (w *SyncWorker) Timeout(*river.Job[jobargs.SyncConnection]) time.Duration {
	return syncJobTimeout(w.Syncer.slice())
}

// NextRetry retries at once a job that River rescued from a worker that
// died (its attempt began longer than the timeout ago): a kill is no reason
// to back off, and each kill would otherwise add to the backoff. Other
// failures use River's default backoff.
func (w *SyncWorker) NextRetry(job *river.Job[jobargs.SyncConnection]) time.Time {
	if job.AttemptedAt != nil && time.Since(*job.AttemptedAt) >= w.Timeout(job) {
		return time.Now()
	}
	return time.Time{}
}

// Work syncs the job's connection for one slice. A sync whose slice ended,
// or whose worker is stopping (River cancelled its context), snoozes for no
// time: snoozes do not count as attempts, and the next attempt continues
// from the stored cursor, with what the sync did so far kept in the job's
// metadata. A sync held back by an open breaker or the local rate limiter
// snoozes likewise (for the breaker's or limiter's wait), reported as
// nothing. Any other end of the attempt ends the sync, which is then
// reported once, as a whole (Syncer.finished).
func (w *SyncWorker) Work(ctx context.Context, job *river.Job[jobargs.SyncConnection]) error {
	end := sliceEnd{stop: w.Stopping, deadline: time.Now().Add(w.Syncer.slice())}
	rep := priorReport(job.Metadata)
	if rep.StartedAt.IsZero() {
		rep.StartedAt = time.Now()
	}
	err := w.Syncer.sync(withSyncJob(ctx, job.ID), job.Args.ConnectionID, end, &rep)
	switch {
	case errors.Is(err, errSkipped):
		return w.setReport(ctx, nil)
	case errors.Is(err, storage.ErrCredentialsChanged):
		// A re-auth came during the attempt: nothing it read of the old
		// link was stored; the sync starts over with the new credentials.
		if mErr := w.setReport(ctx, &rep); mErr != nil {
			return mErr
		}
		return river.JobSnooze(0)
	case errors.Is(err, errSliceEnded), err != nil && stopping(ctx):
		rep.Slices++
		if mErr := w.setReport(ctx, &rep); mErr != nil {
			return mErr
		}
		return river.JobSnooze(0)
	case rep.held:
		// No provider call was made: the sync waits, neither finished nor
		// failed, and goes on from its cursor after the snooze.
		// Its duration counts from the attempt that goes on after the wait.
		rep.cause, rep.held, rep.StartedAt = nil, false, time.Time{}
		if mErr := w.setReport(ctx, &rep); mErr != nil {
			return mErr
		}
		return err
	}
	rep.Slices++
	w.Syncer.finished(ctx, &rep, err)
	if mErr := w.setReport(ctx, nil); mErr != nil {
		return errors.Join(err, mErr)
	}
	if err == nil && rep.again {
		// Snoozed briefly, the job is available again at once: the next
		// sync reads what the late notification announced.
		return river.JobSnooze(0)
	}
	return err
}

// priorReport reads the report that earlier slices of the job left in its
// metadata (the zero report when none did, or it cannot be read).
func priorReport(metadata []byte) syncReport {
	var md struct {
		Report *syncReport `json:"finsync_sync"`
	}
	if err := json.Unmarshal(metadata, &md); err != nil || md.Report == nil {
		return syncReport{}
	}
	return *md.Report
}

// setReport stores rep in the job's metadata when the attempt ends (nil
// clears it: the next attempt, if any, starts a new sync).
func (w *SyncWorker) setReport(ctx context.Context, rep *syncReport) error {
	if err := river.MetadataSet(ctx, syncReportKey, rep); err != nil {
		return fmt.Errorf("record sync progress in the job: %w", err)
	}
	return nil
}

// stopping reports whether ctx was cancelled by the client stopping (not by
// the job's timeout nor by a cancellation of the job).
func stopping(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled) && !errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely)
}

// datasetsFrom lists the dataset a sync failed on and those it would have
// fetched after it, which this failure kept from being stored: an
// aggregator connection whose first sync fails at its accounts has not
// stored its holdings either.
func datasetsFrom(hasInvestments bool, failed string) []string {
	order := []string{"accounts", "transactions"}
	if hasInvestments {
		order = append(order, "holdings", "investment_transactions")
	}
	for i, d := range order {
		if d == failed {
			return order[i:]
		}
	}
	return nil
}
