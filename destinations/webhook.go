package destinations

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/resilience"
)

// CodeAddressNotAllowed is the code of a webhook call refused because its
// host resolved to an address the netguard policy forbids (a permanent
// failure: the event is set aside).
const CodeAddressNotAllowed = "ADDRESS_NOT_ALLOWED"

// SignatureHeader carries a webhook's signature.
const SignatureHeader = "Finsync-Signature"

// Sign returns the Finsync-Signature value of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with secret>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a Finsync-Signature header against the body, refusing
// signatures older than tolerance (when positive) relative to now. It is
// what a receiver runs.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("verify signature: malformed header")
	}
	if tolerance > 0 && now.Sub(time.Unix(sec, 0)).Abs() > tolerance {
		return fmt.Errorf("verify signature: timestamp outside tolerance")
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("verify signature: no matching signature")
}

// sendWebhook POSTs the event, signed; any 2xx acknowledges it.
func sendWebhook(ctx context.Context, client *http.Client, now func() time.Time, c WebhookConfig, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return permanent(KindWebhook, "BAD_EVENT", fmt.Sprintf("encode event: %v", err))
	}
	h := http.Header{}
	h.Set(SignatureHeader, Sign(c.Secret, now(), body))
	h.Set("User-Agent", "finsync-webhooks/1")
	err = do(ctx, client, request{service: KindWebhook, method: http.MethodPost, url: c.URL, header: h, body: body}, nil, nil)
	if errors.Is(err, netguard.ErrRefused) {
		return &resilience.Error{Provider: KindWebhook, Class: resilience.Permanent, Code: CodeAddressNotAllowed,
			Message: "webhook address refused: " + err.Error(), Err: err}
	}
	return webhookRetryable(err)
}

// webhookRetryable treats every refusal by a receiver, apart from a rate
// limit, as transient: a receiver answering 4xx is usually misconfigured or
// deploying, and the event must not be lost.
func webhookRetryable(err error) error {
	pe := resilience.AsError(err)
	if pe == nil || pe.HTTPStatus == 0 || pe.HTTPStatus == http.StatusTooManyRequests {
		return err
	}
	pe.Class = resilience.Unavailable
	return pe
}
