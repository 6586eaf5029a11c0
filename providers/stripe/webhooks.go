package stripe

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
)

// SignatureHeader carries Stripe's signature of an event.
const SignatureHeader = "Stripe-Signature"

// SignatureTolerance is how far a signature's timestamp may be from now.
const SignatureTolerance = 5 * time.Minute

var _ providers.WebhookReceiver = (*Adapter)(nil)

// event is the part of a Stripe event the adapter reads.
type event struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Type    string `json:"type"`
	Account string `json:"account"`
}

// ReadWebhook reads a Stripe event sent to a Connect endpoint: its
// account (the connected account, the connection's "account" credential)
// is the link; balance.available asks for a sync, every other type is
// acknowledged and ignored. An event without an account (the platform's
// own) names no connection.
func (a *Adapter) ReadWebhook(_ http.Header, body []byte) (providers.Notice, error) {
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil || ev.Object != "event" || ev.Type == "" {
		return providers.Notice{}, fmt.Errorf("%w: not a Stripe event (a JSON object with object \"event\" and a type)", domain.ErrNoticeRefused)
	}
	n := providers.Notice{LinkID: ev.Account, Type: ev.Type, Kind: domain.NoticeIgnored}
	if ev.Type == "balance.available" {
		n.Kind = domain.NoticeSync
	}
	return n, nil
}

// VerifyWebhook checks Stripe-Signature (t=…,v1=…): an HMAC-SHA256 of
// "t.body" with the endpoint's secret (the webhook_secret setting), its t
// within SignatureTolerance of now. Any of several v1 values may match
// (Stripe sends one per secret while a secret is rolled).
func (a *Adapter) VerifyWebhook(_ context.Context, conn providers.Connection, header http.Header, body []byte, now time.Time) error {
	var creds struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	if err := json.Unmarshal(conn.Credentials, &creds); err != nil || creds.WebhookSecret == "" {
		return fmt.Errorf("%w: no webhook_secret is set for Stripe (finsync providers configure stripe)", domain.ErrNoticeRefused)
	}
	ts, sigs := parseSignature(header.Get(SignatureHeader))
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: no %s header with t= and v1=", domain.ErrNoticeRefused, SignatureHeader)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s: t is not a Unix time", domain.ErrNoticeRefused, SignatureHeader)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > SignatureTolerance || d < -SignatureTolerance {
		return fmt.Errorf("%w: %s: t is not within %s of now", domain.ErrNoticeRefused, SignatureHeader, SignatureTolerance)
	}
	want := Sign(creds.WebhookSecret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s does not match the body", domain.ErrNoticeRefused, SignatureHeader)
}

// Sign returns the hex HMAC-SHA256 of "ts.body" with secret: the v1
// value of Stripe-Signature.
func Sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// parseSignature splits Stripe-Signature into its timestamp and v1 values.
func parseSignature(h string) (ts string, v1 []string) {
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
		case k == "t":
			ts = v
		case k == "v1":
			v1 = append(v1, v)
		}
	}
	return ts, v1
}
