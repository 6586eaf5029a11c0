package storage_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestMigrationScrubsDetailedWebhookErrors: migration 22 rewrites the
// delivery errors stored before it (which named addresses, resolvers and
// URLs with their tokens) to general terms, keeping a bare HTTP status.
func TestMigrationScrubsDetailedWebhookErrors(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	ctx := context.Background()
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true)
	var sub uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO webhook_subscriptions (user_id, url, events, sealed_secret)
		VALUES ($1, 'https://hooks.example.com/in?token=s3cret', '{sync.completed}', '\x00') RETURNING id`, user.ID).Scan(&sub); err != nil {
		t.Fatal(err)
	}
	old := []string{
		"HTTP 503",
		`POST https://hooks.example.com/in?token=s3cret: dial tcp: lookup hooks.example.com on 10.0.0.2:53: no such host`,
		"POST https://internal.example/in: dial tcp 10.1.2.3:443: address not allowed: 10.1.2.3 is a private address (set FINSYNC_WEBHOOK_ALLOW_PRIVATE=1 only in development)",
		`HTTP 302: redirect to "https://elsewhere.example/?k=v" not followed`,
	}
	for i, msg := range append(old, "") {
		var lastError *string
		if msg != "" {
			lastError = &msg
		}
		if _, err := pool.Exec(ctx, `INSERT INTO webhook_deliveries (subscription_id, event_id, user_id, type, data, created_at, attempts, last_error)
			VALUES ($1, $2, $3, 'sync.completed', '{}', now(), $4, $5)`, sub, uuid.New(), user.ID, i, lastError); err != nil {
			t.Fatal(err)
		}
	}
	gp := newGoose(t, pool)
	if _, err := gp.ApplyVersion(ctx, 22, false); err != nil {
		t.Fatalf("migration 22 down: %v", err)
	}
	if _, err := gp.ApplyVersion(ctx, 22, true); err != nil {
		t.Fatalf("migration 22 up: %v", err)
	}
	rows, err := pool.Query(ctx, `SELECT COALESCE(last_error, '<null>') FROM webhook_deliveries ORDER BY attempts`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	scrubbed := "delivery failed (the detail of this attempt is in the worker's log)"
	want := []string{"HTTP status 503", scrubbed, scrubbed, scrubbed, "<null>"}
	if !slices.Equal(got, want) {
		t.Fatalf("after migration 22: %q, want %q", got, want)
	}
}
