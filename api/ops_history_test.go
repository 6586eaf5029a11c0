package api_test

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/process"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// opsProviders are the providers the tests' consoles filter by.
func opsProviders() []string {
	var names []string
	for _, d := range all.NewRegistry().Descriptions() {
		names = append(names, d.Name)
	}
	return names
}

// withOpsReauth mounts the ops console like withOps, with the registry's
// providers for its filter and a re-auth through a linking.Linker sealing
// with box, as cmd/finsync wires it.
func withOpsReauth(t *testing.T, box *secrets.Box) envOption {
	return func(c *api.Config) {
		jobs, err := worker.NewInsertClient(c.Store)
		if err != nil {
			t.Fatal(err)
		}
		l := &linking.Linker{Store: c.Store, Registry: all.NewRegistry(), Box: box, Jobs: jobs}
		c.Ops = newConsole(t, c.Store, ops.Config{Token: testOpsToken, Providers: opsProviders(),
			Throttle: ops.Throttle{PerAddressBurst: 100_000, PerAddressPerMinute: 1, GlobalBurst: 100_000, GlobalPerMinute: 1},
			Reauth:   process.OpsReauth(l)})
	}
}

func testBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.FromHex(strings.Repeat("5a", 32))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// get fetches an ops page with the bearer token.
func (e *env) opsGet(path string) (int, string) {
	e.t.Helper()
	status, _, body := e.opsDo(opsRequest{method: http.MethodGet, path: path}, bearer(testOpsToken))
	return status, body
}

var (
	historyRow = regexp.MustCompile(`<tr class="sync">`)
	listedRow  = regexp.MustCompile(`<tr data-connection="([0-9a-f-]{36})">`)
	nextLink   = regexp.MustCompile(`id="next-page" href="([^"]+)"`)
)

// TestOpsConnectionPage: a connection's page shows its health, its
// finished syncs (newest first) in a table, and their chart as inline SVG
// with a title; the list links to it; an unknown id is a 404 page, a
// malformed one a 400, and without the operator token it is a 401.
func TestOpsConnectionPage(t *testing.T) {
	e := newEnv(t, withOpsReauth(t, testBox(t)))
	ctx := context.Background()
	st := storage.New(e.fx.Pool)
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "error")
	held := time.Now().Add(time.Hour)
	if _, err := e.fx.Pool.Exec(ctx, `UPDATE bank_connections SET last_provider_error_code = 'ITEM_LOGIN_REQUIRED',
		last_provider_error_message = 'the user must log in again', last_error_class = 'reauth_required', consecutive_failures = 3,
		consent_expires_at = $2, held_back_until = $3, held_back_reason = 'rate_limit' WHERE id = $1`,
		conn, time.Date(2099, 9, 1, 0, 0, 0, 0, time.UTC), held); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
	for i := range 5 {
		r := storage.SyncRecord{StartedAt: base.Add(time.Duration(i) * time.Hour), FinishedAt: base.Add(time.Duration(i)*time.Hour + time.Duration(i+1)*1500*time.Millisecond),
			Pages: int64(i + 1), Changes: storage.RowChanges{Added: int64(100 * i), Modified: 7, Removed: int64(i)}, Outcome: storage.SyncOutcomeOK}
		if i == 4 {
			r.Outcome, r.ErrorCode, r.ErrorMessage, r.Changes, r.Pages = "reauth_required", "ITEM_LOGIN_REQUIRED", "the user must log in again", storage.RowChanges{}, 0
		}
		if err := st.RecordSync(ctx, conn, r); err != nil {
			t.Fatal(err)
		}
	}

	status, body := e.opsGet("/ops/connections/" + conn.String())
	if status != http.StatusOK {
		t.Fatalf("GET the connection's page: %d %.500s", status, body)
	}
	for _, want := range []string{
		conn.String(), ">error<", "ITEM_LOGIN_REQUIRED", "the user must log in again", ">reauth<", // status, error, action
		`<dd class="failures">3</dd>`, "2099-09-01 00:00:00Z", ">rate_limit<", held.UTC().Format("2006-01-02 15:04:05Z"),
		`<svg id="history-chart"`, `role="img"`, `<title id="chart-title">Duration and rows stored of the last 5 syncs</title>`,
		`<polyline class="duration" points="`, `<form class="reauth"`, `name="credentials"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := len(historyRow.FindAllString(body, -1)); n != 5 {
		t.Errorf("the history table has %d rows, want 5", n)
	}
	// Newest first: the failure, then the sync of 4 pages, 300 rows added.
	first := body[strings.Index(body, `<tr class="sync">`):]
	if !strings.Contains(first[:strings.Index(first, "</tr>")], "reauth_required") {
		t.Errorf("the newest sync is not the table's first row: %.400s", first)
	}
	for _, want := range []string{`<td class="num pages">4</td>`, `<td class="num added">300</td>`, `<td class="num modified">7</td>`,
		`<td class="num removed">3</td>`, `<td class="num duration">6.0 s</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the history table lacks %q", want)
		}
	}
	if n := strings.Count(body, "<circle "); n != 5 {
		t.Errorf("the chart has %d points, want 5", n)
	}

	// The list links each connection to its page.
	status, body = e.opsGet("/ops")
	if status != http.StatusOK || !strings.Contains(body, `href="/ops/connections/`+conn.String()+`"`) {
		t.Fatalf("the list does not link the connection's page: %d %.500s", status, body)
	}
	// A connection without syncs says so, with no chart.
	quiet := e.fx.Connection(u.ID, "mercury", "active")
	if status, body = e.opsGet("/ops/connections/" + quiet.String()); status != http.StatusOK || strings.Contains(body, "<svg") ||
		!strings.Contains(body, "No sync has finished yet.") {
		t.Fatalf("page of a connection without syncs: %d %.500s", status, body)
	}

	for path, want := range map[string]int{
		"/ops/connections/" + uuid.NewString(): http.StatusNotFound,
		"/ops/connections/not-a-uuid":          http.StatusBadRequest,
		"/ops/connections/1234":                http.StatusBadRequest,
	} {
		status, h, body := e.opsDo(opsRequest{method: http.MethodGet, path: path}, bearer(testOpsToken))
		if status != want || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, `id="error"`) {
			t.Errorf("GET %s: %d %s %.300s, want %d with an error page", path, status, h.Get("Content-Type"), body, want)
		}
	}
	if status, _, _ := e.opsDo(opsRequest{method: http.MethodGet, path: "/ops/connections/" + conn.String()}, nil); status != http.StatusUnauthorized {
		t.Fatalf("the page without the token: %d", status)
	}
}

