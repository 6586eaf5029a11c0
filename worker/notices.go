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
	if n.LinkID == "" {
		return domain.NoticeUnknownLink, nil
	}
	st := r.Syncer.Store
	id, err := st.ConnectionByLink(ctx, provider, n.LinkID)
	if errors.Is(err, storage.ErrNotFound) {
		return domain.NoticeUnknownLink, nil
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
	return domain.NoticeApplied, st.Atomic(ctx, func(tx *storage.Tx) error { return r.apply(ctx, tx, id, n) })
}

// receiverOf returns provider's adapter as a WebhookReceiver.
func (r *NoticeReceiver) receiverOf(provider string) (providers.WebhookReceiver, bool) {
	p, ok := r.Syncer.Providers[provider]
	if !ok {
		return nil, false
	}
	if res, isResilient := p.(*providers.Resilient); isResilient {
		p = res.Unwrap()
	}
	hooks, ok := p.(providers.WebhookReceiver)
	return hooks, ok
}

// verify has the adapter check the signature with connection id's
// credentials and the provider's settings.
func (r *NoticeReceiver) verify(ctx context.Context, hooks providers.WebhookReceiver, id uuid.UUID, header http.Header, body []byte) error {
	target, err := r.Syncer.Store.SyncTarget(ctx, id)
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
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	return hooks.VerifyWebhook(ctx, pc, header, body, now())
}

// apply acts on a verified notification inside tx.
func (r *NoticeReceiver) apply(ctx context.Context, tx *storage.Tx, id uuid.UUID, n domain.ProviderNotice) error {
	args := jobargs.SyncConnection{ConnectionID: id}
	var subs []uuid.UUID
	var err error
	switch n.Kind {
	case domain.NoticeSync:
		_, err = tx.RequestSync(ctx, r.Jobs, id, args)
	case domain.NoticeRepaired:
		_, err = tx.RequestResync(ctx, r.Jobs, id, args)
	case domain.NoticeConsent:
		subs, err = tx.RecordConsentEnd(ctx, id, n.ConsentExpiresAt, cmp.Or(r.Syncer.ConsentWarning, DefaultConsentWarning))
	case domain.NoticeReauth:
		subs, err = tx.FinishSync(ctx, id, storage.SyncOutcome{ErrorCode: n.Code, ErrorMessage: n.Message,
			ErrorClass: className(providers.ReauthRequired), Unschedule: true,
			ReconnectURL: strings.ReplaceAll(r.Syncer.ReconnectURL, "{connection_id}", id.String())})
	}
	if err != nil {
		return err
	}
	for _, sub := range subs {
		if err := tx.Enqueue(ctx, r.Jobs, jobargs.DeliverWebhook{SubscriptionID: sub}); err != nil {
			return err
		}
	}
	return nil
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
		if req, err = s.Store.SyncRequestOf(ctx, id); err != nil {
			return time.Time{}, err
		}
	}
}
