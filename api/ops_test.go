package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// testOpsToken is the operator token of the tests' consoles: 32 random
// bytes in hex, as `finsync keys generate` makes.
const testOpsToken = "31800b35e3f9875e7133788adb3ad6e5e30294152a7bf876cf4beec9314be367"

// withOps mounts the ops console with testOpsToken and failure budgets
// large enough that the tests sending many wrong credentials on purpose
// see every refusal as a 401 (the budgets have tests of their own).
func withOps(t *testing.T) envOption {
	return func(c *api.Config) {
		c.Ops = newConsole(t, c.Store, ops.Config{Token: testOpsToken,
			Throttle: ops.Throttle{PerAddressBurst: 100_000, PerAddressPerMinute: 1, GlobalBurst: 100_000, GlobalPerMinute: 1}})
	}
}

// newConsole builds an ops console over st from cfg (its Store, Jobs and
// Log filled in), ending its background work with the test.
func newConsole(t *testing.T, st *storage.Store, cfg ops.Config) *ops.Console {
	t.Helper()
	jobs, err := worker.NewInsertClient(st)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg.Store, cfg.Jobs, cfg.Log = st, jobs, slog.New(slog.NewTextHandler(io.Discard, nil))
	console, err := ops.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return console
}

// opsRequest is one request to an ops route.
type opsRequest struct {
	method, path string
	form         url.Values
}

