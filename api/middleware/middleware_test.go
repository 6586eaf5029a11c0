package middleware

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

func TestLimitersStayBounded(t *testing.T) {
	l := NewLimitersSweeping(20 * time.Millisecond)
	// A 2 s period: the 5,000 takes finish long before any bucket refills,
	// even on a loaded machine.
	info := LimitInfo{Name: "general", Count: 100, Period: 2 * time.Second}
	for i := 0; i < 5000; i++ {
		l.Take(fmt.Sprintf("user-%d", i), info)
	}
	if n := l.Len(); n != 5000 {
		t.Fatalf("after 5000 users: %d buckets", n)
	}
	time.Sleep(2100 * time.Millisecond) // every bucket refills
	l.Take("one-more", info)            // triggers a sweep
	if n := l.Len(); n > 1 {
		t.Fatalf("after refill and sweep: %d buckets, want 1", n)
	}
}

func TestLimitersLimit(t *testing.T) {
	l := NewLimiters()
	info := LimitInfo{Name: "general", Count: 3, Period: time.Minute}
	for i := 0; i < 3; i++ {
		if d := l.Take("u", info); !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("take %d: %+v", i, d)
		}
	}
	d := l.Take("u", info)
	if d.Allowed {
		t.Fatal("fourth take allowed")
	}
	if d.RetryAfter <= 0 || d.RetryAfter > 20*time.Second {
		t.Fatalf("retry after %v, want about 20s", d.RetryAfter)
	}
	if d := l.Take("other", info); !d.Allowed {
		t.Fatal("another key is limited")
	}
}

type fakeResponder struct{}

func (fakeResponder) Unauthorized(c *gin.Context, _ Reason) { c.AbortWithStatus(401) }
func (fakeResponder) Forbidden(c *gin.Context, _ Gate)      { c.AbortWithStatus(403) }
func (fakeResponder) RateLimited(c *gin.Context, _ LimitInfo, _ time.Duration) {
	c.AbortWithStatus(429)
}
func (fakeResponder) Internal(c *gin.Context) {
	c.AbortWithStatusJSON(500, gin.H{"error": "internal"})
}

func TestRecoverHidesPanics(t *testing.T) {
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.Use(RequestID(nil), Recover(slog.New(slog.NewTextHandler(io.Discard, nil)), fakeResponder{}))
	e.GET("/boom", func(*gin.Context) { panic("secret internals") })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	if rec.Code != 500 || rec.Body.String() != `{"error":"internal"}` {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	if rec.Header().Get(RequestIDHeader) == "" {
		t.Fatal("no request id")
	}
}

func TestWellFormed(t *testing.T) {
	tests := map[string]bool{
		"fin_0123456789abcdefghijABCDEFGHIJ01":  true,
		"fino_0123456789abcdefghijABCDEFGHIJ01": true,
		"fin_short":                             false,
		"sk_0123456789abcdefghijABCDEFGHIJ0123": false,
		"fin_0123456789abcdefghij-BCDEFGHIJ01":  false,
		"":                                      false,
	}
	for in, want := range tests {
		if got := wellFormed(in); got != want {
			t.Errorf("wellFormed(%q) = %v", in, got)
		}
	}
}
