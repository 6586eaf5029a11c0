package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/domain"
)

func withTrustedProxies(p ...netip.Prefix) envOption {
	return func(c *api.Config) { c.TrustedProxies = p }
}

// failureBurst is the auth-failure budget of these tests: a burst of 5,
// refilled at one a minute, so that no token comes back mid-test.
const failureBurst = 5

func withSlowFailureRefill() envOption {
	return func(c *api.Config) { c.Auth.FailuresPerMinute, c.Auth.FailureBurst = 1, failureBurst }
}

// peer is a client whose connections come from one loopback address (any
// 127.0.0.0/8 address is local on Linux), standing for one machine.
type peer struct {
	e      *env
	client *http.Client
}

func (e *env) peer(t *testing.T, local string) peer {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	base := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	v1, v2 := registryValidators(t)
	return peer{e: e, client: &http.Client{Transport: versionTransport{v1: v1.Transport(t, base), v2: v2.Transport(t, base)}}}
}

// get sends GET path with the key and, when forwarded is not "", an
// X-Forwarded-For header; it returns the status.
func (p peer) get(t *testing.T, path, key, forwarded string) int {
	t.Helper()
	h := http.Header{}
	if forwarded != "" {
		h.Set("X-Forwarded-For", forwarded)
	}
	status, _ := p.getWith(t, path, key, h)
	return status
}

// getWith sends GET path with the key and the extra headers; it returns
// the status and the body.
func (p peer) getWith(t *testing.T, path, key string, extra http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, p.e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = extra.Clone()
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

const badKey = "fin_0123456789abcdefghijABCDEFGHIJ0123456789"

// spend sends bad keys from p until the auth-failure throttle answers 429,
// rotating X-Forwarded-For through forwarded(i); it returns how many were
// answered 401 first, failing after twice the burst.
func spend(t *testing.T, p peer, forwarded func(i int) string) int {
	t.Helper()
	for i := 0; i < 2*failureBurst; i++ {
		switch st := p.get(t, "/v1/accounts", badKey, forwarded(i)); st {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			return i
		default:
			t.Fatalf("bad key %d: status %d", i, st)
		}
	}
	t.Fatalf("%d bad keys were never throttled", 2*failureBurst)
	return 0
}

// TestForwardedForIsIgnoredFromUntrustedPeers: with no trusted proxy (the
// default), rotating X-Forwarded-For does not escape the auth-failure
// throttle, and naming a victim's address does not lock the victim out.
func TestForwardedForIsIgnoredFromUntrustedPeers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withSlowFailureRefill())
	user := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(user.ID, nil)
	attacker, victim := e.peer(t, "127.0.0.2"), e.peer(t, "127.0.0.3")

	n := spend(t, attacker, func(i int) string { return "127.0.0.3, 198.51.100." + strconv.Itoa(i) })
	if n != failureBurst {
		t.Fatalf("throttled after %d failures, want the burst of %d", n, failureBurst)
	}
	if st := attacker.get(t, "/v2/me", badKey, "127.0.0.3"); st != http.StatusTooManyRequests {
		t.Fatalf("the throttled peer naming another address got %d, want 429", st)
	}
	// A valid key is not refused for its address's failures.
	if st := attacker.get(t, "/v2/me", key, "127.0.0.3"); st != http.StatusOK {
		t.Fatalf("a valid key from the throttled peer got %d, want 200", st)
	}
	if st := victim.get(t, "/v2/me", key, ""); st != http.StatusOK {
		t.Fatalf("the victim whose address the attacker sent got %d, want 200", st)
	}
}

// TestForwardedForFromTrustedProxy: when the peer is a configured trusted
// proxy, the client address is the one X-Forwarded-For names.
func TestForwardedForFromTrustedProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withSlowFailureRefill(), withTrustedProxies(netip.MustParsePrefix("127.0.0.2/32")))
	user := e.fx.User(domain.PlanPro, true)
	key := e.fx.Key(user.ID, nil)
	proxy, direct := e.peer(t, "127.0.0.2"), e.peer(t, "127.0.0.3")

	spend(t, proxy, func(int) string { return "198.51.100.1" })
	if st := proxy.get(t, "/v2/me", badKey, "198.51.100.1"); st != http.StatusTooManyRequests {
		t.Fatalf("the throttled client behind the proxy got %d, want 429", st)
	}
	if st := proxy.get(t, "/v2/me", key, "198.51.100.1"); st != http.StatusOK {
		t.Fatalf("a valid key of the throttled client behind the proxy got %d, want 200", st)
	}
	if st := proxy.get(t, "/v2/me", key, "198.51.100.2"); st != http.StatusOK {
		t.Fatalf("another client behind the proxy got %d, want 200", st)
	}
	if st := direct.get(t, "/v2/me", key, "198.51.100.1"); st != http.StatusOK {
		t.Fatalf("an untrusted peer naming the throttled address got %d, want 200", st)
	}
}