// opsRequests derives requests covering every ops route (ops.Routes), with
// id a connection's id; the catch-all of River's UI is tried on its pages,
// assets and API.
func opsRequests(t *testing.T, id uuid.UUID) []opsRequest {
	t.Helper()
	var out []opsRequest
	for _, r := range ops.Routes() {
		method, path, _ := strings.Cut(r, " ")
		path = strings.ReplaceAll(path, ":id", id.String())
		methods := []string{method}
		if method == "ANY" {
			methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions, http.MethodTrace}
		}
		paths := []string{path}
		if strings.HasSuffix(path, "/*path") {
			base := strings.TrimSuffix(path, "*path")
			paths = []string{base, base + "jobs", base + "jobs/1", base + "queues", base + "api/jobs?state=available",
				base + "api/jobs/1", base + "api/queues", base + "api/states", base + "api/features", base + "api/jobs/cancel",
				base + "api/jobs/retry", base + "api/jobs/delete", base + "api/queues/sync/pause", base + "assets/index.js"}
		}
		for _, m := range methods {
			for _, p := range paths {
				out = append(out, opsRequest{method: m, path: p, form: url.Values{"csrf": {"x"}, "token": {"wrong"}}})
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("only %d ops requests derived", len(out))
	}
	return out
}

// opsDo sends an ops request without following redirects; auth sets the
// credential on it.
func (e *env) opsDo(r opsRequest, auth func(*http.Request)) (int, http.Header, string) {
	e.t.Helper()
	var body io.Reader
	if r.form != nil && r.method != http.MethodGet {
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequest(r.method, e.srv.URL+r.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth != nil {
		auth(req)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func bearer(token string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
}

func cookie(value string) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "finsync_ops", Value: value}) }
}

// sameSiteCookie is cookie plus the Sec-Fetch-Site header a browser sends
// with a request from the console's own pages.
func sameSiteCookie(value string) func(*http.Request) {
	return func(r *http.Request) {
		cookie(value)(r)
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}
}

// TestOpsRoutesAbsentWithoutToken: with no operator token configured,
// every ops route answers 404, even with what would be the credential.
func TestOpsRoutesAbsentWithoutToken(t *testing.T) {
	e := newEnv(t)
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	for _, r := range opsRequests(t, conn) {
		for _, auth := range []func(*http.Request){nil, bearer(testOpsToken)} {
			if status, _, body := e.opsDo(r, auth); status != http.StatusNotFound {
				t.Errorf("%s %s without a console: %d %.200s", r.method, r.path, status, body)
			}
		}
	}
}

// TestOpsRoutesNeedTheOperatorToken: every ops route, and any other path
// under /ops, answers 401 without the operator credential: no header, a
// consumer's API key, a wrong token, a forged or expired-looking session.
func TestOpsRoutesNeedTheOperatorToken(t *testing.T) {
	e := newEnv(t, withOps(t))
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	apiKey := e.fx.Key(u.ID, nil)
	refusals := map[string]func(*http.Request){
		"no credential":  nil,
		"an API key":     bearer(apiKey),
		"a wrong token":  bearer(testOpsToken + "x"),
		"basic auth":     func(r *http.Request) { r.SetBasicAuth("ops", testOpsToken) },
		"a raw token":    cookie(testOpsToken),
		"forged session": cookie("99999999999.0000000000000000000000000000000000000000000000000000000000000000"),
	}
	reqs := append(opsRequests(t, conn), opsRequest{method: http.MethodGet, path: "/ops/nothing-here"},
		opsRequest{method: http.MethodGet, path: "/ops/sign-in"})
	for name, auth := range refusals {
		for _, r := range reqs {
			status, h, body := e.opsDo(r, auth)
			if status != http.StatusUnauthorized {
				t.Errorf("%s %s with %s: %d %.200s", r.method, r.path, name, status, body)
				continue
			}
			if h.Get("Set-Cookie") != "" {
				t.Errorf("%s %s with %s set a cookie", r.method, r.path, name)
			}
		}
	}
	// GET /ops answers 401 with the sign-in form as its page.
	status, h, body := e.opsDo(opsRequest{method: http.MethodGet, path: "/ops"}, nil)
	if status != http.StatusUnauthorized || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `action="/ops/sign-in"`) || !strings.Contains(body, `name="token"`) {
		t.Fatalf("GET /ops unauthenticated: %d %s %.300s", status, h.Get("Content-Type"), body)
	}
	// The connection was left alone.
	var status2 string
	if err := e.fx.Pool.QueryRow(context.Background(), `SELECT status FROM bank_connections WHERE id = $1`, conn).Scan(&status2); err != nil || status2 != "active" {
		t.Fatalf("connection status %q (%v) after refused actions", status2, err)
	}
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// TestOpsConsoleActions signs in with the form, then disables, enables and
// syncs a connection through the page's forms, and reads River's UI.
func TestOpsConsoleActions(t *testing.T) {
	e := newEnv(t, withOps(t))
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "active")
	ctx := context.Background()

	// Bearer: the page lists the connection.
	status, _, body := e.opsDo(opsRequest{method: http.MethodGet, path: "/ops"}, bearer(testOpsToken))
	if status != http.StatusOK || !strings.Contains(body, conn.String()) || !strings.Contains(body, "Sync now") {
		t.Fatalf("GET /ops with the token: %d %.500s", status, body)
	}

	// Sign in: a Secure, HttpOnly, SameSite=Strict cookie without the token.
	status, h, body := e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/sign-in", form: url.Values{"token": {testOpsToken}}}, nil)
	if status != http.StatusSeeOther || h.Get("Location") != "/ops" {
		t.Fatalf("sign in: %d %v %.200s", status, h, body)
	}
	set := h.Get("Set-Cookie")
	for _, attr := range []string{"finsync_ops=", "Path=/ops", "HttpOnly", "Secure", "SameSite=Strict"} {
		if !strings.Contains(set, attr) {
			t.Fatalf("session cookie %q lacks %s", set, attr)
		}
	}
	if strings.Contains(set, testOpsToken) {
		t.Fatalf("session cookie holds the token: %s", set)
	}
	session := strings.TrimPrefix(strings.Split(set, ";")[0], "finsync_ops=")
	status, _, body = e.opsDo(opsRequest{method: http.MethodGet, path: "/ops"}, cookie(session))
	m := csrfInput.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("GET /ops signed in: %d %.500s", status, body)
	}
	csrf := m[1]
	connStatus := func() string {
		var s string
		if err := e.fx.Pool.QueryRow(ctx, `SELECT status FROM bank_connections WHERE id = $1`, conn).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	action := func(name, token string) (int, string) {
		status, h, _ := e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/connections/" + conn.String() + "/" + name,
			form: url.Values{"csrf": {token}}}, sameSiteCookie(session))
		return status, h.Get("Location")
	}

	// A form without the session's CSRF token is refused.
	if status, _ := action("disable", ""); status != http.StatusForbidden || connStatus() != "active" {
		t.Fatalf("disable without CSRF token: %d, status %s", status, connStatus())
	}
	if status, _ := action("disable", strings.Repeat("0", len(csrf))); status != http.StatusForbidden {
		t.Fatalf("disable with a wrong CSRF token: %d", status)
	}
	if status, loc := action("disable", csrf); status != http.StatusSeeOther || loc != "/ops?done=disable" || connStatus() != "disabled" {
		t.Fatalf("disable: %d %s, status %s", status, loc, connStatus())
	}
	_, _, body = e.opsDo(opsRequest{method: http.MethodGet, path: "/ops?done=disable"}, cookie(session))
	if !strings.Contains(body, "Connection disabled.") || !strings.Contains(body, "/ops/connections/"+conn.String()+"/enable") {
		t.Fatalf("page after disable: %.800s", body)
	}
	if status, _ := action("enable", csrf); status != http.StatusSeeOther || connStatus() != "active" {
		t.Fatalf("enable: %d, status %s", status, connStatus())
	}

	// Sync now enqueues a sync_connection job, once while it waits.
	status, loc := action("sync", csrf)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ops?done=sync&job=") {
		t.Fatalf("sync now: %d %s", status, loc)
	}
	jobID := strings.TrimPrefix(loc, "/ops?done=sync&job=")
	var kind, args string
	if err := e.fx.Pool.QueryRow(ctx, `SELECT kind, args->>'connection_id' FROM river_job WHERE id = $1`, jobID).Scan(&kind, &args); err != nil {
		t.Fatal(err)
	}
	if kind != "sync_connection" || args != conn.String() {
		t.Fatalf("job %s: %s %s", jobID, kind, args)
	}
	if _, loc2 := action("sync", csrf); loc2 != loc {
		t.Fatalf("second sync now while one waits: %s, want %s", loc2, loc)
	}
	// The bearer token needs no CSRF token; an unknown connection is 404.
	status, _, _ = e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/connections/" + uuid.NewString() + "/sync"}, bearer(testOpsToken))
	if status != http.StatusNotFound {
		t.Fatalf("sync of an unknown connection: %d", status)
	}

	// River's UI and its API, signed in.
	status, h, body = e.opsDo(opsRequest{method: http.MethodGet, path: "/ops/jobs/"}, cookie(session))
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /ops/jobs/: %d %.300s", status, body)
	}
	status, _, body = e.opsDo(opsRequest{method: http.MethodGet, path: "/ops/jobs/api/jobs/" + jobID}, bearer(testOpsToken))
	if status != http.StatusOK || !strings.Contains(body, `"sync_connection"`) {
		t.Fatalf("GET /ops/jobs/api/jobs/%s: %d %.300s", jobID, status, body)
	}

	// Sign out clears the cookie.
	status, h, _ = e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/sign-out", form: url.Values{"csrf": {csrf}}}, sameSiteCookie(session))
	if status != http.StatusSeeOther || !strings.Contains(h.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign out: %d %s", status, h.Get("Set-Cookie"))
	}
}

