package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/openapi/openapitest"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// env is a real API over a fresh database, reached over real HTTP; every
// response is checked against the OpenAPI document of its version.
type env struct {
	t      *testing.T
	fx     *storagetest.Fixtures
	srv    *httptest.Server
	client *http.Client
}

type envOption func(*api.Config)

func withPlans(p v2.PlanLimits) envOption { return func(c *api.Config) { c.Plans = p } }

// withoutPageCache builds the API with no page cache: every transaction
// listing reads the database.
func withoutPageCache() envOption { return func(c *api.Config) { c.PageCacheBytes = 0 } }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	pool, _ := storagetest.NewDB(t)
	return newEnvOver(t, pool, opts...)
}

// newEnvOver is newEnv over an existing database: a second API beside
// another env's.
func newEnvOver(t *testing.T, pool *pgxpool.Pool, opts ...envOption) *env {
	t.Helper()
	st := storage.New(pool)
	cfg := api.Config{
		Providers: all.NewRegistry().Profiles(),
		Store:     st,
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth:      middleware.DefaultAuthConfig(),
		// The page cache is on, as in serve: every test that reads
		// transactions after a write checks that the write reached them.
		PageCacheBytes: 64 << 20,
	}
	// The server listens before the API is built, so that v1's links
	// (FINSYNC_PUBLIC_URL) can name it.
	srv := httptest.NewUnstartedServer(nil)
	cfg.PublicURL = &url.URL{Scheme: "http", Host: srv.Listener.Addr().String()}
	for _, o := range opts {
		o(&cfg)
	}
	a := api.MustNew(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go a.Run(ctx)
	srv.Config.Handler = a.Handler
	srv.Start()
	t.Cleanup(func() { srv.Close(); cancel() })
	// Responses are checked against the documents of the providers the
	// router was given, as it serves them.
	v := openapitest.New(t, openapitest.V2(t, cfg.Providers))
	v1 := openapitest.New(t, openapitest.V1(t, cfg.Providers))
	return &env{
		t:      t,
		fx:     storagetest.NewFixtures(t, pool),
		srv:    srv,
		client: &http.Client{Transport: versionTransport{v2: v.Transport(t, http.DefaultTransport), v1: v1.Transport(t, http.DefaultTransport)}},
	}
}

// versionTransport validates each response against its version's document.
type versionTransport struct{ v1, v2 http.RoundTripper }

func (vt versionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		return vt.v1.RoundTrip(r)
	}
	return vt.v2.RoundTrip(r)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

func (e *env) do(method, path, key string, body io.Reader) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
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

func (e *env) get(path, key string) response {
	e.t.Helper()
	return e.do(http.MethodGet, path, key, nil)
}

// expect asserts a status and, for error envelopes, the code.
func (e *env) expect(r response, status int, code string) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if code == "" {
		return
	}
	m := r.json(e.t)
	errObj, _ := m["error"].(map[string]any)
	if errObj == nil || errObj["code"] != code {
		e.t.Fatalf("error code: got %s, want %s", r.body, code)
	}
}

// ids returns the "id" of each object in the named array.
func ids(t *testing.T, r response, key string) []string {
	t.Helper()
	arr, ok := r.json(t)[key].([]any)
	if !ok {
		t.Fatalf("no %s array in %s", key, r.body)
	}
	out := make([]string, len(arr))
	for i, v := range arr {
		out[i] = v.(map[string]any)["id"].(string)
	}
	return out
}
