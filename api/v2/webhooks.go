package v2

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/storage"
)

// maxWebhookEvents bounds the event list of a subscription (each type at
// most once).
var maxWebhookEvents = len(storage.WebhookEventTypes())

// webhookView is the Webhook object; Secret is set only in the answer to
// the create call, the one time the secret is shown.
type webhookView struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt string   `json:"createdAt"`
	Secret    string   `json:"secret,omitempty"`
}

func newWebhookView(w storage.WebhookSubscription) webhookView {
	return webhookView{ID: w.ID.String(), URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt.Format(time.RFC3339)}
}

// deliveryView is the WebhookDelivery object.
type deliveryView struct {
	EventID       string          `json:"eventId"`
	Type          string          `json:"type"`
	CreatedAt     string          `json:"createdAt"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	LastError     *string         `json:"lastError"`
	LastAttemptAt *string         `json:"lastAttemptAt"`
	NextAttemptAt *string         `json:"nextAttemptAt"`
	DeliveredAt   *string         `json:"deliveredAt"`
	Data          json.RawMessage `json:"data"`
}

func newDeliveryView(d storage.WebhookDelivery) deliveryView {
	return deliveryView{EventID: d.EventID.String(), Type: d.Type, CreatedAt: d.CreatedAt.Format(time.RFC3339Nano),
		Status: d.Status(), Attempts: d.Attempts, LastError: d.LastError, LastAttemptAt: timeText(d.LastAttemptAt),
		NextAttemptAt: timeText(d.NextAttemptAt), DeliveredAt: timeText(d.DeliveredAt), Data: d.Data}
}

func timeText(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// createWebhook registers a subscription and answers it with its secret,
// shown this once and stored sealed.
func (s *Server) createWebhook(c *gin.Context) {
	url, events, err := s.readWebhook(c)
	if err != nil {
		s.handle(c, err)
		return
	}
	secret, sealed, err := s.newWebhookSecret()
	if err != nil {
		s.handle(c, err)
		return
	}
	w, err := s.cfg.Store.CreateWebhook(c.Request.Context(), storage.NewWebhook{
		UserID: scope(c).UserID, URL: url, Events: events, SealedSecret: sealed})
	if errors.Is(err, storage.ErrWebhookLimit) {
		err = badf("webhooks: at most %d per user; delete one first", storage.MaxWebhooksPerUser)
	}
	if err != nil {
		s.handle(c, err)
		return
	}
	v := newWebhookView(w)
	v.Secret = secret
	c.JSON(http.StatusCreated, gin.H{"webhook": v})
}

// readWebhook reads and validates the body of POST /webhooks.
func (s *Server) readWebhook(c *gin.Context) (string, []string, error) {
	m, err := readObject(c, "url", "events")
	if err != nil {
		return "", nil, err
	}
	if !m.has("url") {
		return "", nil, badf("url: is required")
	}
	url, err := m.nonEmpty("url")
	if err != nil {
		return "", nil, err
	}
	if err := s.cfg.WebhookPolicy.CheckURL(url); err != nil {
		return "", nil, badf("url: %v", err)
	}
	if !m.has("events") {
		return "", nil, badf("events: is required")
	}
	events, err := webhookEvents(m["events"])
	return url, events, err
}

// webhookEvents reads the events member: a non-empty array of distinct
// known event types.
func webhookEvents(raw json.RawMessage) ([]string, error) {
	var events []string
	if err := json.Unmarshal(raw, &events); err != nil || events == nil {
		return nil, badf("events: must be an array of event types")
	}
	if len(events) == 0 {
		return nil, badf("events: must name at least one event type")
	}
	if len(events) > maxWebhookEvents {
		return nil, badf("events: at most %d event types", maxWebhookEvents)
	}
	known := storage.WebhookEventTypes()
	for i, e := range events {
		if !slices.Contains(known, e) {
			return nil, badf("events[%d]: unknown event type %q; known types: %v", i, e, known)
		}
		if slices.Contains(events[:i], e) {
			return nil, badf("events[%d]: %q is listed twice", i, e)
		}
	}
	return events, nil
}

// errNoWebhookKey is a server without the encryption key that seals
// webhook secrets (a misconfiguration: 500).
var errNoWebhookKey = errors.New("webhooks: no encryption key to seal secrets")

// newWebhookSecret makes a signing secret and seals it.
func (s *Server) newWebhookSecret() (secret string, sealed []byte, err error) {
	if s.cfg.Box == nil {
		return "", nil, errNoWebhookKey
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("webhook secret: %w", err)
	}
	secret = "whsec_" + hex.EncodeToString(b)
	if sealed, err = s.cfg.Box.Seal([]byte(secret)); err != nil {
		return "", nil, fmt.Errorf("seal webhook secret: %w", err)
	}
	return secret, sealed, nil
}

// listWebhooks answers the user's subscriptions, oldest first.
func (s *Server) listWebhooks(c *gin.Context) {
	rows, err := s.cfg.Store.ListWebhooks(c.Request.Context(), scope(c).UserID)
	if err != nil {
		s.handle(c, err)
		return
	}
	out := make([]webhookView, len(rows))
	for i, w := range rows {
		out[i] = newWebhookView(w)
	}
	c.JSON(http.StatusOK, gin.H{"webhooks": out})
}

// getWebhook answers one of the user's subscriptions (404 for another
// user's).
func (s *Server) getWebhook(c *gin.Context) {
	id, ok := s.pathID(c, "webhookId")
	if !ok {
		return
	}
	w, err := s.cfg.Store.GetWebhook(c.Request.Context(), scope(c).UserID, id)
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"webhook": newWebhookView(w)})
}

// deleteWebhook deletes one of the user's subscriptions with its pending
// deliveries (404 for another user's).
func (s *Server) deleteWebhook(c *gin.Context) {
	id, ok := s.pathID(c, "webhookId")
	if !ok {
		return
	}
	if err := s.cfg.Store.DeleteWebhook(c.Request.Context(), scope(c).UserID, id); err != nil {
		s.handle(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// listWebhookDeliveries answers a subscription's deliveries, newest first,
// a page at a time.
func (s *Server) listWebhookDeliveries(c *gin.Context) {
	id, ok := s.pathID(c, "webhookId")
	if !ok {
		return
	}
	q := newQuery(c)
	p := s.newPager(c, "webhook-deliveries:"+id.String(), q)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	rows, err := s.cfg.Store.ListWebhookDeliveries(c.Request.Context(), scope(c).UserID, id, p.after.ID, p.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	more := p.more(len(rows))
	if more {
		rows = rows[:p.limit]
	}
	out := make([]deliveryView, len(rows))
	var last storage.Keyset
	for i, d := range rows {
		out[i] = newDeliveryView(d)
		last = storage.Keyset{Date: d.CreatedAt, ID: d.EventID}
	}
	c.JSON(http.StatusOK, gin.H{"deliveries": out, "pageInfo": p.pageInfo(more, last)})
}

// registerWebhooks mounts the webhook routes on the authenticated group.
// The create call takes an Idempotency-Key like every v2 POST; its stored
// answer holds the webhook's secret, so it is sealed at rest with the
// webhooks' Box and opened for a replay.
//
// Webhooks receive events of all the user's accounts, so a key limited to
// some accounts may not manage them (403 SCOPED_KEY_NOT_ALLOWED).
func (s *Server) registerWebhooks(authed *gin.RouterGroup, resp Responder) {
	idem := func(c *gin.Context) { c.Next() }
	if s.cfg.Idempotency != nil && s.cfg.Box != nil {
		idem = s.cfg.Idempotency.SealedHandler(resp, s.cfg.Box)
	}
	hooks := authed.Group("/webhooks", unscopedKeysOnly)
	hooks.POST("", idem, s.createWebhook)
	hooks.GET("", s.listWebhooks)
	hooks.GET("/:webhookId", s.getWebhook)
	hooks.DELETE("/:webhookId", s.deleteWebhook)
	hooks.GET("/:webhookId/deliveries", s.listWebhookDeliveries)
}

// CodeScopedKeyNotAllowed answers a key limited to some accounts on an
// operation that reaches all the user's accounts.
const CodeScopedKeyNotAllowed = "SCOPED_KEY_NOT_ALLOWED"

// unscopedKeysOnly refuses keys limited to some accounts.
func unscopedKeysOnly(c *gin.Context) {
	if scope(c).Scoped() {
		Fail(c, http.StatusForbidden, CodeScopedKeyNotAllowed,
			"Webhooks receive events of all the user's accounts; manage them with a key that is not limited to some accounts")
		c.Abort()
		return
	}
	c.Next()
}

// emptySegmentNotFound answers 404 NOT_FOUND, before authentication, for a
// path with an empty segment (/v2/webhooks//deliveries): the router
// matches it with an empty id, but no operation of the document does, so
// it must answer like an unknown path rather than spend the caller's
// authentication or rate budgets.
func emptySegmentNotFound(c *gin.Context) {
	if strings.Contains(c.Request.URL.EscapedPath(), "//") { // an escaped slash (%2F) is no empty segment
		Fail(c, http.StatusNotFound, CodeNotFound, "No such endpoint")
	}
}
