package providers

import (
	"context"
	"net/http"
	"time"

	"github.com/finsync/finsync/domain"
)

// Notice is one provider notification as an adapter reads it (an alias of
// domain.ProviderNotice).
type Notice = domain.ProviderNotice

// WebhookReceiver is implemented by an adapter whose provider sends
// notifications (webhooks) about its links. `serve` accepts them at
// POST /providers/{provider}/webhooks: it reads the notification, finds
// the connection whose link it names, has the adapter verify the
// provider's signature with that connection's credentials, and only then
// acts on it (docs/webhooks.md).
type WebhookReceiver interface {
	// ReadWebhook reads a notification body, not yet verified: which
	// link it is about and what it asks. An error (wrapping
	// domain.ErrNoticeRefused) means the body is not one of the
	// provider's notifications.
	ReadWebhook(header http.Header, body []byte) (Notice, error)
	// VerifyWebhook checks that the provider signed this very body, at
	// most a few minutes before now, with conn the connection the notice
	// names (its credentials, with the provider's settings merged under
	// them, hold what the check needs). A refusal wraps
	// domain.ErrNoticeRefused; another error means the check could not be
	// made (the provider's key endpoint unreachable): the sender should
	// try again.
	VerifyWebhook(ctx context.Context, conn Connection, header http.Header, body []byte, now time.Time) error
}
