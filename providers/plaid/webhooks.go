package plaid

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

// VerificationHeader carries the JWT Plaid signs every webhook with.
const VerificationHeader = "Plaid-Verification"

// MaxWebhookAge is how old a webhook's signature (its iat) may be.
const MaxWebhookAge = 5 * time.Minute

// pendingNotice is how long before the end Plaid sends PENDING_EXPIRATION
// and PENDING_DISCONNECT: the end assumed for one that states no time.
const pendingNotice = 7 * 24 * time.Hour

// keyRefresh is how long a verification key is kept before it is asked
// for again (a rotated key then shows its expiry), and how long a key id
// Plaid does not know is remembered as unknown.
const keyRefresh = time.Hour

var _ providers.WebhookReceiver = (*Adapter)(nil)

// webhook is the part of a Plaid webhook body the adapter reads.
type webhook struct {
	WebhookType           string    `json:"webhook_type"`
	WebhookCode           string    `json:"webhook_code"`
	ItemID                string    `json:"item_id"`
	ConsentExpirationTime *string   `json:"consent_expiration_time"`
	DisconnectTime        *string   `json:"disconnect_time"`
	Error                 *apiError `json:"error"`
}

// ReadWebhook reads a Plaid webhook: TRANSACTIONS SYNC_UPDATES_AVAILABLE
// asks for a sync; ITEM PENDING_EXPIRATION and PENDING_DISCONNECT give the
// consent's end; ITEM ERROR and USER_PERMISSION_REVOKED need a re-auth;
// ITEM LOGIN_REPAIRED asks for a sync of a broken Item. Every other
// webhook is acknowledged and ignored.
func (a *Adapter) ReadWebhook(_ http.Header, body []byte) (providers.Notice, error) {
	var w webhook
	if err := json.Unmarshal(body, &w); err != nil || w.WebhookType == "" || w.WebhookCode == "" {
		return providers.Notice{}, fmt.Errorf("%w: not a Plaid webhook (a JSON object with webhook_type and webhook_code)", domain.ErrNoticeRefused)
	}
	n := providers.Notice{LinkID: w.ItemID, Type: w.WebhookType + "/" + w.WebhookCode, Kind: domain.NoticeIgnored}
	switch n.Type {
	case "TRANSACTIONS/SYNC_UPDATES_AVAILABLE":
		n.Kind = domain.NoticeSync
	case "ITEM/PENDING_EXPIRATION", "ITEM/PENDING_DISCONNECT":
		at := w.ConsentExpirationTime
		if at == nil {
			at = w.DisconnectTime
		}
		n.Kind, n.ConsentExpiresAt = domain.NoticeConsent, time.Now().Add(pendingNotice)
		if at != nil {
			t, err := time.Parse(time.RFC3339, *at)
			if err != nil {
				return n, fmt.Errorf("%w: %s: %q is not a date-time", domain.ErrNoticeRefused, n.Type, *at)
			}
			n.ConsentExpiresAt = t
		}
	case "ITEM/ERROR", "ITEM/USER_PERMISSION_REVOKED":
		n.Kind, n.Code, n.Message = domain.NoticeReauth, w.WebhookCode, "Plaid reported the Item needs the user to link it again"
		if w.Error != nil && w.Error.ErrorCode != "" {
			n.Code, n.Message = w.Error.ErrorCode, w.Error.ErrorMessage
		}
		if n.Type == "ITEM/ERROR" && (w.Error == nil || !reauthCodes[w.Error.ErrorCode]) {
			// An error the user cannot fix (an institution outage) shows at
			// the next sync; only a broken login stops the schedule here.
			n.Kind = domain.NoticeIgnored
		}
	case "ITEM/LOGIN_REPAIRED":
		n.Kind = domain.NoticeRepaired
	}
	return n, nil
}

// VerifyWebhook checks the Plaid-Verification JWT: signed with ES256 by
// the key /webhook_verification_key/get gives for its kid (fetched with the
// connection's client_id and secret, and cached), issued at most
// MaxWebhookAge before now, and with request_body_sha256 the SHA-256 of
// body.
func (a *Adapter) VerifyWebhook(ctx context.Context, conn providers.Connection, header http.Header, body []byte, now time.Time) error {
	raw := header.Get(VerificationHeader)
	if raw == "" {
		return fmt.Errorf("%w: no %s header", domain.ErrNoticeRefused, VerificationHeader)
	}
	var claims webhookClaims
	// What needs no key is checked first, so that a stale or altered
	// notification costs no key fetch.
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &claims); err != nil {
		return fmt.Errorf("%w: %s: %v", domain.ErrNoticeRefused, VerificationHeader, err)
	}
	if err := claims.check(body, now); err != nil {
		return err
	}
	claims = webhookClaims{}
	var fetchErr error
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, err := a.keys.get(ctx, kid, now, func(ctx context.Context) (*webhookKey, error) { return a.fetchKey(ctx, conn, kid) })
		if err != nil && !errors.Is(err, errUnknownKey) {
			fetchErr = err
		}
		return key, err
	}, jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}), jwt.WithTimeFunc(func() time.Time { return now }))
	if fetchErr != nil {
		return fetchErr
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", domain.ErrNoticeRefused, VerificationHeader, err)
	}
	return claims.check(body, now)
}

