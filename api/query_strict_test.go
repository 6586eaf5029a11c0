package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/api/middleware"
	v1 "github.com/finsync/finsync/api/v1"
	v2 "github.com/finsync/finsync/api/v2"
)

// refusal asserts a 400 BAD_REQUEST in the endpoint envelope (the same in
// both versions) and returns its message.
func (e *env) refusal(r response) string {
	e.t.Helper()
	e.expect(r, http.StatusBadRequest, "BAD_REQUEST")
	_, msg := v1Error(e.t, r)
	return msg
}

// TestV2UnknownQueryParametersAndValues: a misspelt parameter or a value
// outside an enum answers 400 naming the parameter and what is accepted,
// on reads and writes alike, and a refused write changes nothing; health
// stays lenient and authentication still comes first.
func TestV2UnknownQueryParametersAndValues(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	for _, c := range []struct{ path, msg string }{
		{"/v2/transactions?acount_id=" + w.acctA1.String(), `unknown query parameter "acount_id"; accepted: ` +
			"bankConnectionId, bankAccountId, categoryId, status, startDate, endDate, cursor, limit, " +
			"includeHidden, includeDuplicates, transfers"},
		{"/v2/transactions?transfers=exlude", "transfers: must be one of include, exclude, only"},
		{"/v2/transactions?status=actve", "status: must be one of pending, posted, deleted, all"},
		{"/v2/transactions?includeHidden=1", "includeHidden: must be true or false"},
		{"/v2/accounts?status=actve", "status: must be one of active, closed, all"},
		{"/v2/accounts?accountId=" + w.acctA1.String(), `unknown query parameter "accountId"; accepted: ` +
			"bankConnectionId, status, cursor, limit"},
		{"/v2/bank-connections?status=disbled", "status: must be one of active, all, disabled"},
		{"/v2/rules?includeArchived=yes", "includeArchived: must be true or false"},
		{"/v2/rules?archived=true", `unknown query parameter "archived"; accepted: includeArchived`},
		{"/v2/me?pretty=true", `unknown query parameter "pretty"; this operation accepts no query parameters`},
		{"/v2/accounts/" + w.acctA1.String() + "?expand=balances",
			`unknown query parameter "expand"; this operation accepts no query parameters`},
		{"/v2/transactions?limit=5&b=1&a=2", `unknown query parameter "a"; accepted: ` +
			"bankConnectionId, bankAccountId, categoryId, status, startDate, endDate, cursor, limit, " +
			"includeHidden, includeDuplicates, transfers"},
	} {
		if got := e.refusal(e.get(c.path, key)); got != c.msg {
			t.Errorf("%s: message %q, want %q", c.path, got, c.msg)
		}
	}

	// The accepted spellings still work.
	for _, path := range []string{"/v2/transactions?transfers=exclude&status=all&includeHidden=true",
		"/v2/accounts?status=all", "/v2/bank-connections?status=disabled", "/v2/rules?includeArchived=true"} {
		e.expect(e.get(path, key), http.StatusOK, "")
	}

	// A write with an unknown parameter is refused before it runs.
	before := len(ids(t, e.get("/v2/categories", key), "categories"))
	msg := e.refusal(e.do(http.MethodPost, "/v2/categories?dryRun=true", key, strings.NewReader(`{"name":"Rent"}`)))
	if msg != `unknown query parameter "dryRun"; this operation accepts no query parameters` {
		t.Errorf("POST message %q", msg)
	}
	if after := len(ids(t, e.get("/v2/categories", key), "categories")); after != before {
		t.Errorf("a refused POST created a category: %d categories, were %d", after, before)
	}

	// Authentication is checked first; health and probes stay lenient.
	if r := e.get("/v2/transactions?acount_id=1", ""); r.status != http.StatusUnauthorized {
		t.Errorf("without a key: status %d, want 401: %s", r.status, r.body)
	}
	e.expect(e.get("/v2/health?probe=1", ""), http.StatusOK, "")
	e.refusal(e.get("/v2/openapi.json?format=yaml", ""))
}

