package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

// ruleCase is one rule body the API must refuse, and a part of the 400's
// message that names the limit; slug names its benchmark.
type ruleCase struct {
	name, body, want, slug string
}

// ruleBody is a rule document with the given conditions (a JSON array's
// items) that hides what it matches.
func ruleBody(conditions ...string) string {
	return `{"conditions":[` + strings.Join(conditions, ",") + `],"outcomes":[{"action":"hideTransaction","value":true}],"priority":10}`
}

// repeated is n copies of the condition c.
func repeated(n int, c string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// matchesCond is a matches condition on the summary.
func matchesCond(pattern string) string {
	p, _ := json.Marshal(pattern)
	return `{"field":"Summary","operator":"matches","value":` + string(p) + `}`
}

// ruleWorstCases are the security review's worst rule bodies: hundreds of
// conditions, counted repetitions, a 1 MiB body.
func ruleWorstCases() []ruleCase {
	contains := `{"field":"Summary","operator":"contains","value":"coffee"}`
	const perPattern = "regular expression is too complex: its compiled program would exceed 2000 instructions (the limit per pattern)"
	mib := ruleBody(repeated(1, contains)...)
	mib = mib[:len(mib)-1] + `,"pad":"` + strings.Repeat("x", 1<<20-len(mib)-10) + `"}`
	return []ruleCase{
		{"300 conditions", ruleBody(repeated(300, contains)...), "a rule has at most 50 conditions", "conditions_300"},
		{"300 matches conditions", ruleBody(repeated(300, matchesCond(`[a-z]{1,900}x`))...), "a rule has at most 50 conditions", "matches_300"},
		{"78 KB of matches conditions", ruleBody(repeated(1000, matchesCond(`(?i)\pL{1,1000}`))...), "a rule is at most 65536 bytes", "matches_78KB"},
		{"(a{1,1000}){1,1000}", ruleBody(matchesCond(`(a{1,1000}){1,1000}`)), perPattern, "nested_a1000"},
		{"((x{999}){999}){999}", ruleBody(matchesCond(`((x{999}){999}){999}`)), perPattern, "nested_x999"},
		{"(abc){1,999}", ruleBody(matchesCond(`(abc){1,999}`)), perPattern, "group_abc999"},
		{"50 large patterns", ruleBody(repeated(50, matchesCond(`[a-z]{1,900}x`))...), "exceed 5000 instructions (the limit per rule)", "patterns_50_large"},
		{"oneOf of 5000 values", ruleBody(`{"field":"Summary","operator":"oneOf","value":[` +
			strings.TrimSuffix(strings.Repeat(`"v",`, 5000), ",") + `]}`), "a oneOf condition has at most 100 values", "oneOf_5000"},
		{"1 MiB body", mib, "a rule is at most 65536 bytes", "body_1MiB"},
	}
}

// ruleRequest is an in-process request for a rule endpoint; chunked hides
// the body's length, as a streaming client does.
func ruleRequest(method, path, key, body string, chunked bool) *http.Request {
	var rd io.Reader = strings.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd)
	}
	req := httptest.NewRequest(method, path, rd)
	if chunked {
		req.ContentLength = -1
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// measured serves one request in process and returns the answer, its time
// and the bytes allocated meanwhile (by every goroutine of the process, so
// an upper bound of the request's own).
func measured(h http.Handler, req *http.Request) (*httptest.ResponseRecorder, time.Duration, uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return rec, took, after.TotalAlloc - before.TotalAlloc
}

// checkRuleRefused asserts a 400 BAD_REQUEST whose message contains want.
func checkRuleRefused(t *testing.T, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusBadRequest ||
		body.Error.Code != "BAD_REQUEST" || !strings.Contains(body.Error.Message, want) {
		t.Fatalf("status %d %s, want 400 BAD_REQUEST naming %q", rec.Code, rec.Body.Bytes(), want)
	}
}

// TestRuleWorstCasesAreRefusedCheaply sends the review's worst rule bodies
// to POST /v2/rules, POST /v2/rules/preview and PATCH /v2/rules/{id}
// through the real router and database: each answers 400 BAD_REQUEST
// naming the limit, allocating under 10 MB. Time is asserted with a wide
// margin only (the machine is shared); BenchmarkRuleWorstCase gives the
// figures.
func TestRuleWorstCasesAreRefusedCheaply(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	r := e.send(http.MethodPost, "/v2/rules", key, ruleBody(matchesCond(`(?i)coffee`)))
	e.expect(r, http.StatusCreated, "")
	id := r.json(t)["id"].(string)
	h := e.srv.Config.Handler
	endpoints := []struct{ method, path string }{
		{http.MethodPost, "/v2/rules"}, {http.MethodPost, "/v2/rules/preview"}, {http.MethodPatch, "/v2/rules/" + id},
	}
	for _, c := range ruleWorstCases() {
		for _, ep := range endpoints {
			for _, chunked := range []bool{false, true} {
				name := fmt.Sprintf("%s %s %s chunked=%v", ep.method, ep.path, c.name, chunked)
				var worst time.Duration
				var worstAlloc uint64
				for range 3 {
					rec, took, alloc := measured(h, ruleRequest(ep.method, ep.path, key, c.body, chunked))
					checkRuleRefused(t, rec, c.want)
					worst, worstAlloc = max(worst, took), max(worstAlloc, alloc)
				}
				t.Logf("%s: %v, %d KB", name, worst, worstAlloc>>10)
				if worstAlloc > 10<<20 {
					t.Errorf("%s: allocated %d bytes, want under 10 MB", name, worstAlloc)
				}
				if worst > time.Second {
					t.Errorf("%s: took %v", name, worst)
				}
			}
		}
	}
	// Over HTTP as well: the same answers, the envelope the document states.
	for _, c := range ruleWorstCases()[:4] {
		e.expect(e.send(http.MethodPost, "/v2/rules/preview", key, c.body), http.StatusBadRequest, "BAD_REQUEST")
	}
	// Nothing was stored or changed by the refused bodies.
	r = e.get("/v2/rules", key)
	if n := len(r.json(t)["rules"].([]any)); n != 1 {
		t.Fatalf("%d rules stored, want 1: %s", n, r.body)
	}
}

// BenchmarkRuleWorstCase measures the review's worst rule bodies against
// POST /v2/rules/preview and POST /v2/rules, in process through the real
// router and database: time and allocation per refused request.
func BenchmarkRuleWorstCase(b *testing.B) {
	pool, _ := storagetest.NewDB(b)
	fx := storagetest.NewFixtures(b, pool)
	a := api.MustNew(api.Config{Providers: all.NewRegistry().Profiles(), Store: storage.New(pool),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), CursorKey: []byte("test cursor key, 32 bytes long!!"),
		Auth: middleware.DefaultAuthConfig()})
	w := seedWorld(fx)
	key := fx.Key(w.a.ID, nil)
	h := a.Handler
	for _, c := range ruleWorstCases() {
		for _, path := range []string{"/v2/rules/preview", "/v2/rules"} {
			b.Run(strings.TrimPrefix(path, "/v2/")+"/"+c.slug, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, ruleRequest(http.MethodPost, path, key, c.body, false))
					if rec.Code != http.StatusBadRequest {
						b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
					}
				}
			})
		}
	}
}