// webhookClaims are the claims of a Plaid-Verification JWT.
type webhookClaims struct {
	jwt.RegisteredClaims
	BodySHA256 string `json:"request_body_sha256"`
}

// check refuses claims issued more than MaxWebhookAge before now (or in
// the future), or whose request_body_sha256 is not body's.
func (c *webhookClaims) check(body []byte, now time.Time) error {
	if c.IssuedAt == nil || now.Sub(c.IssuedAt.Time) > MaxWebhookAge || c.IssuedAt.Time.After(now.Add(time.Minute)) {
		return fmt.Errorf("%w: %s was not issued within the last %s", domain.ErrNoticeRefused, VerificationHeader, MaxWebhookAge)
	}
	sum := sha256.Sum256(body)
	if subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(c.BodySHA256)) != 1 {
		return fmt.Errorf("%w: the body is not the one %s signed", domain.ErrNoticeRefused, VerificationHeader)
	}
	return nil
}

// errUnknownKey is a kid Plaid does not know.
var errUnknownKey = errors.New("unknown verification key id")

// webhookKey is one verification key, as fetched.
type webhookKey struct {
	pub       *ecdsa.PublicKey // nil: Plaid does not know the kid
	expiredAt time.Time        // zero: not expired
	fetched   time.Time
}

// keyCache keeps the verification keys by kid, for one adapter. It is
// safe for concurrent use (concurrent misses of one kid may fetch it
// twice, which is harmless).
type keyCache struct {
	mu   sync.Mutex
	keys map[string]*webhookKey
}

// get returns kid's public key, fetching it when absent or older than
// keyRefresh. An expired key, or one Plaid does not know, is refused.
func (c *keyCache) get(ctx context.Context, kid string, now time.Time, fetch func(context.Context) (*webhookKey, error)) (*ecdsa.PublicKey, error) {
	if kid == "" {
		return nil, errUnknownKey
	}
	c.mu.Lock()
	k := c.keys[kid]
	c.mu.Unlock()
	if k == nil || now.Sub(k.fetched) > keyRefresh {
		fresh, err := fetch(ctx)
		if err != nil {
			return nil, err
		}
		fresh.fetched = now
		c.mu.Lock()
		if c.keys == nil {
			c.keys = map[string]*webhookKey{}
		}
		if len(c.keys) > 1000 { // bounded: unknown kids cannot grow it forever
			clear(c.keys)
		}
		c.keys[kid] = fresh
		c.mu.Unlock()
		k = fresh
	}
	if k.pub == nil {
		return nil, errUnknownKey
	}
	if !k.expiredAt.IsZero() && !now.Before(k.expiredAt) {
		return nil, fmt.Errorf("verification key %s expired at %s", kid, k.expiredAt.UTC().Format(time.RFC3339))
	}
	return k.pub, nil
}

// jwk is the key /webhook_verification_key/get answers.
type jwk struct {
	Alg       string `json:"alg"`
	Crv       string `json:"crv"`
	Kid       string `json:"kid"`
	Kty       string `json:"kty"`
	X         string `json:"x"`
	Y         string `json:"y"`
	ExpiredAt *int64 `json:"expired_at"`
}

// codeUnknownKeyID is Plaid's error code for a key_id it does not know.
const codeUnknownKeyID = "INVALID_WEBHOOK_VERIFICATION_KEY_ID"

// fetchKey asks /webhook_verification_key/get for kid. A kid Plaid does
// not know (codeUnknownKeyID) is a key with no public part: remembered,
// and refused; any other failure is returned (the check could not be
// made).
func (a *Adapter) fetchKey(ctx context.Context, conn providers.Connection, kid string) (*webhookKey, error) {
	var resp struct {
		Key jwk `json:"key"`
	}
	err := a.postKeys(ctx, conn, "/webhook_verification_key/get", map[string]any{"key_id": kid}, &resp)
	var pe *resilience.Error
	if errors.As(err, &pe) && pe.Code == codeUnknownKeyID {
		// Only a kid Plaid says it does not know is remembered: another
		// refusal (this connection's keys revoked) says nothing of the
		// kid, and other connections' checks must not inherit it.
		return &webhookKey{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plaid webhook verification key %s: %w", kid, err)
	}
	pub, err := resp.Key.public()
	if err != nil {
		return nil, fmt.Errorf("plaid webhook verification key %s: %w", kid, err)
	}
	k := &webhookKey{pub: pub}
	if e := resp.Key.ExpiredAt; e != nil {
		k.expiredAt = time.Unix(*e, 0)
	}
	return k, nil
}

// public decodes an EC P-256 JWK.
func (k jwk) public() (*ecdsa.PublicKey, error) {
	if k.Kty != "EC" || k.Crv != "P-256" {
		return nil, fmt.Errorf("key type %s/%s is not EC P-256", k.Kty, k.Crv)
	}
	x, errX := base64.RawURLEncoding.DecodeString(k.X)
	y, errY := base64.RawURLEncoding.DecodeString(k.Y)
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("key coordinates are not 32-byte base64url values")
	}
	// The point is checked to lie on the curve as it is parsed.
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, fmt.Errorf("key point: %w", err)
	}
	return pub, nil
}
