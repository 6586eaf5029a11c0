package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/storage"
)

// NoticeReceiver takes the notifications providers send about their
// links (POST /providers/{provider}/webhooks, served by `serve`): it reads
// one with the provider's adapter, finds the connection whose link it
// names, has the adapter verify the provider's signature with that
// connection's credentials, and acts on it in one database transaction —
// a sync enqueued (coalesced: see RequestSync and NoticeQuiet), a consent
// end recorded, a broken link marked as needing a re-auth, a repaired one
// synced. Caveat: a notification for a link no connection has reported
// yet (before its first successful sync) is acknowledged and dropped
// unverified, since the keys to verify it come with a connection.
type NoticeReceiver struct {
	// Syncer gives the store, the adapters, the sealing box, the
	// reconnect URL and the consent warning, as for syncs.
	Syncer *Syncer
	// Jobs enqueues the syncs and webhook deliveries a notification
	// causes (the API's insert-only River client).
	Jobs storage.JobInserter
	// Now is the clock a signature's age is checked against; nil means
	// time.Now.
	Now func() time.Time
}

// Receive handles one notification of provider, with its headers and raw
// body. Errors: domain.ErrNoticeProvider when the provider is unknown or
// sends none, a wrapped domain.ErrNoticeRefused when the body or its
// signature is not the provider's (nothing is done), any other when the
// notification could not be checked or stored (the provider should send it
// again).
func (r *NoticeReceiver) Receive(ctx context.Context, provider string, header http.Header, body []byte) (domain.NoticeResult, error) {
	hooks, ok := r.receiverOf(provider)
	if !ok {
		return "", domain.ErrNoticeProvider
	}
	n, err := hooks.ReadWebhook(header, body)
	if err != nil {
		return "", err
	}
	st := r.Syncer.Store
	id, err := uuid.Nil, storage.ErrNotFound
	if n.LinkID != "" {
		id, err = st.GetConnectionIDByLink(ctx, provider, n.LinkID)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return r.unknownLink(ctx, hooks, provider, header, body)
	}
	if err != nil {
		return "", err
	}
	if err := r.verify(ctx, hooks, id, header, body); err != nil {
		return "", err
	}
	if n.Kind == domain.NoticeIgnored {
		return domain.NoticeNoAction, nil
	}
	var acted bool
	err = st.Atomic(ctx, func(tx *storage.Tx) (err error) { acted, err = r.apply(ctx, tx, id, n); return err })
	if err != nil || !acted {
		return domain.NoticeNoAction, err
	}
	return domain.NoticeApplied, nil
}

// unknownLink answers a notification that names no stored connection: it
// is checked with the provider's settings alone (a signing secret the
// provider gives once, for every link), and refused when that check
// refuses it; a provider whose check needs a connection's own keys leaves
// it unverified, acknowledged and dropped (NoticeUnknownLink).
func (r *NoticeReceiver) unknownLink(ctx context.Context, hooks providers.WebhookReceiver, provider string, header http.Header, body []byte) (domain.NoticeResult, error) {
	creds, err := r.Syncer.withSettings(ctx, provider, []byte("{}"))
	if err != nil {
		if resilience.AsError(err) == nil {
			return "", err
		}
		return domain.NoticeUnknownLink, nil
	}
	err = hooks.VerifyWebhook(ctx, providers.Connection{Provider: provider, Credentials: creds}, header, body, r.now())
	if errors.Is(err, domain.ErrNoticeRefused) {
		return "", err
	}
	return domain.NoticeUnknownLink, nil
}

