package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	v2 "github.com/finsync/finsync/api/v2"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestHostileRequests sends every case hostile_cases_test.go derives from
// the OpenAPI documents (every operation of v1 and v2; every path and
// query parameter and body field made hostile in turn; whole bodies
// malformed or oversized) through the real router over HTTP, with a real
// key, against real PostgreSQL. Every response must be a 4xx or a
// success, never a 5xx, no handler may panic, and every response must
// follow its document (the env's client checks each one). Baselines must
// succeed, so that the variations start from a request that gets deep.
func TestHostileRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("sends thousands of requests")
	}
	logs := &logCounter{}
	e := newEnv(t, withPlans(v2.PlanLimits{domain.PlanPro: 1 << 30}), withWebhookKey(t), func(c *api.Config) { c.Log = slog.New(logs) })
	subjects := &subjectPool{e: e}
	main := subjects.next()
	statuses := map[int]int{}
	sent := 0
	check := func(c hostileCase, status int) {
		sent++
		statuses[status]++
		switch {
		case status >= 500:
			t.Errorf("%s [%s]: status %d", c.op, c.what, status)
		case c.baseline && status >= 300:
			t.Errorf("%s: the valid baseline request got %d", c.op, status)
		case c.want != 0 && status != c.want:
			t.Errorf("%s [%s]: status %d, want %d", c.op, c.what, status, c.want)
		case status < 200:
			t.Errorf("%s [%s]: status %d", c.op, c.what, status)
		}
	}
	var late []hostileCase // they spend the auth-failure budget
	v1doc, v2doc := registryDocs(t)
	for _, doc := range []struct {
		version string
		raw     []byte
	}{{"/v1", v1doc}, {"/v2", v2doc}} {
		parsed, err := openapi3.NewLoader().LoadFromData(doc.raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range operations(parsed, doc.version) {
			cases, current := casesFor(o, main.ids), main
			for i := range cases {
				if v1Hourly(o) {
					if s := subjects.forV1Hourly(o); s != current {
						cases, current = casesFor(o, s.ids), s
					}
				}
				c, key := cases[i], current.key
				check(c, e.sendCase(t, c, key))
			}
			if !v1Hourly(o) {
				late = append(late, requestCases(o, main.ids)...)
			}
		}
	}
	for _, c := range late {
		check(c, e.sendCase(t, c, main.key))
	}
	if n := logs.count("panic"); n > 0 {
		t.Errorf("%d handler panics", n)
	}
	codes := make([]int, 0, len(statuses))
	for s := range statuses {
		codes = append(codes, s)
	}
	sort.Ints(codes)
	var b strings.Builder
	for _, s := range codes {
		fmt.Fprintf(&b, " %d×%d", statuses[s], s)
	}
	t.Logf("%d hostile requests:%s; %d panics", sent, b.String(), logs.count("panic"))
}

// v1Hourly reports whether the operation has v1's 50-per-hour budget.
func v1Hourly(o operation) bool {
	if o.version != "/v1" {
		return false
	}
	switch o.path {
	case "/transactions", "/holdings", "/investment-transactions":
		return true
	}
	return false
}

// subject is a user with a key and a little data of each kind.
type subject struct {
	key string
	ids ownIDs
}

// subjectPool hands out subjects; v1's hourly endpoints get a fresh one
// every 45 requests, so that its budget of 50 never hides a case behind
// a 429.
type subjectPool struct {
	e       *env
	hourly  map[string]*subject
	counted map[string]int
}

func (p *subjectPool) next() *subject {
	fx := p.e.fx
	u := fx.User(domain.PlanPro, true)
	s := &subject{key: fx.Key(u.ID, nil)}
	s.ids.connection = fx.Connection(u.ID, "plaid", "active")
	s.ids.account = fx.Account(u.ID, s.ids.connection, "plaid", "Checking")
	s.ids.category = fx.Category(u.ID, "Coffee", "Food")
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s.ids.transaction = fx.Transactions(u.ID, s.ids.connection, s.ids.account, "plaid",
		[]storagetest.Tx{{Date: day, CategoryID: &s.ids.category}, {Date: day.AddDate(0, 0, 1)}})[0]
	s.ids.outflow, s.ids.inflow, s.ids.transfer = seedTransferIDs(p.e.t, fx, u.ID, s.ids.connection, s.ids.account)
	fx.Holding(u.ID, s.ids.connection, s.ids.account, "AAPL")
	fx.InvestmentTransaction(u.ID, s.ids.connection, s.ids.account, day)
	r := p.e.send(http.MethodPost, "/v2/accounts", s.key, `{"name":"Cash","type":"cash","currency":"USD"}`)
	p.e.expect(r, http.StatusCreated, "")
	s.ids.manualAccount = mustUUID(p.e.t, object(p.e.t, r, "account")["id"])
	r = p.e.send(http.MethodPost, "/v2/rules", s.key, `{"priority":1,"conditions":[{"field":"Summary","operator":"contains",
		"value":"tea"}],"outcomes":[{"action":"hideTransaction","value":true}]}`)
	p.e.expect(r, http.StatusCreated, "")
	s.ids.rule = mustUUID(p.e.t, object(p.e.t, r, "")["id"])
	r = p.e.send(http.MethodPost, "/v2/webhooks", s.key, `{"url":"https://hooks.example.com/h","events":["sync.completed"]}`)
	p.e.expect(r, http.StatusCreated, "")
	s.ids.webhook = mustUUID(p.e.t, object(p.e.t, r, "webhook")["id"])
	return s
}

