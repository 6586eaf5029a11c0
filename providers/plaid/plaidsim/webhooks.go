package plaidsim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// notifier signs and sends one simulator's Plaid webhooks, as Plaid does:
// a JSON body with webhook_type, webhook_code and item_id, and a
// Plaid-Verification JWT (ES256, its kid served by
// /webhook_verification_key/get) whose request_body_sha256 is the body's
// SHA-256. They go to the URL set with POST /_sim/webhooks, for the Items
// that called /transactions/sync at least once: SYNC_UPDATES_AVAILABLE
// when the clock advances, PENDING_EXPIRATION once when a consent set
// with /_sim/consent is 7 days or less from its end, ERROR
// (ITEM_LOGIN_REQUIRED) when it has ended or the login_required fault is
// set, LOGIN_REPAIRED when that fault is cleared. /sandbox/item/fire_webhook
// sends one on demand.
type notifier struct {
	h   *sim.Simulator
	key *ecdsa.PrivateKey
	kid string

	mu sync.Mutex
	// items are the tokens of the Items that synced, with their item ids.
	items map[string]string
	// warned and ended are the consent ends already notified, by token.
	warned, ended map[string]time.Time
}

// newNotifier makes h's notifier. Its signing key and kid derive from the
// simulator's seed: two simulators with one seed sign alike.
func newNotifier(h *sim.Simulator) *notifier {
	var key *ecdsa.PrivateKey
	for i := uint64(0); key == nil; i++ {
		var d [32]byte
		for j := range 4 {
			binary.BigEndian.PutUint64(d[8*j:], simkit.Hash2(h.Seed()^0x3eb4, i*4+uint64(j)))
		}
		key, _ = ecdsa.ParseRawPrivateKey(elliptic.P256(), d[:]) // nil for the rare value past the order
	}
	return &notifier{h: h, key: key, kid: simkit.UUIDFrom(simkit.Mix(h.Seed() ^ 0x3eb4)),
		items: map[string]string{}, warned: map[string]time.Time{}, ended: map[string]time.Time{}}
}

// synced records that an Item called /transactions/sync.
func (n *notifier) synced(it *plaidItem) {
	n.mu.Lock()
	n.items[it.token] = it.itemID
	n.mu.Unlock()
}

// changed sends the webhooks a clock advance or a fault causes.
func (n *notifier) changed(c sim.Change) {
	if n.h.WebhookURL(Name) == "" {
		return
	}
	n.mu.Lock()
	items := make(map[string]string, len(n.items))
	for tok, id := range n.items {
		items[tok] = id
	}
	n.mu.Unlock()
	for tok, id := range items {
		switch {
		case c.Days > 0:
			n.consentWebhooks(tok, id)
			n.send(syncUpdates(id))
		case c.Fault != nil && c.Fault.Mode == sim.FaultLoginRequired:
			n.send(itemError(id))
		case c.Fault != nil && c.Previous.Mode == sim.FaultLoginRequired:
			n.send(map[string]any{"webhook_type": "ITEM", "webhook_code": "LOGIN_REPAIRED", "item_id": id, "environment": "sandbox"})
		}
	}
}

// consentWebhooks sends PENDING_EXPIRATION and, once it has ended, ERROR
// for the consent of the Item with token tok, once each per end.
func (n *notifier) consentWebhooks(tok, id string) {
	ends, set, ended := n.h.ConsentEnds(Name, tok)
	if !set {
		return
	}
	n.mu.Lock()
	warn := !ended && n.h.WallNow().Add(7*24*time.Hour).After(ends) && !n.warned[tok].Equal(ends)
	if warn {
		n.warned[tok] = ends
	}
	gone := ended && !n.ended[tok].Equal(ends)
	if gone {
		n.ended[tok] = ends
	}
	n.mu.Unlock()
	if warn {
		n.send(pendingExpiration(id, ends))
	}
	if gone {
		n.send(itemError(id))
	}
}

// syncUpdates is TRANSACTIONS SYNC_UPDATES_AVAILABLE for an Item.
func syncUpdates(itemID string) map[string]any {
	return map[string]any{"webhook_type": "TRANSACTIONS", "webhook_code": "SYNC_UPDATES_AVAILABLE", "item_id": itemID,
		"initial_update_complete": true, "historical_update_complete": true, "environment": "sandbox"}
}

