package netguard_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/internal/netguard"
)

// TestDescribeSaysWhatFailedInGeneralTerms makes real calls that fail in
// each way and checks the message an owner is shown: the class of failure,
// never an address or a resolver, and the same words for a name that does
// not resolve and one resolving to a refused address.
func TestDescribeSaysWhatFailedInGeneralTerms(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Second) }))
	defer slow.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer hangUp.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/hook"
	closed.Close()
	port := slow.URL[strings.LastIndex(slow.URL, ":"):]

	deny, allow := netguard.Policy{}, netguard.Policy{AllowPrivate: true}
	cases := []struct {
		name   string
		policy netguard.Policy
		url    string
		want   string
	}{
		{"literal loopback, IPv4-compatible form", deny, "https://[::127.0.0.1]" + port + "/hook?token=x", netguard.MsgRefusedAddress},
		{"literal metadata", deny, "http://169.254.169.254/latest", netguard.MsgRefusedAddress},
		{"name resolving to loopback", deny, "http://localhost" + port + "/hook", netguard.MsgUnresolved},
		{"name not resolving", deny, "https://no-such-host.invalid/hook", netguard.MsgUnresolved},
		{"connection refused", allow, closedURL, netguard.MsgConnectionRefused},
		{"timeout", allow, slow.URL + "/hook", netguard.MsgTimeout},
		{"untrusted certificate", allow, tlsSrv.URL + "/hook", netguard.MsgTLS},
		{"connection closed", allow, hangUp.URL + "/hook", netguard.MsgConnectionReset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Only the timeout case waits less than the slow server; the
			// others get time enough on a loaded machine.
			timeout := 10 * time.Second
			if c.want == netguard.MsgTimeout {
				timeout = 300 * time.Millisecond
			}
			resp, err := c.policy.Client(timeout).Post(c.url, "application/json", strings.NewReader("{}"))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("status %d, want a failure", resp.StatusCode)
			}
			if got := netguard.Describe(c.url, err); got != c.want {
				t.Errorf("Describe(%v) = %q, want %q", err, got, c.want)
			}
			permanent := netguard.PermanentRefusal(c.url, err)
			if permanent != (c.want == netguard.MsgRefusedAddress) {
				t.Errorf("PermanentRefusal = %v for %q", permanent, c.want)
			}
		})
	}
	if got := netguard.StatusMessage(500); got != "HTTP status 500" {
		t.Errorf("StatusMessage(500) = %q", got)
	}
	if got := netguard.StatusMessage(307); got != "HTTP status 307: redirects are not followed" {
		t.Errorf("StatusMessage(307) = %q", got)
	}
}

func TestRedactURLKeepsSchemeHostAndPathOnly(t *testing.T) {
	cases := map[string]string{
		"https://hooks.example.com/in/abc?token=s3cret#frag":    "https://hooks.example.com/in/abc",
		"https://user:pw@hooks.example.com:8443/x?sig=1":        "https://hooks.example.com:8443/x",
		"https://[2001:db8::1]:8443/a%2Fb?k=v":                  "https://[2001:db8::1]:8443/a%2Fb",
		"https://hooks.example.com":                             "https://hooks.example.com",
		"https://hooks.example.com/?":                           "https://hooks.example.com/",
		"http://hooks.example.com/path;params?token=s3cret":     "http://hooks.example.com/path;params",
		"://no scheme?token=s3cret":                             "(unparseable URL)",
		"https://hooks.example.com/%zz?token=s3cret":            "(unparseable URL)",
		"https://hooks.example.com/hook?token=s3cret&other=two": "https://hooks.example.com/hook",
	}
	for in, want := range cases {
		if got := netguard.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedactErrorDropsTheQueryAndKeepsTheCause: the client's error for a
// refused URL names it without its token, and still unwraps to the
// refusal.
func TestRedactErrorDropsTheQueryAndKeepsTheCause(t *testing.T) {
	_, err := netguard.Policy{}.Client(time.Second).Get("http://localhost:1/hook?token=s3cret")
	if err == nil {
		t.Fatal("no error")
	}
	red := netguard.RedactError(err)
	if strings.Contains(red.Error(), "s3cret") || !strings.Contains(red.Error(), "http://localhost:1/hook") {
		t.Errorf("redacted error %q", red)
	}
	if !errors.Is(red, netguard.ErrRefused) {
		t.Errorf("redacted error %v lost its cause", red)
	}
	plain := errors.New("no URL here")
	if netguard.RedactError(plain) != plain {
		t.Error("an error without a URL was changed")
	}
}
