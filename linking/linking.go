// Package linking puts provider credentials on connections, the one way
// every caller does it (`finsync connections add` and `reauth`, the ops
// console's re-auth form): the credentials are checked against the
// provider's declared schema, a one-time credential is exchanged for the
// lasting one, the provider's stored settings must complete them, and only
// then are they sealed and stored; a re-auth then enqueues the
// connection's sync. Nothing here logs or returns the credentials.
package linking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
)

// CallTimeout bounds each provider call made while linking (a credential
// exchange, a check).
const CallTimeout = 30 * time.Second

// Linker puts credentials on connections. Its fields are required, but
// Jobs, which only Reauth needs. It is safe for concurrent use.
type Linker struct {
	Store    *storage.Store
	Registry *providers.Registry
	Box      *secrets.Box
	// Jobs enqueues the sync a re-auth asks for (an insert-only client is
	// enough).
	Jobs *storage.JobClient
}

// Given are new credentials for a connection, as an operator gives them.
type Given struct {
	// Credentials is the provider's credentials object (JSON).
	Credentials []byte
	// FromLinkFlow marks credentials a provider's link flow returned (the
	// simulator's): they are not checked against the declared schema.
	FromLinkFlow bool
	// BaseURL is where to reach the provider; empty means the default the
	// caller gives (the provider's production URL, or the connection's own).
	BaseURL string
	// Check fetches the connection's accounts once from the provider
	// before anything is stored, to learn whether it accepts them.
	Check bool
}

// InputError refuses what was given: the operator's to correct, nothing
// stored. Field names the input at fault ("credentials", "base-url",
// "check"; empty for the provider's settings). Its message never holds a
// credential's value.
type InputError struct {
	Field string
	Msg   string
	Err   error
}

// Error is the refusal's message.
func (e *InputError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the refusal's cause.
func (e *InputError) Unwrap() error { return e.Err }

func refuse(field string, err error, format string, args ...any) error {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Settings returns the provider's stored settings (opened), nil when the
// provider declares none or none are stored.
func (l *Linker) Settings(ctx context.Context, desc providers.Description) (json.RawMessage, error) {
	if len(desc.Settings) == 0 {
		return nil, nil
	}
	sealed, err := l.Store.GetProviderSettings(ctx, desc.Name)
	if err != nil || sealed == nil {
		return nil, err
	}
	settings, err := l.Box.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("the stored %s settings cannot be opened with the configured key: %w", desc.Name, err)
	}
	return settings, nil
}

// Resolve returns the credentials to seal for a connection of the
// described provider and the base URL to store (g.BaseURL, else
// defaultBase): checked against the provider's schema (unless they come
// from a link flow), a one-time credential exchanged for the lasting one,
// completed by the provider's settings, and with g.Check tried with the
// provider. Nothing is stored. Bad input is an *InputError.
func (l *Linker) Resolve(ctx context.Context, desc providers.Description, settings []byte, g Given, defaultBase string) ([]byte, string, error) {
	creds := g.Credentials
	if len(creds) == 0 {
		return nil, "", refuse("credentials", nil, "credentials are required: a JSON object with the keys of %s", desc.Name)
	}
	if !g.FromLinkFlow {
		if err := desc.CheckCredentials(creds); err != nil {
			return nil, "", refuse("credentials", nil, "%s", err.Error())
		}
	}
	baseURL := defaultBase
	if g.BaseURL != "" {
		if err := CheckBaseURL(g.BaseURL); err != nil {
			return nil, "", err
		}
		baseURL = g.BaseURL
	}
	p, err := l.Registry.New(desc.Name, providers.Deps{HTTPClient: &http.Client{Timeout: CallTimeout}})
	if err != nil {
		return nil, "", fmt.Errorf("credentials: %w", err)
	}
	pc := providers.Connection{ID: "new", Provider: desc.Name, BaseURL: baseURL, Credentials: creds}
	if creds, err = exchange(ctx, p, pc); err != nil {
		return nil, "", err
	}
	full, err := withSettings(desc, settings, creds)
	if err != nil {
		return nil, "", err
	}
	if g.Check {
		pc.ID, pc.Credentials = "check", full
		if err := check(ctx, p, pc); err != nil {
			return nil, "", err
		}
	}
	return creds, baseURL, nil
}

// exchange swaps a one-time credential for the lasting one where the
// adapter asks for it (providers.CredentialExchanger: a setup token for an
// access URL), so that only the lasting one is stored; other providers'
// credentials pass through.
func exchange(ctx context.Context, p providers.Provider, pc providers.Connection) ([]byte, error) {
	ex, ok := p.(providers.CredentialExchanger)
	if !ok {
		return pc.Credentials, nil
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	out, err := ex.ExchangeCredentials(ctx, pc)
	if err != nil {
		return nil, refuse("credentials", err, "%s refused them, nothing stored", pc.Provider)
	}
	return out, nil
}

// check fetches the connection's accounts once through the adapter (no
// retries, no circuit breaker).
func check(ctx context.Context, p providers.Provider, pc providers.Connection) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := p.Accounts(ctx, pc); err != nil {
		return refuse("check", err, "%s refused the connection, nothing stored", pc.Provider)
	}
	return nil
}

// withSettings returns creds with the provider's settings merged under
// them, as the worker will hand them to the adapter, or why a key the
// settings require is given by neither.
func withSettings(desc providers.Description, settings, creds []byte) ([]byte, error) {
	merged, err := providers.MergeSettings(settings, creds)
	if err != nil {
		return nil, refuse("credentials", nil, "%s", err.Error())
	}
	if missing := desc.MissingSettings(merged); len(missing) > 0 {
		return nil, refuse("", nil, "%s needs %s: set them once with `finsync providers configure %s --credentials-file PATH`, or give them in the connection's credentials",
			desc.Name, strings.Join(missing, ", "), desc.Name)
	}
	return merged, nil
}

// CheckBaseURL refuses (an *InputError) a base URL that is not an absolute
// http(s) URL.
func CheckBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return refuse("base-url", nil, "%q is not an absolute http(s) URL", s)
	}
	return nil
}

