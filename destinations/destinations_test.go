package destinations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/destinations/destsim"
	"github.com/finsync/finsync/internal/netguard"
	"github.com/finsync/finsync/resilience"
)

func TestSignVerify(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"x"}`)
	sig := destinations.Sign("secret", at, body)
	if !strings.HasPrefix(sig, "t=1700000000,v1=") || len(sig) != len("t=1700000000,v1=")+64 {
		t.Fatalf("signature %q", sig)
	}
	tests := []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
		ok     bool
	}{
		{"valid", "secret", sig, string(body), at.Add(time.Minute), true},
		{"wrong secret", "other", sig, string(body), at, false},
		{"tampered body", "secret", sig, `{"id":"y"}`, at, false},
		{"too old", "secret", sig, string(body), at.Add(time.Hour), false},
		{"malformed", "secret", "v1=abc", string(body), at, false},
		{"second signature matches", "secret", "t=1700000000,v1=00,v1=" + strings.SplitN(sig, "v1=", 2)[1], string(body), at, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := destinations.Verify(tt.secret, tt.header, []byte(tt.body), tt.now, 5*time.Minute)
			if (err == nil) != tt.ok {
				t.Fatalf("Verify = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestSplitConfig(t *testing.T) {
	tests := []struct {
		kind, in        string
		public, secret  string
		wantErrContains string
	}{
		{kind: "webhook", in: `{"url":"https://h.example/x","secret":"s"}`, public: `{"url":"https://h.example/x"}`, secret: `{"secret":"s"}`},
		{kind: "airtable", in: `{"baseId":"app1","table":"T","token":"pat1"}`,
			public: `{"baseId":"app1","baseUrl":"https://api.airtable.com","mergeField":"Account ID","table":"T"}`, secret: `{"token":"pat1"}`},
		{kind: "google_sheets", in: `{"spreadsheetId":"s1","accessToken":"ya29"}`,
			public: `{"baseUrl":"https://sheets.googleapis.com","sheet":"Accounts","spreadsheetId":"s1"}`, secret: `{"accessToken":"ya29"}`},
		{kind: "webhook", in: `{"url":"ftp://h.example","secret":"s"}`, wantErrContains: "url"},
		{kind: "google_sheets", in: `{"sheet":"A","accessToken":"t"}`, wantErrContains: "spreadsheetId"},
		{kind: "google_sheets", in: `{"spreadsheetId":"s1","refreshToken":"r","clientId":"c","clientSecret":"x"}`,
			public: `{"baseUrl":"https://sheets.googleapis.com","clientId":"c","sheet":"Accounts","spreadsheetId":"s1","tokenUrl":"https://oauth2.googleapis.com/token"}`,
			secret: `{"clientSecret":"x","refreshToken":"r"}`},
		{kind: "google_sheets", in: `{"spreadsheetId":"s1","refreshToken":"r","clientId":"c"}`, wantErrContains: "go together"},
		{kind: "s3", in: `{}`, wantErrContains: "kind"},
		{kind: "webhook", in: `[1]`, wantErrContains: "config"},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.in, func(t *testing.T) {
			public, secret, err := destinations.SplitConfig(tt.kind, json.RawMessage(tt.in))
			if tt.wantErrContains != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrContains) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErrContains)
				}
				return
			}
			if err != nil || string(public) != tt.public || string(secret) != tt.secret {
				t.Fatalf("got %s %s %v, want %s %s", public, secret, err, tt.public, tt.secret)
			}
		})
	}
}

func TestColumnLetter(t *testing.T) {
	for n, want := range map[int]string{1: "A", 15: "O", 26: "Z", 27: "AA", 52: "AZ", 703: "AAA"} {
		if got := destinations.ColumnLetter(n); got != want {
			t.Errorf("ColumnLetter(%d) = %s, want %s", n, got, want)
		}
	}
}

// fixture is a simulator over HTTP and a deliverer without retries.
type fixture struct {
	sim *destsim.Server
	url string
	d   *destinations.Deliverer
}

func newFixture(t *testing.T) *fixture {
	s := destsim.New()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	cfg := resilience.Config{Limits: &resilience.Limits{}, Retries: -1, Provider: resilience.BreakerConfig{Failures: 3, OpenFor: time.Minute}}
	return &fixture{sim: s, url: srv.URL, d: destinations.NewDeliverer(destinations.Options{Guard: &cfg, Webhooks: netguard.Policy{AllowPrivate: true}})}
}

func (f *fixture) target(t *testing.T, kind, cfg string) destinations.Target {
	public, secret, err := destinations.SplitConfig(kind, json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return destinations.Target{ID: uuid.New(), Kind: kind, Config: public, Secret: secret}
}

func event(typ, accountID, name, status string) destinations.Event {
	acct := fmt.Sprintf(`{"id":%q,"name":%q,"institutionName":null,"type":"cash","currency":"EUR","currentBalance":1234567.8901,"status":%q}`, accountID, name, status)
	return destinations.Event{ID: uuid.New(), Type: typ, OccurredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Account: json.RawMessage(acct)}
}

func text(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return string(v)
	}
	return s
}

func TestAirtableUpsertsByAccountID(t *testing.T) {
	f := newFixture(t)
	tg := f.target(t, "airtable", fmt.Sprintf(`{"baseUrl":%q,"baseId":"appX","table":"Accounts","token":"patX"}`, f.url))
	a, b := uuid.NewString(), uuid.NewString()
	ctx := context.Background()
	for _, ev := range []destinations.Event{
		event("account.created", a, "Cash", "active"),
		event("account.created", b, "Safe", "active"),
		event("account.updated", a, "Cash 2", "active"),
		event("account.closed", a, "Cash 2", "closed"),
	} {
		if err := f.d.Deliver(ctx, tg, ev); err != nil {
			t.Fatal(err)
		}
	}
	recs := f.sim.AirtableRecords("appX", "Accounts")
	if len(recs) != 2 {
		t.Fatalf("records %+v", recs)
	}
	got := recs[0].Fields
	if text(got["Account ID"]) != a || text(got["Name"]) != "Cash 2" || text(got["Status"]) != "closed" ||
		string(got["Current Balance"]) != "1234567.8901" || string(got["Institution"]) != "null" || text(got["Event Type"]) != "account.closed" {
		t.Errorf("record %v", got)
	}
	req := f.sim.Requests(destsim.Airtable)[0]
	var body destinations.AirtableUpsert
	if err := json.Unmarshal(req.Body, &body); err != nil || req.Method != http.MethodPatch || req.Path != "/v0/appX/Accounts" ||
		len(body.PerformUpsert.FieldsToMergeOn) != 1 || body.PerformUpsert.FieldsToMergeOn[0] != "Account ID" {
		t.Errorf("request %+v %v", req, err)
	}
}

func TestSheetsAppendsThenUpdatesInPlace(t *testing.T) {
	f := newFixture(t)
	tg := f.target(t, "google_sheets", fmt.Sprintf(`{"baseUrl":%q,"spreadsheetId":"S1","sheet":"My accounts","accessToken":"ya29.x"}`, f.url))
	a, b := uuid.NewString(), uuid.NewString()
	ctx := context.Background()
	replay := event("account.updated", a, "Cash 2", "active")
	for _, ev := range []destinations.Event{
		event("account.created", a, "Cash", "active"),
		event("account.created", b, "Safe", "active"),
		replay, replay, // an event delivered twice rewrites its row
		event("account.closed", b, "Safe", "closed"),
	} {
		if err := f.d.Deliver(ctx, tg, ev); err != nil {
			t.Fatal(err)
		}
	}
	rows := f.sim.SheetValues("S1", "My accounts")
	if len(rows) != 3 {
		t.Fatalf("rows %s", rows)
	}
	if text(rows[0][0]) != "Account ID" || text(rows[0][14]) != "Occurred At" {
		t.Errorf("header %s", rows[0])
	}
	if text(rows[1][0]) != a || text(rows[1][1]) != "Cash 2" || string(rows[1][7]) != "1234567.8901" || text(rows[1][2]) != "" {
		t.Errorf("row of a: %s", rows[1])
	}
	if text(rows[2][0]) != b || text(rows[2][10]) != "closed" || text(rows[2][13]) != "account.closed" {
		t.Errorf("row of b: %s", rows[2])
	}
	for _, r := range f.sim.Requests(destsim.GoogleSheets) {
		if r.Method != http.MethodGet && !strings.Contains(r.Query, "valueInputOption=RAW") {
			t.Errorf("write without valueInputOption: %+v", r)
		}
	}
}

func TestDeliveryFailuresAreClassified(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := map[string]int{"/gone": 410, "/slow": 429}[r.URL.Path]
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(status)
	}))
	defer hook.Close()
	tests := []struct {
		name      string
		kind      string
		config    string
		fault     string
		class     resilience.Class
		retryWait time.Duration
	}{
		{name: "airtable outage", kind: "airtable", fault: destsim.FaultOutage, class: resilience.Unavailable},
		{name: "airtable rate limit", kind: "airtable", fault: destsim.FaultRateLimit, class: resilience.RateLimited, retryWait: 30 * time.Second},
		{name: "airtable bad token", kind: "airtable", config: `{"baseUrl":"%s","baseId":"a","table":"t","token":" "}`, class: resilience.ReauthRequired},
		{name: "sheets rate limit", kind: "google_sheets", fault: destsim.FaultRateLimit, class: resilience.RateLimited, retryWait: 5 * time.Second},
		{name: "sheets outage", kind: "google_sheets", fault: destsim.FaultOutage, class: resilience.Unavailable},
		{name: "webhook 4xx is retried", kind: "webhook", config: `{"url":"` + hook.URL + `/gone","secret":"s"}`, class: resilience.Unavailable},
		{name: "webhook rate limit", kind: "webhook", config: `{"url":"` + hook.URL + `/slow","secret":"s"}`, class: resilience.RateLimited, retryWait: 7 * time.Second},
		{name: "webhook down", kind: "webhook", config: `{"url":"http://127.0.0.1:1/x","secret":"s"}`, class: resilience.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			cfg := tt.config
			if cfg == "" && tt.kind == "airtable" {
				cfg = `{"baseUrl":"%s","baseId":"a","table":"t","token":"pat"}`
			}
			if cfg == "" {
				cfg = `{"baseUrl":"%s","spreadsheetId":"s","accessToken":"ya29"}`
			}
			if strings.Contains(cfg, "%s") {
				cfg = fmt.Sprintf(cfg, f.url)
			}
			if tt.fault != "" {
				if err := f.sim.SetFault(tt.kind, tt.fault); err != nil {
					t.Fatal(err)
				}
			}
			err := f.d.Deliver(context.Background(), f.target(t, tt.kind, cfg), event("account.created", uuid.NewString(), "X", "active"))
			pe := resilience.AsError(err)
			if pe == nil || pe.Class != tt.class || pe.RetryAfter != tt.retryWait {
				t.Fatalf("err = %#v, want class %v retry %v", err, tt.class, tt.retryWait)
			}
		})
	}
}

func TestBreakerOpensPerDestination(t *testing.T) {
	f := newFixture(t)
	if err := f.sim.SetFault(destsim.Airtable, destsim.FaultOutage); err != nil {
		t.Fatal(err)
	}
	bad := f.target(t, "airtable", fmt.Sprintf(`{"baseUrl":%q,"baseId":"a","table":"t","token":"pat"}`, f.url))
	ctx := context.Background()
	for range 3 {
		_ = f.d.Deliver(ctx, bad, event("account.created", uuid.NewString(), "X", "active"))
	}
	before := len(f.sim.Requests(destsim.Airtable))
	err := f.d.Deliver(ctx, bad, event("account.created", uuid.NewString(), "X", "active"))
	var pe *resilience.Error
	if !errors.As(err, &pe) || pe.Code != resilience.CodeCircuitOpen || pe.RetryAfter <= 0 {
		t.Fatalf("err = %v, want an open breaker", err)
	}
	if after := len(f.sim.Requests(destsim.Airtable)); after != before {
		t.Errorf("an open breaker still called Airtable")
	}
	// Another destination has its own breaker.
	good := f.target(t, "google_sheets", fmt.Sprintf(`{"baseUrl":%q,"spreadsheetId":"s","accessToken":"ya29"}`, f.url))
	if err := f.d.Deliver(ctx, good, event("account.created", uuid.NewString(), "X", "active")); err != nil {
		t.Fatalf("other destination: %v", err)
	}
	if st := f.d.States()[bad.ID]; st.State != "open" {
		t.Errorf("state %+v", st)
	}
}

func TestSheetsRefreshesAccessTokens(t *testing.T) {
	f := newFixture(t)
	cfg := `{"baseUrl":%q,"spreadsheetId":"S2","refreshToken":%q,"clientId":"cid","clientSecret":"csecret","tokenUrl":%q}`
	tg := f.target(t, "google_sheets", fmt.Sprintf(cfg, f.url, "1//refresh", f.url+"/token"))
	if strings.Contains(string(tg.Config), "refresh") || !strings.Contains(string(tg.Secret), "csecret") {
		t.Fatalf("config %s / secret %s: the refresh token and client secret are credentials", tg.Config, tg.Secret)
	}
	tokenCalls := func() int { return len(f.sim.Requests(destsim.GoogleOAuth)) }
	ctx := context.Background()
	deliver := func() error {
		return f.d.Deliver(ctx, tg, event("account.updated", uuid.NewString(), "X", "active"))
	}
	if err := deliver(); err != nil {
		t.Fatal(err)
	}
	if err := deliver(); err != nil {
		t.Fatal(err)
	}
	if n := tokenCalls(); n != 1 {
		t.Fatalf("%d token requests for two deliveries, want 1 (cached)", n)
	}
	f.sim.ExpireGoogleTokens()
	if err := deliver(); err != nil {
		t.Fatalf("after the token expired: %v", err)
	}
	if n := tokenCalls(); n != 2 {
		t.Fatalf("%d token requests, want a second after the 401", n)
	}
	if rows := f.sim.SheetValues("S2", "Accounts"); len(rows) != 4 {
		t.Errorf("rows %s", rows)
	}

	revoked := f.target(t, "google_sheets", fmt.Sprintf(cfg, f.url, "revoked-1", f.url+"/token"))
	err := f.d.Deliver(ctx, revoked, event("account.updated", uuid.NewString(), "X", "active"))
	if pe := resilience.AsError(err); pe == nil || pe.Class != resilience.ReauthRequired || pe.Code != "invalid_grant" {
		t.Fatalf("revoked refresh token: %v", err)
	}
}
