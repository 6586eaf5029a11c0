package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestCursorsAcrossReplicasAndRotation runs three API replicas on one
// database: a cursor issued by one opens on another configured with the same
// keys, on one that has rotated to a new key and keeps the old one, and is a
// 400 on one that no longer has the key that signed it.
func TestCursorsAcrossReplicasAndRotation(t *testing.T) {
	oldKey, newKey := []byte("the old cursor key, 32 bytes lon"), []byte("the new cursor key, 32 bytes lon")
	pool, _ := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true)
	conn := fx.Connection(user.ID, "plaid", "active")
	for _, name := range []string{"checking", "savings", "card"} {
		fx.Account(user.ID, conn, "plaid", name)
	}
	key := fx.Key(user.ID, nil)
	replica := func(signing []byte, previous ...[]byte) string {
		a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: storage.New(pool), Log: slog.New(slog.DiscardHandler), CursorKey: signing, PreviousCursorKeys: previous})
		ctx, cancel := context.WithCancel(context.Background())
		go a.Run(ctx)
		srv := httptest.NewServer(a.Handler)
		t.Cleanup(func() { srv.Close(); cancel() })
		return srv.URL
	}
	get := func(base, path string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("GET %s: %s", path, body)
		}
		return resp.StatusCode, m
	}
	nextCursor := func(m map[string]any) string {
		page, _ := m["pageInfo"].(map[string]any)
		c, _ := page["nextCursor"].(string)
		if c == "" {
			t.Fatalf("no next cursor in %v", m)
		}
		return c
	}

	a, b := replica(oldKey), replica(oldKey)
	rotated, rotatedOnly := replica(newKey, oldKey), replica(newKey)
	status, first := get(a, "/v2/accounts?limit=1")
	if status != http.StatusOK {
		t.Fatalf("first page: %d %v", status, first)
	}
	fromOld := nextCursor(first)
	for name, base := range map[string]string{"another replica": b, "a rotated replica": rotated} {
		if status, page := get(base, "/v2/accounts?limit=1&cursor="+fromOld); status != http.StatusOK {
			t.Fatalf("%s refused a cursor of the old key: %d %v", name, status, page)
		}
	}
	status, page := get(rotatedOnly, "/v2/accounts?limit=1&cursor="+fromOld)
	if status != http.StatusBadRequest || page["error"] == nil || !strings.Contains(jsonString(page["error"]), "cursor") {
		t.Fatalf("a replica without the old key: %d %v", status, page)
	}
	_, second := get(rotated, "/v2/accounts?limit=1")
	if status, page := get(rotatedOnly, "/v2/accounts?limit=1&cursor="+nextCursor(second)); status != http.StatusOK {
		t.Fatalf("a cursor of the new key: %d %v", status, page)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
