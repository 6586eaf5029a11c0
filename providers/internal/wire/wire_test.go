package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/resilience"
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
	if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.Unavailable || pe.Code != resilience.CodeMalformed {
		t.Errorf("truncated body: %v", err)
	}
}

// decodeRow has a field of each kind the adapters decode into.
type decodeRow struct {
	ID     string          `json:"id"`
	Amount domain.Money    `json:"amount"`
	Fee    *domain.Money   `json:"fee"`
	Day    domain.Date     `json:"day"`
	Posted *domain.Date    `json:"posted"`
	At     time.Time       `json:"at"`
	AtPtr  *time.Time      `json:"at_ptr"`
	Dec    decimal.Decimal `json:"dec"`
	N      int64           `json:"n"`
	OK     bool            `json:"ok"`
	Names  []string        `json:"names"`
	Raw    json.RawMessage `json:"raw"`
	Nested *struct {
		A string `json:"a"`
		B int    `json:"b"`
	} `json:"nested"`
	Rows []struct {
		A string `json:"a"`
		B int    `json:"b"`
	} `json:"rows"`
}

// agreementBodies are bodies, odd ones included, on which Decode must agree
// with encoding/json, and DoJSON with Decode.
func agreementBodies() []string {
	return []string{
		// Invalid UTF-8 and lone surrogates read as U+FFFD; raw values keep their bytes.
		"{\"id\":\"a\xffb\xc3\",\"names\":[\"x\xed\xa0\x80y\",\"\xf0\x9f\x98\"]}",
		"{\"raw\":\"a\xffb\",\"unknown\":\"\xff\",\"i\xffd\":1}",
		`{"id":"\ud800x\udc00"}`,
		// Duplicate names: the last wins, merging into what the first set.
		`{"id":"a","id":"b","n":5,"n":null,"nested":{"a":"x"},"nested":{"b":2}}`,
		`{"names":["a","b"],"names":["c"],"rows":[{"a":"x","b":1}],"rows":[{"b":2}]}`,
		// null: pointers become nil, other plain values stay zero, Money and Date refuse it.
		`{"fee":null,"posted":null,"at":null,"at_ptr":null,"dec":null,"n":null,"ok":null,"names":null,"nested":null,"rows":null}`,
		`{"raw":null}`, `{"names":["a",null]}`, `{"amount":null}`, `{"day":null}`,
		// Raw values are kept byte for byte.
		`{"raw": { "a" : 1 , "b":[1, 2.50]} }`, `{"raw":"\u00e9"}`, `{"raw":1e5}`,
		// Times: RFC 3339, with what time.Time.UnmarshalJSON also lets through.
		`{"at":"2026-01-10T10:00:00Z","at_ptr":"2026-01-10T10:00:00.123456+02:00"}`,
		`{"at":"2026-01-10T10:00:00,5Z"}`, `{"at":"2026-01-10T10:00:00+24:00"}`,
		`{"at":"2026-01-10 10:00:00Z"}`, `{"at":"2026-01-10t10:00:00z"}`, `{"at":"2026-01-10T10:00:00"}`,
		`{"at":"2026-01-10"}`, `{"at":"2026-01-10T24:00:00Z"}`, `{"at":1}`,
		// Integers and booleans.
		`{"n":-0}`, `{"n":1e3}`, `{"n":1.0}`, `{"n":"1"}`, `{"n":9223372036854775808}`, `{"ok":"true"}`, `{"ok":1}`,
		// Amounts read the number's text.
		`{"amount":1e-2}`, `{"amount":-0}`, `{"amount":-12.30}`, `{"amount":"1.5"}`, `{"amount":1e400}`,
		`{"amount":0.1000000000000000055511151231257827}`,
		`{"dec":"12.30"}`, `{"dec":12.30}`, `{"dec":"abc"}`, `{"dec":true}`,
		// Dates.
		`{"day":"2026-01-10","posted":"2026-02-28"}`, `{"day":"2026-1-10"}`, `{"day":"2026-01-10T00:00:00Z"}`, `{"posted":"2026-02-30"}`,
		// Whole bodies.
		``, `null`, ` {"id":"a"} ` + "\n", "\xef\xbb\xbf{}", `[]`, `"x"`, `{"id":5}`, `{"names":{}}`, `{"nested":[]}`,
		`{"unknown":{"deep":[1,2,{"x":null}]},"id":"z"}`, `{"id":"\u0000\n\t\"\\\/"}`,
		// Syntax errors.
		`{"id":"a"} x`, `{"id":"a"}{}`, `{"id":"a",}`, `{"id":'a'}`, `{"names":["a",]}`, `{"id":"a","x":"\x"}`,
		`{"n":01}`, `{"amount":.5}`, `{"amount":+1}`, `{"amount":NaN}`, `{"id":"a"`,
	}
}

// TestDecodeAgreesWithEncodingJSON checks that Decode accepts and refuses
// the bodies encoding/json did, odd ones included, and reads the same
// values from those it accepts.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, body := range agreementBodies() {
		var want, got decodeRow
		wantErr := json.Unmarshal([]byte(body), &want)
		err := wire.Decode("p", &wire.Response{Status: 200, Body: []byte(body)}, &got)
		switch {
		case wantErr != nil && err == nil:
			t.Errorf("%q: decoded, encoding/json refused it: %v", body, wantErr)
		case wantErr == nil && err != nil:
			t.Errorf("%q: %v, encoding/json decoded it", body, err)
		case err != nil:
			if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.Unavailable || pe.Code != resilience.CodeMalformed {
				t.Errorf("%q: %v, want Unavailable %s", body, err, resilience.CodeMalformed)
			}
		case !reflect.DeepEqual(got, want):
			t.Errorf("%q:\n got %+v\nwant %+v", body, got, want)
		}
	}
}

// TestDecodeMatchesNamesExactly pins the one difference from encoding/json:
// a member whose name differs from the tag only in case is ignored.
func TestDecodeMatchesNamesExactly(t *testing.T) {
	var got decodeRow
	if err := wire.Decode("p", &wire.Response{Status: 200, Body: []byte(`{"ID":"x","Id":"y","amount":1}`)}, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "" || got.Amount.String() != "1" {
		t.Errorf("got %+v", got)
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
		{"client timeout", &http.Client{Timeout: 50 * time.Millisecond}, slow.URL, 0, resilience.CodeTimeout},
		{"context deadline", http.DefaultClient, slow.URL, 50 * time.Millisecond, resilience.CodeTimeout},
		{"connection refused", http.DefaultClient, closedURL, 0, resilience.CodeNetwork},
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
		pe := resilience.AsError(err)
		if pe == nil || pe.Class != resilience.Unavailable || pe.Code != tt.code {
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
