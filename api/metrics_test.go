package api_test

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
)

func withMetrics(reg prometheus.Registerer) envOption {
	return func(c *api.Config) { c.Metrics = reg }
}

// seriesCount is the number of series the registry exports: one per label
// set of every family.
func seriesCount(t *testing.T, reg *prometheus.Registry) (int, map[string]bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n, methods := 0, map[string]bool{}
	for _, mf := range mfs {
		n += len(mf.GetMetric())
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					methods[l.GetValue()] = true
				}
			}
		}
	}
	return n, methods
}

// randomToken is a random HTTP token (a valid method) of 1 to 12 letters
// and digits, upper or lower case.
func randomToken(r *rand.Rand) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 1+r.IntN(12))
	for i := range b {
		b[i] = chars[r.IntN(len(chars))]
	}
	return string(b)
}

// TestMetricSeriesBoundedUnderInventedMethodsAndPaths sends one request of
// each kind (known route, unknown path, a route with another method, an
// invented method; with and without a key), counts the series, then sends
// hundreds of random methods and paths of the same kinds: the count does
// not move, and no label holds a method outside the standard set.
func TestMetricSeriesBoundedUnderInventedMethodsAndPaths(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, withMetrics(reg))
	user := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(user.ID, nil)
	send := func(method, path, key string) {
		t.Helper()
		req, err := http.NewRequest(method, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s: status %d", method, path, resp.StatusCode)
		}
	}
	// Route templates with a parameter, unknown paths of each version and
	// outside them, a known path with another standard method.
	kinds := func(r *rand.Rand, method, k string) {
		send(method, "/v2/me", k)
		send(method, "/v2/accounts/"+randomToken(r), k)
		send(method, "/v2/"+randomToken(r), k)
		send(method, "/v1/"+randomToken(r)+"/"+randomToken(r), k)
		send(method, "/"+randomToken(r), k)
	}
	r := rand.New(rand.NewPCG(22, 4))
	for _, k := range []string{"", key} {
		for _, m := range []string{http.MethodGet, http.MethodDelete, "INVENTED"} {
			kinds(r, m, k)
		}
	}
	before, _ := seriesCount(t, reg)
	for i := 0; i < 300; i++ {
		m := randomToken(r)
		if i%3 == 0 {
			m = strings.ToLower(http.MethodGet) // methods are case-sensitive: "get" is not GET
		}
		k := ""
		if i%2 == 0 {
			k = key
		}
		kinds(r, m, k)
	}
	after, methods := seriesCount(t, reg)
	t.Logf("%d series after one request of each kind, %d after 1,500 more with random methods and paths", before, after)
	if after != before {
		t.Fatalf("series grew from %d to %d under invented methods and paths", before, after)
	}
	for m := range methods {
		switch m {
		case http.MethodGet, http.MethodDelete, "OTHER":
		default:
			t.Errorf("method label %q", m)
		}
	}
}