// now is the receiver's clock.
func (r *NoticeReceiver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// receiverOf returns provider's adapter as a WebhookReceiver: behind its
// resilience guard when the Syncer's adapters are (NewProviders), so that
// the calls a check makes share the provider's limits and breakers.
func (r *NoticeReceiver) receiverOf(provider string) (providers.WebhookReceiver, bool) {
	p, ok := r.Syncer.Providers[provider]
	if !ok {
		return nil, false
	}
	if res, isResilient := p.(*providers.Resilient); isResilient {
		return res, res.Receives()
	}
	hooks, ok := p.(providers.WebhookReceiver)
	return hooks, ok
}

// verify has the adapter check the signature with connection id's
// credentials and the provider's settings.
func (r *NoticeReceiver) verify(ctx context.Context, hooks providers.WebhookReceiver, id uuid.UUID, header http.Header, body []byte) error {
	target, err := r.Syncer.Store.GetSyncTarget(ctx, id)
	if err != nil {
		return err
	}
	conn := target.Connection
	creds, err := r.Syncer.Box.Open(target.SealedCredentials)
	if err != nil {
		return fmt.Errorf("verify notification for connection %s: open its credentials: %w", id, err)
	}
	if creds, err = r.Syncer.withSettings(ctx, conn.Provider, creds); err != nil {
		return fmt.Errorf("verify notification for connection %s: %w", id, err)
	}
	pc := providers.Connection{ID: id.String(), Provider: conn.Provider, InstitutionID: conn.InstitutionID,
		BaseURL: conn.BaseURL, Credentials: creds}
	return hooks.VerifyWebhook(ctx, pc, header, body, r.now())
}

// apply acts on a verified notification inside tx; it reports false when
// there was nothing to do (a sync asked of a connection off the schedule).
func (r *NoticeReceiver) apply(ctx context.Context, tx *storage.Tx, id uuid.UUID, n domain.ProviderNotice) (bool, error) {
	args := jobargs.SyncConnection{ConnectionID: id}
	var subs []uuid.UUID
	acted := true
	var err error
	switch n.Kind {
	case domain.NoticeSync:
		acted, err = tx.RequestSync(ctx, r.Jobs, id, args)
	case domain.NoticeRepaired:
		acted, err = tx.RequestResync(ctx, r.Jobs, id, args)
	case domain.NoticeConsent:
		subs, err = tx.RecordConsentEnd(ctx, id, n.ConsentExpiresAt, cmp.Or(r.Syncer.ConsentWarning, DefaultConsentWarning))
	case domain.NoticeReauth:
		subs, err = tx.FinishSync(ctx, id, storage.SyncOutcome{ErrorCode: n.Code, ErrorMessage: n.Message,
			ErrorClass: className(resilience.ReauthRequired), Unschedule: true,
			ReconnectURL: strings.ReplaceAll(r.Syncer.ReconnectURL, "{connection_id}", id.String())})
	}
	if err != nil {
		return false, err
	}
	for _, sub := range subs {
		if err := tx.Enqueue(ctx, r.Jobs, jobargs.DeliverWebhook{SubscriptionID: sub}); err != nil {
			return false, err
		}
	}
	return acted, nil
}

// NoticeQuiet is how long a sync asked for by a provider notification
// waits after the last one before it reads from the provider, so that
// notifications sent together (a provider's retries, several updates in
// a burst) give one sync.
const NoticeQuiet = time.Second

// noticeWaitMax bounds that wait under a steady stream of notifications.
const noticeWaitMax = 5 * time.Second

// settle waits until connection id's last sync request by a notification
// (req, then as re-read) is NoticeQuiet old, at most noticeWaitMax, and
// returns the database's time as the sync begins to read: a request after
// it leaves the next sync due at once (storage.SyncOutcome.ReadFrom). A
// connection with no recent request does not wait.
func (s *Syncer) settle(ctx context.Context, id uuid.UUID, req storage.SyncRequest) (time.Time, error) {
	deadline := time.Now().Add(noticeWaitMax)
	for {
		wait := req.RequestedAt.Add(NoticeQuiet).Sub(req.Now)
		if req.RequestedAt.IsZero() || wait <= 0 || !time.Now().Before(deadline) {
			return req.Now, nil
		}
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Time{}, ctx.Err()
		case <-t.C:
		}
		var err error
		if req, err = s.Store.GetSyncRequest(ctx, id); err != nil {
			return time.Time{}, err
		}
	}
}
