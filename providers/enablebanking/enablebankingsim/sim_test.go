package enablebankingsim_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/finsync/finsync/providers/enablebanking/enablebankingsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// app is an application a test signs for.
type app struct {
	id  string
	key *rsa.PrivateKey
}

// token signs a JWT for a with the given iat and exp.
func (a app) token(t *testing.T, iat, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": "enablebanking.com", "aud": "api.enablebanking.com", "iat": iat.Unix(), "exp": exp.Unix(),
	})
	tok.Header["kid"] = a.id
	s, err := tok.SignedString(a.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call sends a request signed for a, now, and decodes the answer.
func (a app) call(t *testing.T, method, u string, body, out any) int {
	t.Helper()
	now := time.Now()
	hdr := map[string]string{"Authorization": "Bearer " + a.token(t, now, now.Add(time.Hour))}
	return simtest.DoJSON(t, method, u, body, hdr, out).StatusCode
}

// mint asks the simulator for a fresh application.
func mint(t *testing.T, srv *httptest.Server) app {
	t.Helper()
	var c struct {
		ApplicationID string `json:"application_id"`
		PrivateKey    string `json:"private_key"`
	}
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/_sim/enablebanking/credentials", nil, nil, &c)
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(c.PrivateKey))
	if err != nil || c.ApplicationID == "" {
		t.Fatalf("minted credentials %q: %v", c.ApplicationID, err)
	}
	return app{id: c.ApplicationID, key: key}
}

type apiError struct {
	Message string `json:"message"`
	Error   string `json:"error"`
	Code    int    `json:"code"`
}

