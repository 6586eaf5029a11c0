package ops_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// TestRoutesListsEveryRoute: ops.Routes, which the API's tests walk to
// check that every ops route needs the operator token, names exactly the
// routes Register mounts.
func TestRoutesListsEveryRoute(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	jobs, err := worker.NewInsertClient(storage.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := ops.New(ctx, ops.Config{Token: browserToken, Store: storage.New(pool), Jobs: jobs,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	c.Register(e)
	var mounted []string
	for _, r := range e.Routes() {
		mounted = append(mounted, r.Method+" "+r.Path)
	}
	var listed []string
	for _, r := range ops.Routes() {
		method, path, _ := strings.Cut(r, " ")
		if method != "ANY" {
			listed = append(listed, r)
			continue
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "HEAD", "OPTIONS", "DELETE", "CONNECT", "TRACE"} {
			listed = append(listed, m+" "+path)
		}
	}
	slices.Sort(mounted)
	slices.Sort(listed)
	if !slices.Equal(mounted, listed) {
		t.Fatalf("Register mounts\n%s\nRoutes lists\n%s", strings.Join(mounted, "\n"), strings.Join(listed, "\n"))
	}
}

// TestValidateToken: short, spaced or trivial tokens are refused.
func TestValidateToken(t *testing.T) {
	for _, bad := range []string{"", "short", strings.Repeat("x", 64), "has a space but is long enough to pass 32"} {
		if ops.ValidateToken(bad) == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
	if err := ops.ValidateToken(browserToken); err != nil {
		t.Errorf("token %q refused: %v", browserToken, err)
	}
}

// TestPanicsBecome500: a panic in an ops route (here the sessions' clock,
// read by sign-in) is logged and answered 500, like on /v1 and /v2, and
// the server goes on serving.
func TestPanicsBecome500(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	jobs, err := worker.NewInsertClient(storage.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs strings.Builder
	c, err := ops.New(ctx, ops.Config{Token: browserToken, Store: storage.New(pool), Jobs: jobs,
		Log: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil)), Now: func() time.Time { panic("clock broken") }})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	c.Register(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp, err := http.PostForm(srv.URL+"/ops/sign-in", url.Values{"token": {browserToken}})
	if err != nil {
		t.Fatalf("sign-in with a panicking clock: %v, want a 500", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("sign-in with a panicking clock: %d, want 500", resp.StatusCode)
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/ops", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+browserToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ops after the panic: %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "clock broken") {
		t.Fatalf("the panic was not logged: %s", logs.String())
	}
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
