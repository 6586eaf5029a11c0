package destinations_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/resilience"
)

// TestWebhookDestinationRefusesLoopbackAndRedirects: under the default
// policy a webhook destination whose name resolves to 127.0.0.1 fails
// permanently (ADDRESS_NOT_ALLOWED) without reaching the receiver; with
// private addresses allowed, a redirect is a failed attempt and its target
// is never called. Neither failure's error, which is logged and stored
// in the outbox, shows the URL's query (its token).
func TestWebhookDestinationRefusesLoopbackAndRedirects(t *testing.T) {
	var hits, targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { targetHits.Add(1) }))
	defer target.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, target.URL+"/moved", http.StatusTemporaryRedirect)
	}))
	defer hook.Close()
	port := hook.URL[strings.LastIndex(hook.URL, ":"):]
	guard := resilience.Config{Limits: &resilience.Limits{}, Retries: -1, Provider: resilience.BreakerConfig{Failures: 100, OpenFor: time.Minute}}
	ev := event("account.updated", uuid.NewString(), "Cash", "active")
	ctx := context.Background()

	deny := destinations.NewDeliverer(destinations.Options{Guard: &guard})
	tg := (&fixture{}).target(t, "webhook", `{"url":"http://localhost`+port+`/hook?token=s3cret","secret":"s"}`)
	err := deny.Deliver(ctx, tg, ev)
	pe := resilience.AsError(err)
	if pe == nil || pe.Class != resilience.Permanent || pe.Code != destinations.CodeAddressNotAllowed || !strings.Contains(pe.Message, "loopback") {
		t.Fatalf("default policy: got %v, want a permanent ADDRESS_NOT_ALLOWED", err)
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "http://localhost"+port+"/hook") {
		t.Fatalf("the error shows the URL unredacted, or not at all: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the refused receiver was called")
	}

	allow := destinations.NewDeliverer(destinations.Options{Guard: &guard, Webhooks: netguard.Policy{AllowPrivate: true}})
	tg = (&fixture{}).target(t, "webhook", `{"url":"`+hook.URL+`/hook","secret":"s"}`)
	err = allow.Deliver(ctx, tg, ev)
	pe = resilience.AsError(err)
	if pe == nil || pe.HTTPStatus != http.StatusTemporaryRedirect || pe.Class != resilience.Unavailable {
		t.Fatalf("redirect: got %v, want a retryable failure with HTTP 307", err)
	}
	if hits.Load() != 1 || targetHits.Load() != 0 {
		t.Fatalf("receiver called %d times, redirect target %d times", hits.Load(), targetHits.Load())
	}
}