// TestTokensAreVerified: the simulator accepts a minted application's
// token, and refuses (401 with the error body) a token signed with another
// key, one living more than 24 hours, an expired one, and none at all.
func TestTokensAreVerified(t *testing.T) {
	_, srv := simtest.New(t, sim.Options{}, enablebankingsim.Sim{})
	a := mint(t, srv)
	if st := a.call(t, http.MethodGet, srv.URL+"/enablebanking/application", nil, nil); st != http.StatusOK {
		t.Fatalf("a minted application's token: status %d", st)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cases := map[string]string{
		"another key": app{id: a.id, key: other}.token(t, now, now.Add(time.Hour)),
		"over 24h":    a.token(t, now, now.Add(24*time.Hour+time.Minute)),
		"expired":     a.token(t, now.Add(-2*time.Hour), now.Add(-time.Hour)),
		"unknown kid": app{id: "nope", key: a.key}.token(t, now, now.Add(time.Hour)),
		"none":        "",
	}
	for name, tok := range cases {
		var e apiError
		resp := simtest.DoJSON(t, http.MethodGet, srv.URL+"/enablebanking/aspsps", nil, map[string]string{"Authorization": "Bearer " + tok}, &e)
		if resp.StatusCode != http.StatusUnauthorized || e.Code != 401 || e.Error == "" || e.Message == "" {
			t.Errorf("%s: status %d, body %+v; want 401 with message, error and code", name, resp.StatusCode, e)
		}
	}
}

// link runs the link flow for a at the simulator and returns the session.
func link(t *testing.T, srv *httptest.Server, a app, validUntil time.Time) (id string, accounts []string) {
	t.Helper()
	var auth struct {
		URL string `json:"url"`
	}
	body := map[string]any{"aspsp": map[string]string{"name": "Nordea", "country": "FI"}, "redirect_url": "https://app.example.com/cb",
		"state": "s-1", "psu_type": "personal", "access": map[string]string{"valid_until": validUntil.Format(time.RFC3339)}}
	if st := a.call(t, http.MethodPost, srv.URL+"/enablebanking/auth", body, &auth); st != http.StatusOK {
		t.Fatalf("POST /auth: %d", st)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(auth.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Host != "app.example.com" || back.Query().Get("state") != "s-1" || back.Query().Get("code") == "" {
		t.Fatalf("redirect %q", resp.Header.Get("Location"))
	}
	var sess struct {
		SessionID string `json:"session_id"`
		Accounts  []struct {
			UID string `json:"uid"`
		} `json:"accounts"`
	}
	code := map[string]string{"code": back.Query().Get("code")}
	if st := a.call(t, http.MethodPost, srv.URL+"/enablebanking/sessions", code, &sess); st != http.StatusOK || sess.SessionID == "" {
		t.Fatalf("POST /sessions: %d %+v", st, sess)
	}
	if st := a.call(t, http.MethodPost, srv.URL+"/enablebanking/sessions", code, nil); st != http.StatusUnprocessableEntity {
		t.Fatalf("a code spent twice: %d", st)
	}
	for _, acc := range sess.Accounts {
		accounts = append(accounts, acc.UID)
	}
	return sess.SessionID, accounts
}

// TestLinkFlowSessionExpiresAtValidUntil: a linked session is authorised
// until its valid_until on the simulated clock, then expired (401
// EXPIRED_SESSION on its accounts); another application cannot read it.
func TestLinkFlowSessionExpiresAtValidUntil(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, enablebankingsim.Sim{})
	a := mint(t, srv)
	id, accounts := link(t, srv, a, s.WallNow().Add(36*time.Hour))
	if len(accounts) != 3 {
		t.Fatalf("accounts %v", accounts)
	}
	var got struct {
		Status string `json:"status"`
	}
	if st := a.call(t, http.MethodGet, srv.URL+"/enablebanking/sessions/"+id, nil, &got); st != http.StatusOK || got.Status != "AUTHORIZED" {
		t.Fatalf("session: %d %+v", st, got)
	}
	if st := mint(t, srv).call(t, http.MethodGet, srv.URL+"/enablebanking/sessions/"+id, nil, nil); st != http.StatusNotFound {
		t.Fatalf("another application read the session: %d", st)
	}
	if err := s.Advance(2); err != nil {
		t.Fatal(err)
	}
	a.call(t, http.MethodGet, srv.URL+"/enablebanking/sessions/"+id, nil, &got)
	var e apiError
	st := a.call(t, http.MethodGet, srv.URL+"/enablebanking/accounts/"+accounts[0]+"/balances", nil, &e)
	if got.Status != "EXPIRED" || st != http.StatusUnauthorized || e.Error != "EXPIRED_SESSION" {
		t.Fatalf("after valid_until: session %q, balances %d %+v", got.Status, st, e)
	}
}

type txPage struct {
	Transactions []struct {
		EntryReference string `json:"entry_reference"`
		Status         string `json:"status"`
	} `json:"transactions"`
	ContinuationKey *string `json:"continuation_key"`
}

// TestTransactionsPageAndQuota: a listing pages by continuation_key
// (continuations and requests with Psu-Ip-Address not counted); past the
// daily quota an account answers 429, and the next simulated day it
// answers again; pending rows book as the clock advances, keeping their
// entry_reference.
func TestTransactionsPageAndQuota(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{HistoryTransactions: 900}, enablebankingsim.Sim{})
	a := mint(t, srv)
	_, accounts := link(t, srv, a, s.WallNow().Add(30*24*time.Hour))
	base := srv.URL + "/enablebanking/accounts/" + accounts[0] + "/transactions?date_from=" + s.DateOf(-60).Format(time.DateOnly)
	rows := map[string]string{}
	pages := 0
	for u := base; ; pages++ {
		var p txPage
		if st := a.call(t, http.MethodGet, u, nil, &p); st != http.StatusOK {
			t.Fatalf("page %d: status %d", pages, st)
		}
		for _, r := range p.Transactions {
			if _, dup := rows[r.EntryReference]; dup {
				t.Fatalf("row %s on two pages", r.EntryReference)
			}
			rows[r.EntryReference] = r.Status
		}
		if p.ContinuationKey == nil {
			break
		}
		u = base + "&continuation_key=" + url.QueryEscape(*p.ContinuationKey)
	}
	if pages < 2 || len(rows) < enablebankingsim.PageSize {
		t.Fatalf("%d rows on %d pages", len(rows), pages+1)
	}
	for range 3 {
		a.call(t, http.MethodGet, base, nil, nil)
	}
	var e apiError
	if st := a.call(t, http.MethodGet, base, nil, &e); st != http.StatusTooManyRequests || e.Code != 429 {
		t.Fatalf("fifth unattended request of the day: %d %+v", st, e)
	}
	now := time.Now()
	hdr := map[string]string{"Authorization": "Bearer " + a.token(t, now, now.Add(time.Hour)), "Psu-Ip-Address": "203.0.113.9"}
	if st := simtest.DoJSON(t, http.MethodGet, base, nil, hdr, nil).StatusCode; st != http.StatusOK {
		t.Fatalf("a request with the user present: %d", st)
	}
	if err := s.Advance(4); err != nil {
		t.Fatal(err)
	}
	booked := 0
	for u := base; ; {
		var p txPage
		if st := a.call(t, http.MethodGet, u, nil, &p); st != http.StatusOK {
			t.Fatalf("next day: status %d", st)
		}
		for _, r := range p.Transactions {
			if rows[r.EntryReference] == "PDNG" && r.Status == "BOOK" {
				booked++
			}
		}
		if p.ContinuationKey == nil {
			break
		}
		u = base + "&continuation_key=" + url.QueryEscape(*p.ContinuationKey)
	}
	if booked == 0 {
		t.Fatal("no pending row booked after advancing")
	}
}

// TestLinkRunsTheFlow: Link runs POST /auth, the approving page and POST
// /sessions as a client; without settings the credentials carry the demo
// application, with a minted application's settings they are the session
// alone, which that application reads and the demo application does not;
// an application the simulator does not know is refused.
func TestLinkRunsTheFlow(t *testing.T) {
	_, srv := simtest.New(t, sim.Options{}, enablebankingsim.Sim{})
	ctx := context.Background()
	creds, err := enablebankingsim.Sim{}.Link(ctx, srv.Client(), srv.URL, "alice", nil)
	var demo map[string]string
	if err != nil || json.Unmarshal(creds, &demo) != nil || demo["application_id"] != enablebankingsim.DemoApplicationID || demo["session_id"] == "" || demo["private_key"] == "" {
		t.Fatalf("link without settings: %v, keys of %d", err, len(demo))
	}
	a := mint(t, srv)
	pemKey, err := x509.MarshalPKCS8PrivateKey(a.key)
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]string{"application_id": a.id,
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pemKey}))})
	creds, err = enablebankingsim.Sim{}.Link(ctx, srv.Client(), srv.URL, "bob", settings)
	var own map[string]string
	if err != nil || json.Unmarshal(creds, &own) != nil || len(own) != 1 || own["session_id"] == "" {
		t.Fatalf("link with settings: %v, %s", err, creds)
	}
	var sess struct {
		Status   string   `json:"status"`
		Accounts []string `json:"accounts"`
	}
	if st := a.call(t, http.MethodGet, srv.URL+"/enablebanking/sessions/"+own["session_id"], nil, &sess); st != http.StatusOK || sess.Status != "AUTHORIZED" || len(sess.Accounts) == 0 {
		t.Fatalf("the linked session: status %d, %+v", st, sess)
	}
	if demo["session_id"] == own["session_id"] {
		t.Fatal("two links gave one session")
	}
	stranger, _ := json.Marshal(map[string]string{"application_id": "nope", "private_key": unknownKey(t)})
	if _, err := (enablebankingsim.Sim{}).Link(ctx, srv.Client(), srv.URL, "eve", stranger); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("an unknown application linked: %v", err)
	}
}

// unknownKey is a fresh RSA private key in PEM that no simulator knows.
func unknownKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}