// TestOpsConnectionsFilters: the list filters by provider and status,
// alone and together; an unknown provider or status, or a cursor that is
// none of the list's, is a 400 page naming the parameter.
func TestOpsConnectionsFilters(t *testing.T) {
	e := newEnv(t, withOpsReauth(t, testBox(t)))
	u := e.fx.User(domain.PlanPro, true)
	want := map[string][]uuid.UUID{}
	for _, c := range []struct{ provider, status string }{
		{"plaid", "active"}, {"plaid", "error"}, {"plaid", "disabled"}, {"mercury", "active"}, {"mercury", "error"}, {"stripe", "active"},
	} {
		id := e.fx.Connection(u.ID, c.provider, c.status)
		for _, k := range []string{"", "provider=" + c.provider, "status=" + c.status, "provider=" + c.provider + "&status=" + c.status} {
			want[k] = append(want[k], id)
		}
	}
	for query, ids := range want {
		if query == "" {
			continue
		}
		status, body := e.opsGet("/ops?" + query)
		if status != http.StatusOK {
			t.Fatalf("GET /ops?%s: %d %.300s", query, status, body)
		}
		var got []uuid.UUID
		for _, m := range listedRow.FindAllStringSubmatch(body, -1) {
			got = append(got, uuid.MustParse(m[1]))
		}
		if !slices.Equal(got, ids) {
			t.Errorf("GET /ops?%s lists %v, want %v", query, got, ids)
		}
	}
	// The filter form shows the filters in force.
	_, body := e.opsGet("/ops?provider=mercury&status=error")
	if !strings.Contains(body, `<option value="mercury" selected>`) || !strings.Contains(body, `<option value="error" selected>`) {
		t.Errorf("the filter form does not show the filters: %.1500s", body)
	}
	for query, names := range map[string]string{
		"provider=nope":        "provider",
		"provider=PLAID":       "provider",
		"status=broken":        "status",
		"provider=&status=":    "",
		"after=yesterday":      "after",
		"after=123_not-a-uuid": "after",
	} {
		status, h, body := e.opsDo(opsRequest{method: http.MethodGet, path: "/ops?" + query}, bearer(testOpsToken))
		if names == "" {
			if status != http.StatusOK {
				t.Errorf("GET /ops?%s: %d", query, status)
			}
			continue
		}
		if status != http.StatusBadRequest || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, names+" &#34;") {
			t.Errorf("GET /ops?%s: %d %.400s, want 400 naming %s", query, status, body, names)
		}
	}
}