// pendingExpiration is ITEM PENDING_EXPIRATION for an Item whose consent
// ends at ends.
func pendingExpiration(itemID string, ends time.Time) map[string]any {
	return map[string]any{"webhook_type": "ITEM", "webhook_code": "PENDING_EXPIRATION", "item_id": itemID,
		"consent_expiration_time": ends.UTC().Format(time.RFC3339), "environment": "sandbox"}
}

// itemError is ITEM ERROR with ITEM_LOGIN_REQUIRED for an Item.
func itemError(itemID string) map[string]any {
	return map[string]any{"webhook_type": "ITEM", "webhook_code": "ERROR", "item_id": itemID, "environment": "sandbox",
		"error": map[string]any{"error_type": "ITEM_ERROR", "error_code": "ITEM_LOGIN_REQUIRED", "error_code_reason": nil,
			"error_message": loginRequiredMessage, "display_message": loginRequiredDisplay, "status": 400}}
}

// send signs body and has the simulator post it to the webhook URL.
func (n *notifier) send(body map[string]any) {
	raw, err := json.Marshal(body)
	if err != nil {
		return
	}
	n.h.Notify(Name, raw, func(b []byte, now time.Time) http.Header {
		return http.Header{"Plaid-Verification": {n.sign(b, now)}}
	})
}

// sign returns the Plaid-Verification JWT of body, issued at iat.
func (n *notifier) sign(body []byte, iat time.Time) string {
	sum := sha256.Sum256(body)
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iat": iat.Unix(), "request_body_sha256": hex.EncodeToString(sum[:])})
	tok.Header["kid"] = n.kid
	s, err := tok.SignedString(n.key)
	if err != nil {
		panic("plaidsim: sign webhook: " + err.Error()) // an ES256 key always signs
	}
	return s
}

// jwk is the signing key's public half as /webhook_verification_key/get
// answers it.
func (n *notifier) jwk() map[string]any {
	raw, err := n.key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		panic("plaidsim: public key: " + err.Error())
	}
	enc := base64.RawURLEncoding.EncodeToString
	return map[string]any{"alg": "ES256", "created_at": n.h.Options().Start.Unix(), "crv": "P-256", "expired_at": nil,
		"kid": n.kid, "kty": "EC", "use": "sig", "x": enc(raw[1:33]), "y": enc(raw[33:65])}
}

// plaidVerificationKey serves /webhook_verification_key/get, which needs
// the API keys and the kid of a webhook's JWT.
func (s *server) plaidVerificationKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ClientID string `json:"client_id"`
		Secret   string `json:"secret"`
		KeyID    string `json:"key_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_BODY", "body could not be parsed as JSON", "")
		return
	}
	if !simkit.IsToken(req.ClientID, 8, 64) || !simkit.IsToken(req.Secret, 8, 64) {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_API_KEYS", "invalid client_id or secret provided", "")
		return
	}
	if req.KeyID != s.notes.kid {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_WEBHOOK_VERIFICATION_KEY_ID", "invalid key_id provided", "")
		return
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"key": s.notes.jwk(), "request_id": plaidRequestID()})
}

// plaidFireWebhook serves /sandbox/item/fire_webhook: it sends one of the
// Item's webhooks now, by webhook_code.
func (s *server) plaidFireWebhook(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
	var body map[string]any
	switch req.WebhookCode {
	case "SYNC_UPDATES_AVAILABLE":
		body = syncUpdates(it.itemID)
	case "LOGIN_REPAIRED", "USER_PERMISSION_REVOKED":
		body = map[string]any{"webhook_type": "ITEM", "webhook_code": req.WebhookCode, "item_id": it.itemID, "environment": "sandbox"}
	case "ERROR":
		body = itemError(it.itemID)
	case "PENDING_EXPIRATION":
		body = pendingExpiration(it.itemID, s.h.WallNow().Add(7*24*time.Hour))
	default:
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_FIELD", "webhook_code is not one the sandbox fires", "")
		return
	}
	s.notes.send(body)
	simkit.WriteJSON(w, http.StatusOK, map[string]any{"webhook_fired": true, "request_id": plaidRequestID()})
}