// Reauthed is a connection that took new credentials, and the sync job
// that follows it.
type Reauthed struct {
	Connection domain.BankConnection
	JobID      int64
}

// Reauth puts new credentials on connection id (after its user linked the
// bank again) and enqueues its sync: Resolve with the connection's base
// URL as the default, seal, storage's ReauthConnection, EnqueueSync. An
// unknown connection is storage.ErrNotFound; credentials that are not the
// connection's provider's, or that the provider refuses, an *InputError;
// nothing is stored then. Caveat: the credentials are stored before the
// sync is enqueued, in two steps; a failed enqueue leaves the connection
// due now, for the scheduler's next sweep.
func (l *Linker) Reauth(ctx context.Context, id uuid.UUID, g Given) (Reauthed, error) {
	conn, err := l.Store.GetConnectionAnyUser(ctx, id)
	if err != nil {
		return Reauthed{}, err
	}
	desc, ok := l.Registry.Describe(conn.Provider)
	if !ok {
		return Reauthed{}, fmt.Errorf("connection %s: provider %q has no adapter in this build", id, conn.Provider)
	}
	settings, err := l.Settings(ctx, desc)
	if err != nil {
		return Reauthed{}, err
	}
	creds, baseURL, err := l.Resolve(ctx, desc, settings, g, conn.BaseURL)
	if err != nil {
		return Reauthed{}, fmt.Errorf("connection %s (%s): %w", id, conn.Provider, err)
	}
	sealed, err := l.Box.Seal(creds)
	if err != nil {
		return Reauthed{}, fmt.Errorf("seal the credentials of connection %s: %w", id, err)
	}
	c, err := l.Store.ReauthConnection(ctx, id, sealed, baseURL)
	if err != nil {
		return Reauthed{Connection: c}, err
	}
	if l.Jobs == nil {
		return Reauthed{Connection: c}, errors.New("reauth: no job client to enqueue the sync")
	}
	job, err := EnqueueSync(ctx, l.Jobs, c.ID)
	return Reauthed{Connection: c, JobID: job}, err
}

// EnqueueSync asks for a sync of the connection now and returns the job
// that follows it. Sync jobs are unique per connection while queued or
// running: when one is already waiting (to retry after a failure, or
// snoozed), it is made available at once instead of a second one added.
func EnqueueSync(ctx context.Context, jobs *storage.JobClient, id uuid.UUID) (int64, error) {
	res, err := jobs.Insert(ctx, jobargs.SyncConnection{ConnectionID: id}, nil)
	if err != nil {
		return 0, fmt.Errorf("enqueue sync of %s: %w", id, err)
	}
	if res.UniqueSkippedAsDuplicate && (res.Job.State == rivertype.JobStateRetryable || res.Job.State == rivertype.JobStateScheduled) {
		if _, err := jobs.JobRetry(ctx, res.Job.ID); err != nil {
			return 0, fmt.Errorf("run waiting sync of %s now: %w", id, err)
		}
	}
	return res.Job.ID, nil
}

// EnqueueSyncs asks for a sync of each connection now (EnqueueSync) and
// returns the job following each, by connection. It stops at the first
// failure; the syncs enqueued before it stay enqueued.
func EnqueueSyncs(ctx context.Context, jobs *storage.JobClient, ids []uuid.UUID) (map[uuid.UUID]int64, error) {
	out := make(map[uuid.UUID]int64, len(ids))
	for _, id := range ids {
		job, err := EnqueueSync(ctx, jobs, id)
		if err != nil {
			return nil, err
		}
		out[id] = job
	}
	return out, nil
}