// TestV1UnknownQueryParameters: version 1 refuses unknown parameters in
// its own envelope, naming the accepted ones.
func TestV1UnknownQueryParameters(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	base := "bankConnectionId=" + w.connA1.String() + "&startDate=2026-03-01&endDate=2026-03-31"
	for _, c := range []struct{ path, msg string }{
		{"/v1/transactions?" + base + "&acount_id=1", `unknown query parameter "acount_id"; accepted: ` +
			"bankConnectionId, accountIds, startDate, endDate, limit, cursor"},
		{"/v1/transactions?" + base + "&accountId=" + w.acctA1.String(), `unknown query parameter "accountId"; ` +
			"accepted: bankConnectionId, accountIds, startDate, endDate, limit, cursor"},
		{"/v1/accounts?bankConnectionId=" + w.connA1.String(), `unknown query parameter "bankConnectionId"; ` +
			"accepted: connectionId"},
		{"/v1/bank-connections?status=all", `unknown query parameter "status"; this operation accepts no query parameters`},
		{"/v1/holdings?bankConnectionId=" + w.connA1.String() + "&startDate=2026-03-01",
			`unknown query parameter "startDate"; accepted: bankConnectionId, accountIds, limit, cursor`},
	} {
		if got := e.refusal(e.get(c.path, key)); got != c.msg {
			t.Errorf("%s: message %q, want %q", c.path, got, c.msg)
		}
	}
	e.expect(e.get("/v1/transactions?"+base, key), http.StatusOK, "")
	e.expect(e.get("/v1/accounts?connectionId="+w.connA1.String(), key), http.StatusOK, "")
	e.expect(e.get("/v1/health?probe=1", ""), http.StatusOK, "")
	e.refusal(e.get("/v1/openapi.json?v=2", ""))
}

// TestV1V2EveryRouteRefusesUnknownQuery walks every route the router
// registers under /v1 and /v2 (but the health checks): each answers an
// unknown parameter with 400 naming it, whatever its method; and each GET
// route reads every parameter it declares (a value no reader takes answers
// 400 naming that parameter), so the declaration is what the handler
// parses. Every response is checked against the documents.
func TestV1V2EveryRouteRefusesUnknownQuery(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	engine, ok := e.srv.Config.Handler.(*gin.Engine)
	if !ok {
		t.Fatalf("handler is %T, not the gin engine", e.srv.Config.Handler)
	}
	declared := map[string]middleware.Accepted{"/v1": v1.QueryParams(), "/v2": v2.QueryParams()}
	// Required parameters, so that only the one under test is wrong.
	required := map[string]string{
		"GET /v1/transactions":            "bankConnectionId=" + w.connA1.String() + "&startDate=2026-03-01&endDate=2026-03-31",
		"GET /v1/holdings":                "bankConnectionId=" + w.connA1.String(),
		"GET /v1/investment-transactions": "bankConnectionId=" + w.connA1.String(),
	}
	walked := map[string]int{}
	for _, r := range engine.Routes() {
		prefix := r.Path[:min(3, len(r.Path))]
		accepted, versioned := declared[prefix]
		if !versioned || r.Path == prefix+"/health" {
			continue
		}
		walked[prefix]++
		op := r.Method + " " + openapiPath(strings.TrimPrefix(r.Path, prefix))
		names, ok := accepted[op]
		if !ok {
			t.Errorf("%s %s: no declared query parameters", r.Method, r.Path)
			continue
		}
		path := fillParams(r.Path)
		for _, q := range []string{"zzUnknown=1", required[r.Method+" "+r.Path] + "&zzUnknown=1"} {
			msg := e.refusal(e.do(r.Method, path+"?"+strings.TrimPrefix(q, "&"), key, nil))
			if !strings.HasPrefix(msg, `unknown query parameter "zzUnknown"; `) {
				t.Errorf("%s %s?%s: message %q", r.Method, r.Path, q, msg)
			}
		}
		if r.Method != http.MethodGet {
			continue
		}
		for _, name := range names {
			q := url.Values{}
			if base, ok := required[r.Method+" "+r.Path]; ok {
				q, _ = url.ParseQuery(base)
			}
			q.Set(name, "~not-a-value~")
			msg := e.refusal(e.get(path+"?"+q.Encode(), key))
			if !strings.HasPrefix(msg, name+": ") {
				t.Errorf("GET %s?%s: message %q, want it to name %s", r.Path, q.Encode(), msg, name)
			}
		}
	}
	// Version 1 has 6 routes besides its health check, version 2 more
	// than 25: the walk must not have missed the versions.
	if walked["/v1"] < 6 || walked["/v2"] < 25 {
		t.Fatalf("walked %v routes", walked)
	}
}

// openapiPath writes gin's /accounts/:accountId as /accounts/{accountId}.
func openapiPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// fillParams puts a fresh UUID in each path parameter.
func fillParams(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = uuid.NewString()
		}
	}
	return strings.Join(parts, "/")
}