// forV1Hourly returns the subject for the next request to an hourly v1
// operation.
func (p *subjectPool) forV1Hourly(o operation) *subject {
	if p.hourly == nil {
		p.hourly, p.counted = map[string]*subject{}, map[string]int{}
	}
	s := p.hourly[o.path]
	if s == nil || p.counted[o.path] >= 45 {
		s = p.next()
		p.hourly[o.path], p.counted[o.path] = s, 0
	}
	p.counted[o.path]++
	return s
}

// sendCase sends one case and returns the status. Requests whose path does
// not decode are refused by net/http before any handler, in plain text; they
// go over a raw connection and only their status is checked.
func (e *env) sendCase(t *testing.T, c hostileCase, key string) int {
	t.Helper()
	if strings.Contains(c.rawPath, "%zz") {
		return e.rawRequest(t, c, key)
	}
	u := e.srv.URL + c.rawPath
	if c.rawQuery != "" {
		u += "?" + c.rawQuery
	}
	var body io.Reader
	if c.hasBody {
		body = bytes.NewReader(c.body)
		if c.chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), c.method, u, body)
	if err != nil {
		t.Fatalf("%s [%s]: %v", c.op, c.what, err)
	}
	switch c.authorization {
	case "":
		req.Header.Set("Authorization", "Bearer "+key)
	case "-":
	default:
		req.Header.Set("Authorization", c.authorization)
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s [%s]: %v", c.op, c.what, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// rawRequest writes the request line as is over a fresh connection.
func (e *env) rawRequest(t *testing.T, c hostileCase, key string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	target := c.rawPath
	if c.rawQuery != "" {
		target += "?" + c.rawQuery
	}
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", c.method, target, key, len(c.body), c.body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s [%s]: %v", c.op, c.what, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("%s [%s]: an undecodable path got %d, want 400", c.op, c.what, resp.StatusCode)
	}
	return resp.StatusCode
}

// logCounter is a slog handler counting records by message.
type logCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[r.Message]++
	return nil
}

func (l *logCounter) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[msg]
}

// mustUUID parses a JSON id.
func mustUUID(t testing.TB, v any) uuid.UUID {
	t.Helper()
	s, _ := v.(string)
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatalf("id %v: %v", v, err)
	}
	return id
}

// seedTransferIDs gives the user a savings account beside account, a
// detected transfer from account to it, and an outflow and an inflow too
// far apart to be detected, which a POST /v2/transfers may pair.
func seedTransferIDs(t *testing.T, fx *storagetest.Fixtures, user, conn, account uuid.UUID) (outflow, inflow, transfer uuid.UUID) {
	t.Helper()
	savings := fx.Account(user, conn, "plaid", "Savings")
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	outs := fx.Transactions(user, conn, account, "plaid", []storagetest.Tx{
		{Date: day, Amount: "-50.00", Summary: "TRANSFER TO SAVINGS"},
		{Date: day, Amount: "-75.00", Summary: "ONE"},
	})
	ins := fx.Transactions(user, conn, savings, "plaid", []storagetest.Tx{
		{Date: day, Amount: "50.00", Summary: "TRANSFER FROM CHECKING"},
		{Date: day.AddDate(0, 0, 30), Amount: "75.00", Summary: "TWO"},
	})
	ctx := context.Background()
	if n, err := fx.St.DetectTransfers(ctx, user, append(outs, ins...)); err != nil || n != 1 {
		t.Fatalf("detect transfers: %d, %v", n, err)
	}
	trs, err := fx.St.ListTransfers(ctx, storage.Scope{UserID: user}, storage.TransferFilter{}, storage.Keyset{}, 10)
	if err != nil || len(trs) != 1 {
		t.Fatalf("transfers: %v, %v", trs, err)
	}
	return outs[1], ins[1], trs[0].ID
}
