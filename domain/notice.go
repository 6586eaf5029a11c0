package domain

import (
	"errors"
	"time"
)

// NoticeKind is what a provider's notification asks of finsync.
type NoticeKind string

// The notification kinds every adapter maps its provider's notifications
// to (docs/webhooks.md, "Provider notifications in").
const (
	// NoticeSync: the provider has new data for the link; sync it now.
	NoticeSync NoticeKind = "sync"
	// NoticeConsent: the user's consent ends at ConsentExpiresAt.
	NoticeConsent NoticeKind = "consent"
	// NoticeReauth: the link is broken until the user links the bank
	// again (a changed login, a revoked permission).
	NoticeReauth NoticeKind = "reauth"
	// NoticeRepaired: a broken link works again without a re-auth here;
	// sync it now.
	NoticeRepaired NoticeKind = "repaired"
	// NoticeIgnored: a notification the provider sends that finsync has
	// no use for; it is acknowledged and nothing happens.
	NoticeIgnored NoticeKind = "ignored"
)

// ProviderNotice is one provider notification, as its adapter read it.
type ProviderNotice struct {
	// LinkID is the provider's id of the link the notification is about
	// (BankConnection's provider link id), empty when it names none.
	LinkID string
	// Kind is what the notification asks.
	Kind NoticeKind
	// Type names the notification as the provider does, for logs
	// ("TRANSACTIONS/SYNC_UPDATES_AVAILABLE", "balance.available").
	Type string
	// ConsentExpiresAt, for NoticeConsent, is when the consent ends.
	ConsentExpiresAt time.Time
	// Code and Message, for NoticeReauth, are the provider's error.
	Code, Message string
}

// NoticeResult is what finsync did with a notification.
type NoticeResult string

// The results of a received notification.
const (
	// NoticeApplied: the notification was verified and acted on.
	NoticeApplied NoticeResult = "applied"
	// NoticeUnknownLink: it names no stored connection; nothing was done.
	NoticeUnknownLink NoticeResult = "unknown_connection"
	// NoticeNoAction: verified, and it asks nothing (NoticeIgnored).
	NoticeNoAction NoticeResult = "ignored"
)

// ErrNoticeRefused wraps why a notification was refused: not one of the
// provider's notifications, a missing or bad signature, a stale one. The
// sender gets 400 and nothing is done.
var ErrNoticeRefused = errors.New("notification refused")

// ErrNoticeProvider says that the provider named in a notification's path
// is not registered or sends no notifications (404).
var ErrNoticeProvider = errors.New("no notifications from this provider")