// TestRulesPerUserLimit fills a user's rules up to rules.MaxRulesPerUser
// and checks that the next creation answers 400 naming the limit, on two
// API processes at once (the count is checked under a lock in the
// database), that archived rules do not count, and that another user is
// not affected.
func TestRulesPerUserLimit(t *testing.T) {
	f := newFleet(t)
	u1, _ := f.instance()
	u2, _ := f.instance()
	a, b := seedFleetUsers(f)
	ctx := context.Background()
	if _, err := f.pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority)
		SELECT $1, '[{"field":"Summary","operator":"is","value":"x"}]', '[{"action":"hideTransaction","value":true}]', 50
		FROM generate_series(1, $2)`, a.user, rules.MaxRulesPerUser-3); err != nil {
		t.Fatal(err)
	}
	body := ruleBody(`{"field":"Summary","operator":"contains","value":"coffee"}`)
	var (
		mu       sync.Mutex
		statuses []int
		wg       sync.WaitGroup
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := []string{u1, u2}[i%2]
			st, msg := postRule(t, base, a.key, body)
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, st)
			if st == http.StatusBadRequest && !strings.Contains(msg, fmt.Sprintf("at most %d active rules", rules.MaxRulesPerUser)) {
				t.Errorf("400 without the limit: %s", msg)
			}
		}()
	}
	wg.Wait()
	slices.Sort(statuses)
	if want := []int{201, 201, 201, 400, 400, 400, 400, 400, 400, 400}; !slices.Equal(statuses, want) {
		t.Fatalf("10 concurrent creations 3 below the limit on two processes: %v, want %v", statuses, want)
	}
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM rules WHERE user_id = $1 AND archived_at IS NULL`, a.user).Scan(&n); err != nil || n != rules.MaxRulesPerUser {
		t.Fatalf("%d active rules (%v), want %d", n, err, rules.MaxRulesPerUser)
	}
	// Another user is not affected; an archived rule frees a place.
	if st, msg := postRule(t, u1, b.key, body); st != http.StatusCreated {
		t.Fatalf("another user: %d %s", st, msg)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE rules SET archived_at = now() WHERE id = (SELECT id FROM rules WHERE user_id = $1 LIMIT 1)`, a.user); err != nil {
		t.Fatal(err)
	}
	if st, msg := postRule(t, u2, a.key, body); st != http.StatusCreated {
		t.Fatalf("after archiving one: %d %s", st, msg)
	}
}

// TestRuleInstsPerUserLimit gives a user stored rules whose regular
// expressions total 48,654 instructions (27 rules of (?:a*b){600}, 1,802
// each) and checks, through the real router on two API processes: of four
// concurrent creations of a 1,002-instruction rule (x{1000}) exactly one
// passes rules.MaxUserInsts (the total is checked under the user's lock in
// the database), the others answer 400 naming the limit; a rule without
// regular expressions is still accepted; a PATCH that raises the total
// past the limit is refused, one that keeps it is accepted; another user
// is not affected.
func TestRuleInstsPerUserLimit(t *testing.T) {
	f := newFleet(t)
	u1, _ := f.instance()
	u2, _ := f.instance()
	a, b := seedFleetUsers(f)
	ctx := context.Background()
	heavy := `[` + matchesCond(`(?:a*b){600}`) + `]`
	if _, err := f.pool.Exec(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority)
		SELECT $1, $2, '[{"action":"hideTransaction","value":true}]', 50
		FROM generate_series(1, 27)`, a.user, heavy); err != nil {
		t.Fatal(err)
	}
	var light, oneHeavy uuid.UUID
	if err := f.pool.QueryRow(ctx, `INSERT INTO rules (user_id, conditions, outcomes, priority)
		VALUES ($1, '[{"field":"Summary","operator":"is","value":"x"}]', '[{"action":"hideTransaction","value":true}]', 50)
		RETURNING id`, a.user).Scan(&light); err != nil {
		t.Fatal(err)
	}
	if err := f.pool.QueryRow(ctx, `SELECT id FROM rules WHERE user_id = $1 AND conditions::text LIKE '%matches%' LIMIT 1`,
		a.user).Scan(&oneHeavy); err != nil {
		t.Fatal(err)
	}
	limitMsg := fmt.Sprintf("at most %d instructions (the limit per user)", rules.MaxUserInsts)
	body := ruleBody(matchesCond(`x{1000}`))
	var (
		mu       sync.Mutex
		statuses []int
		wg       sync.WaitGroup
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, msg := postRule(t, []string{u1, u2}[i%2], a.key, body)
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, st)
			if st == http.StatusBadRequest && (!strings.Contains(msg, limitMsg) || !strings.Contains(msg, "BAD_REQUEST")) {
				t.Errorf("400 without the limit: %s", msg)
			}
		}()
	}
	wg.Wait()
	slices.Sort(statuses)
	if want := []int{201, 400, 400, 400}; !slices.Equal(statuses, want) {
		t.Fatalf("4 concurrent creations of 1,002 instructions 1,346 below the limit: %v, want %v", statuses, want)
	}
	if st, msg := postRule(t, u1, a.key, ruleBody(`{"field":"Summary","operator":"contains","value":"coffee"}`)); st != http.StatusCreated {
		t.Fatalf("a rule without regular expressions: %d %s", st, msg)
	}
	patch := func(id uuid.UUID, conditions string) (int, string) {
		return sendRule(t, http.MethodPatch, u2+"/v2/rules/"+id.String(), a.key, `{"conditions":[`+conditions+`]}`)
	}
	if st, msg := patch(light, matchesCond(`x{1000}`)); st != http.StatusBadRequest || !strings.Contains(msg, limitMsg) {
		t.Fatalf("a PATCH raising the total past the limit: %d %s", st, msg)
	}
	if st, msg := patch(oneHeavy, matchesCond(`(?:b*a){600}`)); st != http.StatusOK {
		t.Fatalf("a PATCH keeping the total: %d %s", st, msg)
	}
	if st, msg := postRule(t, u1, b.key, body); st != http.StatusCreated {
		t.Fatalf("another user: %d %s", st, msg)
	}
}

// sendRule sends a rule body with method to url and returns the status
// and body.
func sendRule(t *testing.T, method, url, key, body string) (int, string) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// fleetUser is a user of the fleet's database and an API key of theirs.
type fleetUser struct {
	user uuid.UUID
	key  string
}

func seedFleetUsers(f *fleet) (fleetUser, fleetUser) {
	w := seedWorld(f.fx)
	return fleetUser{w.a.ID, f.fx.Key(w.a.ID, nil)}, fleetUser{w.b.ID, f.fx.Key(w.b.ID, nil)}
}

// postRule posts a rule to one process and returns the status and body.
func postRule(t *testing.T, base, key, body string) (int, string) {
	return sendRule(t, http.MethodPost, base+"/v2/rules", key, body)
}
