package middleware

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

type routedKey struct{}

// recordingRouter marks routed contexts and notes, at each RecordWrite,
// what the client had already been sent.
type recordingRouter struct {
	rec         *httptest.ResponseRecorder
	writes      int
	sentAtWrite []string
}

func (r *recordingRouter) RouteRead(ctx context.Context, _ uuid.UUID) context.Context {
	return context.WithValue(ctx, routedKey{}, true)
}

func (r *recordingRouter) RecordWrite(context.Context, uuid.UUID) error {
	r.writes++
	r.sentAtWrite = append(r.sentAtWrite, r.rec.Body.String())
	return nil
}

// TestReadRoutingHoldsAnswerUntilRecorded checks the order the
// read-your-writes guarantee rests on: a successful write's position is
// recorded before any of its answer is sent; a failed write records
// nothing; a read gets the routed context; a panic answers 500 only.
func TestReadRoutingHoldsAnswerUntilRecorded(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	rr := &recordingRouter{}
	e := gin.New()
	e.Use(Recover(slog.New(slog.NewTextHandler(io.Discard, nil)), fakeResponder{}), func(c *gin.Context) {
		c.Set(principalKey, &storage.Principal{UserID: uuid.New()})
	}, ReadRouting(rr, slog.New(slog.NewTextHandler(io.Discard, nil))))
	e.POST("/ok", func(c *gin.Context) {
		c.Header("X-Made", "yes")
		c.JSON(http.StatusCreated, gin.H{"id": strings.Repeat("x", 10000)})
	})
	e.POST("/bad", func(c *gin.Context) { c.JSON(http.StatusBadRequest, gin.H{"error": "no"}) })
	e.DELETE("/gone", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	e.POST("/panic", func(c *gin.Context) { c.String(http.StatusOK, "partial"); panic("boom") })
	e.GET("/read", func(c *gin.Context) {
		if c.Request.Context().Value(routedKey{}) == nil {
			c.Status(http.StatusTeapot)
			return
		}
		c.String(http.StatusOK, "routed")
	})
	serve := func(method, path string) *httptest.ResponseRecorder {
		rr.rec = httptest.NewRecorder()
		e.ServeHTTP(rr.rec, httptest.NewRequest(method, path, nil))
		return rr.rec
	}

	res := serve(http.MethodPost, "/ok")
	if res.Code != http.StatusCreated || res.Header().Get("X-Made") != "yes" || !strings.Contains(res.Body.String(), strings.Repeat("x", 10000)) {
		t.Fatalf("held answer came out as %d %v %d bytes", res.Code, res.Header(), res.Body.Len())
	}
	if rr.writes != 1 || rr.sentAtWrite[0] != "" {
		t.Fatalf("writes recorded %d, client had %q when recording; want 1 with nothing sent", rr.writes, rr.sentAtWrite)
	}
	if res := serve(http.MethodPost, "/bad"); res.Code != http.StatusBadRequest || rr.writes != 1 {
		t.Fatalf("failed write: %d, writes recorded %d; want 400 and none more", res.Code, rr.writes)
	}
	if res := serve(http.MethodDelete, "/gone"); res.Code != http.StatusNoContent || rr.writes != 2 {
		t.Fatalf("delete: %d, writes recorded %d; want 204 and one more", res.Code, rr.writes)
	}
	if res := serve(http.MethodPost, "/panic"); res.Code != http.StatusInternalServerError || strings.Contains(res.Body.String(), "partial") || rr.writes != 2 {
		t.Fatalf("panic: %d %q, writes recorded %d; want a bare 500 and none more", res.Code, res.Body.String(), rr.writes)
	}
	if res := serve(http.MethodGet, "/read"); res.Code != http.StatusOK || rr.writes != 2 {
		t.Fatalf("read: %d, writes recorded %d; want the routed context and no record", res.Code, rr.writes)
	}
}
