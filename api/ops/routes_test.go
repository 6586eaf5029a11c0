package ops_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

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
	jobs, err := worker.NewInsertClient(pool)
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
