package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
)

// TestNextPageIgnoresHostAndForwardingHeaders: v1's nextPage links are
// built on the configured public URL (FINSYNC_PUBLIC_URL, here with a path
// prefix), whatever Host, X-Forwarded-Host, X-Forwarded-Proto or
// Forwarded a client sends, from a trusted proxy or not.
func TestNextPageIgnoresHostAndForwardingHeaders(t *testing.T) {
	t.Parallel()
	public := &url.URL{Scheme: "https", Host: "api.example.com", Path: "/finsync/"}
	e := newEnv(t, withTrustedProxies(netip.MustParsePrefix("127.0.0.2/32")), func(c *api.Config) { c.PublicURL = public })
	user := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(user.ID, nil)
	conn := e.fx.Connection(user.ID, "plaid", "active")
	acct := e.fx.Account(user.ID, conn, "plaid", "Brokerage")
	e.fx.Holding(user.ID, conn, acct, "AAPL")
	e.fx.Holding(user.ID, conn, acct, "MSFT")
	path := "/v1/holdings?limit=1&bankConnectionId=" + conn.String()
	want := "https://api.example.com/finsync/v1/holdings?bankConnectionId=" + conn.String() + "&cursor=1&limit=1"
	for _, peerAddr := range []string{"127.0.0.2", "127.0.0.3"} {
		for _, host := range []string{"", "evil.example", "evil.example:8443"} {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if host != "" {
				req.Host = host
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("X-Forwarded-Proto", "http")
			req.Header.Set("X-Forwarded-Host", "evil.example")
			req.Header.Set("Forwarded", "host=evil.example;proto=http")
			resp, err := e.peer(t, peerAddr).client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			var page struct {
				Meta struct {
					NextPage string `json:"nextPage"`
				} `json:"meta"`
			}
			if err != nil || json.Unmarshal(body, &page) != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("from %s, Host %q: %d %s", peerAddr, host, resp.StatusCode, body)
			}
			if page.Meta.NextPage != want {
				t.Errorf("from %s, Host %q: nextPage %q, want %q", peerAddr, host, page.Meta.NextPage, want)
			}
		}
	}
}