// TestOpsConnectionsPaging: past 500 connections the list pages with a
// "next" link carrying a keyset cursor; following the links lists every
// connection once, in creation order (ties broken by id), with the filters
// kept; the last page has no next link.
func TestOpsConnectionsPaging(t *testing.T) {
	e := newEnv(t, withOpsReauth(t, testBox(t)))
	u := e.fx.User(domain.PlanPro, true)
	ctx := context.Background()
	// 1,203 connections, two by two created at the same instant; every
	// third of mercury, the rest of plaid.
	if _, err := e.fx.Pool.Exec(ctx, `INSERT INTO bank_connections (user_id, provider, status, created_at)
		SELECT $1, CASE WHEN g % 3 = 0 THEN 'mercury' ELSE 'plaid' END, 'active',
			'2026-01-01T00:00:00Z'::timestamptz + make_interval(secs => (g / 2) * 1.000001)
		FROM generate_series(1, 1203) g`, u.ID); err != nil {
		t.Fatal(err)
	}
	order := func(provider string) []string {
		rows, err := e.fx.Pool.Query(ctx, `SELECT id::text FROM bank_connections WHERE $1 = '' OR provider = $1 ORDER BY created_at, id`, provider)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	walk := func(path string) (ids []string, pages []int) {
		t.Helper()
		for path != "" {
			status, body := e.opsGet(path)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d %.300s", path, status, body)
			}
			rows := listedRow.FindAllStringSubmatch(body, -1)
			pages = append(pages, len(rows))
			for _, m := range rows {
				ids = append(ids, m[1])
			}
			path = ""
			if m := nextLink.FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
				if !strings.Contains(path, "after=") || strings.Contains(path, "offset") {
					t.Fatalf("next link %s", path)
				}
			}
			if len(pages) > 10 {
				t.Fatal("the next links do not end")
			}
		}
		return ids, pages
	}
	ids, pages := walk("/ops")
	if !slices.Equal(pages, []int{500, 500, 203}) || !slices.Equal(ids, order("")) {
		t.Fatalf("pages of %v rows; the walk listed %d connections, in order: %v", pages, len(ids), slices.Equal(ids, order("")))
	}
	ids, pages = walk("/ops?provider=mercury")
	if !slices.Equal(pages, []int{401}) || !slices.Equal(ids, order("mercury")) {
		t.Fatalf("mercury: pages of %v rows", pages)
	}
	ids, pages = walk("/ops?provider=plaid&status=active")
	if !slices.Equal(pages, []int{500, 302}) || !slices.Equal(ids, order("plaid")) {
		t.Fatalf("plaid: pages of %v rows", pages)
	}
	// A later page links back to the first, with the filters.
	_, body := e.opsGet("/ops?provider=plaid")
	next := html.UnescapeString(nextLink.FindStringSubmatch(body)[1])
	if _, body = e.opsGet(next); !strings.Contains(body, `id="first-page" href="/ops?provider=plaid"`) {
		t.Fatalf("page %s lacks its link to the first: %.300s", next, body)
	}
}

