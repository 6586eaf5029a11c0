package apierr_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
)

func TestUnavailableWritesEnvelopeAndRetryAfter(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	apierr.Unavailable(c)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" {
		t.Fatalf("status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	want := `{"error":{"code":"SERVICE_UNAVAILABLE","message":"` + apierr.UnavailableMessage + `"}}`
	if rec.Body.String() != want {
		t.Fatalf("body %s, want %s", rec.Body, want)
	}
	if !c.IsAborted() {
		t.Fatal("request not aborted")
	}
}
