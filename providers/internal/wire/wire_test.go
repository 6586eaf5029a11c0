package wire_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"millis", http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"missing", http.Header{}, time.Minute},
		{"garbage", http.Header{"Retry-After": {"soon"}}, time.Minute},
	}
	for _, tt := range tests {
		if got := wire.RetryAfter(tt.header, now, time.Minute); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestDecodeKeepsDecimalsAndFlagsMalformed(t *testing.T) {
	var v struct {
		Amount domain.Money `json:"amount"`
	}
	if err := wire.Decode("p", &wire.Response{Status: 200, Body: []byte(`{"amount":0.1000000000000000055511151231257827}`)}, &v); err != nil {
		t.Fatal(err)
	}
	if v.Amount.String() != "0.1000000000000000055511151231257827" {
		t.Errorf("amount = %s", v.Amount)
	}
	err := wire.Decode("p", &wire.Response{Status: 200, Body: []byte(`{"amount":1`)}, &v)
	if pe := providers.AsError(err); pe == nil || pe.Class != providers.Unavailable || pe.Code != providers.CodeMalformed {
		t.Errorf("truncated body: %v", err)
	}
}

func TestTransportFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	defer slow.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name    string
		client  *http.Client
		url     string
		timeout time.Duration
		code    string
	}{
		{"client timeout", &http.Client{Timeout: 50 * time.Millisecond}, slow.URL, 0, providers.CodeTimeout},
		{"context deadline", http.DefaultClient, slow.URL, 50 * time.Millisecond, providers.CodeTimeout},
		{"connection refused", http.DefaultClient, closedURL, 0, providers.CodeNetwork},
	}
	for _, tt := range tests {
		ctx := context.Background()
		if tt.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tt.timeout)
			defer cancel()
		}
		req, _ := wire.NewJSONRequest(ctx, http.MethodGet, tt.url, nil)
		_, err := wire.Do(tt.client, "p", req)
		pe := providers.AsError(err)
		if pe == nil || pe.Class != providers.Unavailable || pe.Code != tt.code {
			t.Errorf("%s: %v, want Unavailable %s", tt.name, err, tt.code)
		}
		if tt.timeout > 0 && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: cause lost: %v", tt.name, err)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	type c struct {
		A string `json:"a"`
		N int    `json:"n"`
	}
	in := c{A: "x/y+z", N: 3}
	var out c
	if err := wire.DecodeCursor(wire.EncodeCursor(in), &out); err != nil || out != in {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	if err := wire.DecodeCursor("!!!", &out); err == nil {
		t.Error("bad cursor accepted")
	}
}

func TestLast4(t *testing.T) {
	for in, want := range map[string]string{"GB33 BUKB 2020 1555 5555 55": "5555", "123": "123", "": ""} {
		if got := wire.Last4(in); got != want {
			t.Errorf("Last4(%q) = %q, want %q", in, got, want)
		}
	}
}
