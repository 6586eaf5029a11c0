package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// sendIdem makes a JSON request carrying an Idempotency-Key.
func (e *env) sendIdem(method, path, key, idemKey, body string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// accountsNamed counts the user's stored accounts with the name.
func (e *env) accountsNamed(user uuid.UUID, name string) int {
	e.t.Helper()
	var n int
	if err := e.fx.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM accounts WHERE user_id = $1 AND name = $2`, user, name).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestIdempotencyReplaysTheFirstResponse(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(u.ID, nil)
	body := `{"name":"Cash box","type":"cash","currency":"EUR"}`
	first := e.sendIdem(http.MethodPost, "/v2/accounts", key, "create-cash-1", body)
	e.expect(first, http.StatusCreated, "")
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first response marked replayed: %v", first.header)
	}
	again := e.sendIdem(http.MethodPost, "/v2/accounts", key, "create-cash-1", body)
	e.expect(again, http.StatusCreated, "")
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay lacks Idempotent-Replayed: %v", again.header)
	}
	if !bytes.Equal(first.body, again.body) {
		t.Fatalf("replayed body differs:\n%s\n%s", first.body, again.body)
	}
	if ct := again.header.Get("Content-Type"); ct != first.header.Get("Content-Type") {
		t.Fatalf("replayed Content-Type %q, want %q", ct, first.header.Get("Content-Type"))
	}
	if n := e.accountsNamed(u.ID, "Cash box"); n != 1 {
		t.Fatalf("%d accounts created, want 1", n)
	}
	// Without the key, or with another key, the request runs again.
	e.expect(e.send(http.MethodPost, "/v2/accounts", key, body), http.StatusCreated, "")
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, "create-cash-2", body), http.StatusCreated, "")
	if n := e.accountsNamed(u.ID, "Cash box"); n != 3 {
		t.Fatalf("%d accounts, want 3", n)
	}

	// 4xx responses are stored too, and replayed.
	bad := `{"name":"Cash box","type":"cash"}`
	r := e.sendIdem(http.MethodPost, "/v2/accounts", key, "bad-1", bad)
	e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
	r2 := e.sendIdem(http.MethodPost, "/v2/accounts", key, "bad-1", bad)
	e.expect(r2, http.StatusBadRequest, "BAD_REQUEST")
	if r2.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, r2.body) {
		t.Fatalf("4xx not replayed: %v %s", r2.header, r2.body)
	}

	// PATCH is covered as well.
	id := object(t, first, "account")["id"].(string)
	p1 := e.sendIdem(http.MethodPatch, "/v2/accounts/"+id, key, "rename-1", `{"name":"Renamed"}`)
	e.expect(p1, http.StatusOK, "")
	p2 := e.sendIdem(http.MethodPatch, "/v2/accounts/"+id, key, "rename-1", `{"name":"Renamed"}`)
	e.expect(p2, http.StatusOK, "")
	if p2.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(p1.body, p2.body) {
		t.Fatalf("PATCH not replayed: %v %s", p2.header, p2.body)
	}
}

func TestIdempotencyKeyReusedWithAnotherRequest(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(u.ID, nil)
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, "k", `{"name":"One","type":"cash","currency":"EUR"}`),
		http.StatusCreated, "")
	// Another body, then another path, with the same key.
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, "k", `{"name":"Two","type":"cash","currency":"EUR"}`),
		http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED")
	e.expect(e.sendIdem(http.MethodPost, "/v2/categories", key, "k", `{"name":"One"}`),
		http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED")
	if n := e.accountsNamed(u.ID, "Two"); n != 0 {
		t.Fatalf("reused key ran the request: %d accounts", n)
	}
}

func TestIdempotencyKeysArePerCredential(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	keyA := e.fx.Key(u.ID, nil)
	keyB := e.fx.Key(u.ID, nil)
	other := e.fx.Key(e.fx.User(domain.PlanPro, true).ID, nil)
	body := `{"name":"Shared","type":"cash","currency":"EUR"}`
	a := e.sendIdem(http.MethodPost, "/v2/accounts", keyA, "same", body)
	e.expect(a, http.StatusCreated, "")
	b := e.sendIdem(http.MethodPost, "/v2/accounts", keyB, "same", body)
	e.expect(b, http.StatusCreated, "")
	if b.header.Get("Idempotent-Replayed") != "" || bytes.Equal(a.body, b.body) {
		t.Fatalf("second API key saw the first key's response: %s", b.body)
	}
	o := e.sendIdem(http.MethodPost, "/v2/accounts", other, "same", `{"name":"Other","type":"cash","currency":"EUR"}`)
	e.expect(o, http.StatusCreated, "")
	if n := e.accountsNamed(u.ID, "Shared"); n != 2 {
		t.Fatalf("%d accounts, want 2 (one per API key)", n)
	}
}

func TestIdempotencyKeyLength(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(u.ID, nil)
	body := `{"name":"Long","type":"cash","currency":"EUR"}`
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, strings.Repeat("k", 256), body), http.StatusBadRequest, "BAD_REQUEST")
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, "", body), http.StatusBadRequest, "BAD_REQUEST")
	if n := e.accountsNamed(u.ID, "Long"); n != 0 {
		t.Fatalf("rejected key ran the request: %d accounts", n)
	}
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, strings.Repeat("k", 255), body), http.StatusCreated, "")
	r := e.sendIdem(http.MethodPost, "/v2/accounts", key, strings.Repeat("k", 255), body)
	if r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("255-character key not replayed: %d %v", r.status, r.header)
	}
}

func TestIdempotencyConcurrentRequestsRunOnce(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(u.ID, nil)
	// The insert is slowed down, so the requests overlap while the first
	// holds the key.
	if _, err := e.fx.Pool.Exec(context.Background(), `
		CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$;
		CREATE TRIGGER slow_insert BEFORE INSERT ON accounts FOR EACH ROW
		WHEN (NEW.name = 'Concurrent') EXECUTE FUNCTION slow_insert();`); err != nil {
		t.Fatal(err)
	}
	body := `{"name":"Concurrent","type":"cash","currency":"EUR"}`
	const n = 10
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		resps = make([]response, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resps[i] = e.sendIdem(http.MethodPost, "/v2/accounts", key, "concurrent", body)
		}()
	}
	close(start)
	wg.Wait()
	ran, conflicts := 0, 0
	var created []byte
	for _, r := range resps {
		switch {
		case r.status == http.StatusCreated && r.header.Get("Idempotent-Replayed") == "":
			ran++
			created = r.body
		case r.status == http.StatusCreated:
		case r.status == http.StatusConflict:
			e.expect(r, http.StatusConflict, "CONFLICT")
			conflicts++
		default:
			t.Fatalf("unexpected answer %d: %s", r.status, r.body)
		}
	}
	if ran != 1 || conflicts == 0 {
		t.Fatalf("%d requests ran and %d answered 409, want 1 and at least 1", ran, conflicts)
	}
	if got := e.accountsNamed(u.ID, "Concurrent"); got != 1 {
		t.Fatalf("%d accounts created, want 1", got)
	}
	for _, r := range resps {
		if r.status == http.StatusCreated && !bytes.Equal(r.body, created) {
			t.Fatalf("replay differs from the response of the request that ran: %s", r.body)
		}
	}
	// Once the first finished, retries are replayed.
	r := e.sendIdem(http.MethodPost, "/v2/accounts", key, "concurrent", body)
	if r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.body, created) {
		t.Fatalf("retry after completion: %d %v %s", r.status, r.header, r.body)
	}
}

func TestIdempotencyDoesNotStoreServerErrors(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(u.ID, nil)
	ctx := context.Background()
	if _, err := e.fx.Pool.Exec(ctx, `
		CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'insert refused'; END $$;
		CREATE TRIGGER fail_insert BEFORE INSERT ON accounts FOR EACH ROW
		WHEN (NEW.name = 'Flaky') EXECUTE FUNCTION fail_insert();`); err != nil {
		t.Fatal(err)
	}
	body := `{"name":"Flaky","type":"cash","currency":"EUR"}`
	e.expect(e.sendIdem(http.MethodPost, "/v2/accounts", key, "flaky", body), http.StatusInternalServerError, "INTERNAL_ERROR")
	if _, err := e.fx.Pool.Exec(ctx, `DROP TRIGGER fail_insert ON accounts`); err != nil {
		t.Fatal(err)
	}
	r := e.sendIdem(http.MethodPost, "/v2/accounts", key, "flaky", body)
	e.expect(r, http.StatusCreated, "")
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the 500 was replayed instead of running the retry: %v", r.header)
	}
	if n := e.accountsNamed(u.ID, "Flaky"); n != 1 {
		t.Fatalf("%d accounts, want 1", n)
	}
}