// TestOpsReauthForm: the page's re-auth form puts new credentials on the
// connection and enqueues its sync, then shows a notice; credentials that
// are not the provider's are refused on the page (422) without echoing
// them, nothing stored; the form needs its CSRF token and the console's
// own origin, and a malformed or unknown id is a 400 or 404.
func TestOpsReauthForm(t *testing.T) {
	box := testBox(t)
	e := newEnv(t, withOpsReauth(t, box))
	ctx := context.Background()
	u := e.fx.User(domain.PlanPro, true)
	conn := e.fx.Connection(u.ID, "plaid", "error")
	status, h, _ := e.opsDo(opsRequest{method: http.MethodPost, path: "/ops/sign-in", form: url.Values{"token": {testOpsToken}}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", status)
	}
	session := strings.TrimPrefix(strings.Split(h.Get("Set-Cookie"), ";")[0], "finsync_ops=")
	page := "/ops/connections/" + conn.String()
	status, _, body := e.opsDo(opsRequest{method: http.MethodGet, path: page}, cookie(session))
	m := csrfInput.FindStringSubmatch(body)
	if status != http.StatusOK || m == nil || !strings.Contains(body, `action="/ops/connections/`+conn.String()+`/reauth"`) {
		t.Fatalf("GET the page signed in: %d %.500s", status, body)
	}
	csrf := m[1]
	stored := func() (sealed []byte, jobs int) {
		t.Helper()
		if err := e.fx.Pool.QueryRow(ctx, `SELECT credentials_encrypted, (SELECT count(*) FROM river_job WHERE kind = 'sync_connection')
			FROM bank_connections WHERE id = $1`, conn).Scan(&sealed, &jobs); err != nil {
			t.Fatal(err)
		}
		return sealed, jobs
	}
	post := func(path string, form url.Values, auth func(*http.Request)) (int, http.Header, string) {
		t.Helper()
		return e.opsDo(opsRequest{method: http.MethodPost, path: path, form: form}, auth)
	}
	good := allsim.Credentials("plaid", "relinked")

	// Refused: no CSRF token, a wrong one, a cross-site post with the right one.
	for name, c := range map[string]struct {
		form url.Values
		auth func(*http.Request)
	}{
		"no CSRF token":     {url.Values{"credentials": {string(good)}}, sameSiteCookie(session)},
		"a wrong token":     {url.Values{"csrf": {strings.Repeat("0", len(csrf))}, "credentials": {string(good)}}, sameSiteCookie(session)},
		"a cross-site post": {url.Values{"csrf": {csrf}, "credentials": {string(good)}}, func(r *http.Request) { cookie(session)(r); r.Header.Set("Sec-Fetch-Site", "cross-site") }},
		"no origin headers": {url.Values{"csrf": {csrf}, "credentials": {string(good)}}, cookie(session)},
	} {
		if status, _, body := post(page+"/reauth", c.form, c.auth); status != http.StatusForbidden {
			t.Errorf("re-auth with %s: %d %.200s, want 403", name, status, body)
		}
	}
	if sealed, jobs := stored(); sealed != nil || jobs != 0 {
		t.Fatalf("a refused post stored credentials or queued %d jobs", jobs)
	}

	// Bad credentials: the page again, with the refusal, never the input.
	for creds, want := range map[string]string{
		`{"api_key":"sk_live_SECRET"}`: "unknown key &#34;api_key&#34;",
		`{"access_token":"SECRET"`:     "not valid JSON",
		`   `:                          "Credentials are required",
	} {
		status, h, body := post(page+"/reauth", url.Values{"csrf": {csrf}, "credentials": {creds}}, sameSiteCookie(session))
		if status != http.StatusUnprocessableEntity || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, `id="reauth-error"`) || !strings.Contains(body, want) || !strings.Contains(body, `id="history"`) {
			t.Errorf("re-auth with %s: %d %.600s, want 422 saying %q", creds, status, body, want)
		}
		if strings.Contains(body, "SECRET") {
			t.Errorf("the refusal of %s echoes the credentials", creds)
		}
	}
	if status, _, body := post(page+"/reauth", url.Values{"csrf": {csrf}, "credentials": {string(good)}, "base_url": {"javascript:alert(1)"}}, sameSiteCookie(session)); status != http.StatusUnprocessableEntity || !strings.Contains(body, "not an absolute http(s) URL") {
		t.Errorf("re-auth with a bad base URL: %d %.300s", status, body)
	}
	if sealed, jobs := stored(); sealed != nil || jobs != 0 {
		t.Fatalf("a refused re-auth stored credentials or queued %d jobs", jobs)
	}
	for path, want := range map[string]int{"/ops/connections/nope/reauth": http.StatusBadRequest, "/ops/connections/" + uuid.NewString() + "/reauth": http.StatusNotFound} {
		if status, _, _ := post(path, url.Values{"csrf": {csrf}, "credentials": {string(good)}}, sameSiteCookie(session)); status != want {
			t.Errorf("POST %s: %d, want %d", path, status, want)
		}
	}
	if status, _, _ := post(page+"/reauth", url.Values{"csrf": {csrf}, "credentials": {strings.Repeat("x", 100<<10)}}, sameSiteCookie(session)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 100 KiB form: %d, want 413", status)
	}

	// Success: sealed on the connection, its sync queued, a notice.
	status, h, body = post(page+"/reauth", url.Values{"csrf": {csrf}, "credentials": {string(good) + "\n"}}, sameSiteCookie(session))
	loc := h.Get("Location")
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, page+"?done=reauth&job=") {
		t.Fatalf("re-auth: %d %s %.300s", status, loc, body)
	}
	sealed, jobs := stored()
	plain, err := box.Open(sealed)
	if err != nil || !bytes.Equal(plain, good) || jobs != 1 {
		t.Fatalf("after the re-auth: credentials %s (%v), %d sync jobs", plain, err, jobs)
	}
	var jobConn string
	if err := e.fx.Pool.QueryRow(ctx, `SELECT args->>'connection_id' FROM river_job WHERE id = $1`, strings.TrimPrefix(loc, page+"?done=reauth&job=")).Scan(&jobConn); err != nil || jobConn != conn.String() {
		t.Fatalf("the job of the notice syncs %q (%v)", jobConn, err)
	}
	status, _, body = e.opsDo(opsRequest{method: http.MethodGet, path: loc}, cookie(session))
	if status != http.StatusOK || !strings.Contains(body, "New credentials stored; a sync is queued.") || strings.Contains(body, "relinked") {
		t.Fatalf("the page after the re-auth: %d %.500s", status, body)
	}
	// The bearer token needs no CSRF token.
	if status, _, _ := post(page+"/reauth", url.Values{"credentials": {string(good)}}, bearer(testOpsToken)); status != http.StatusSeeOther {
		t.Fatalf("re-auth with the bearer token: %d", status)
	}
}
