package middleware

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// budgetStore is a CredentialStore whose shared failure budget can be
// made unreachable; nothing else of it is used.
type budgetStore struct{ down bool }

func (b *budgetStore) LookupCredential(context.Context, []byte) (storage.Principal, error) {
	return storage.Principal{}, storage.ErrNotFound
}
func (b *budgetStore) TouchCredentials(context.Context, map[uuid.UUID]time.Time) error { return nil }
func (b *budgetStore) GetCredentialsVersion(context.Context) (int64, error)            { return 0, nil }
func (b *budgetStore) ListenCredentialChanges(context.Context, func(), func()) (bool, error) {
	return false, nil
}
func (b *budgetStore) TakeAuthFailureToken(context.Context, string, float64, int) (time.Duration, bool, error) {
	if b.down {
		return 0, false, errors.New("connection refused")
	}
	return 0, true, nil
}

// TestSharedBudgetOutageIsLoggedOnce checks that failed attempts during an
// outage of the shared failure budget log one warning, not one each, and
// that its return is logged once.
func TestSharedBudgetOutageIsLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	store := &budgetStore{down: true}
	a := NewAuthenticator(store, AuthConfig{FailuresPerMinute: 60, FailureBurst: 10}, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	for range 50 {
		a.spendShared(ctx, "192.0.2.1")
	}
	store.down = false
	for range 5 {
		a.spendShared(ctx, "192.0.2.1")
	}
	if n := strings.Count(logs.String(), "budget unavailable"); n != 1 {
		t.Fatalf("%d outage warnings for 50 failed attempts, want 1:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "reachable again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1:\n%s", n, logs.String())
	}
}