// TestOpsRefusesCrossSiteSessionWrites posts to River UI's job cancel and
// retry endpoints with a valid session cookie: from another site (by
// Sec-Fetch-Site or Origin), or with neither header, they get 403; from
// the console's own origin they reach River's UI; bearer requests need
// neither header.
func TestOpsRefusesCrossSiteSessionWrites(t *testing.T) {
	e := newEnv(t, withOps(t))
	status, h, _ := e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/sign-in", form: url.Values{"token": {testOpsToken}}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	session := strings.TrimPrefix(strings.Split(h.Get("Set-Cookie"), ";")[0], "finsync_ops=")
	host := strings.TrimPrefix(e.srv.URL, "http://")
	post := func(path string, auth func(*http.Request), headers map[string]string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(`{"ids":["1"]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "text/plain") // a simple request: no CORS preflight
		auth(req)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, path := range []string{"/ops/jobs/api/jobs/cancel", "/ops/jobs/api/jobs/retry"} {
		for name, headers := range map[string]map[string]string{
			"cross-site fetch":  {"Sec-Fetch-Site": "cross-site"},
			"same-site fetch":   {"Sec-Fetch-Site": "same-site"},
			"foreign origin":    {"Origin": "https://evil.example"},
			"null origin":       {"Origin": "null"},
			"no origin headers": {},
		} {
			if got := post(path, cookie(session), headers); got != http.StatusForbidden {
				t.Errorf("%s with the session, %s: %d, want 403", path, name, got)
			}
		}
		for name, headers := range map[string]map[string]string{
			"same-origin fetch": {"Sec-Fetch-Site": "same-origin"},
			"own origin":        {"Origin": "http://" + host},
		} {
			if got := post(path, cookie(session), headers); got == http.StatusForbidden || got == http.StatusUnauthorized {
				t.Errorf("%s with the session, %s: %d, want it to reach River's UI", path, name, got)
			}
		}
		if got := post(path, bearer(testOpsToken), map[string]string{"Sec-Fetch-Site": "cross-site"}); got == http.StatusForbidden || got == http.StatusUnauthorized {
			t.Errorf("%s with the bearer token: %d, want it to reach River's UI", path, got)
		}
	}
}
