package gocardless

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/finsync/finsync/providers/internal/wire"
)

// Quota header names, as GoCardless sends them (client libraries read
// exactly these), with the conventional dashed form as a fallback.
var (
	accountRemainingHeaders = []string{"HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_REMAINING", "X-RateLimit-Account-Success-Remaining"}
	accountResetHeaders     = []string{"HTTP_X_RATELIMIT_ACCOUNT_SUCCESS_RESET", "X-RateLimit-Account-Success-Reset"}
	resetHeaders            = []string{"HTTP_X_RATELIMIT_RESET", "X-RateLimit-Reset"}
)

// Endpoints with a per-account daily quota.
const (
	endpointDetails      = "details"
	endpointBalances     = "balances"
	endpointTransactions = "transactions"
)

// quota is what a bank lets us spend on one account and endpoint: the
// successful calls left and when the count resets.
type quota struct {
	Remaining int   `json:"r"`
	Reset     int64 `json:"t"` // Unix seconds
}

// exhausted reports that no call can be made before the reset.
func (q quota) exhausted(now time.Time) bool {
	return q.Remaining <= 0 && now.Unix() < q.Reset
}

// resetTime is when the quota resets.
func (q quota) resetTime() time.Time { return time.Unix(q.Reset, 0).UTC() }

func header(h http.Header, names []string) string {
	for _, n := range names {
		if v := strings.TrimSpace(h.Get(n)); v != "" {
			return v
		}
		if vs := h[n]; len(vs) > 0 && vs[0] != "" {
			return strings.TrimSpace(vs[0])
		}
	}
	return ""
}

// readQuota reads the per-account quota headers of a response.
func readQuota(h http.Header, now time.Time) (quota, bool) {
	rem, err1 := strconv.Atoi(header(h, accountRemainingHeaders))
	reset, err2 := strconv.ParseInt(header(h, accountResetHeaders), 10, 64)
	if err1 != nil || err2 != nil {
		return quota{}, false
	}
	return quota{Remaining: rem, Reset: now.Add(time.Duration(reset) * time.Second).Unix()}, true
}

// rateLimitReset is how long a 429 asks us to wait: the account quota's
// reset, else the API limit's reset, else Retry-After, else a minute.
func rateLimitReset(h http.Header, now time.Time) time.Duration {
	for _, names := range [][]string{accountResetHeaders, resetHeaders} {
		if n, err := strconv.ParseInt(header(h, names), 10, 64); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
	}
	return wire.RetryAfter(h, now, time.Minute)
}

// quotaFor returns what is known of an account endpoint's quota, in the
// store every worker shares. A store that cannot be read knows nothing:
// the call is made and the bank's answer decides.
func (a *Adapter) quotaFor(ctx context.Context, accountID, endpoint string) (quota, bool) {
	rem, reset, ok, err := a.quotas.GetProviderQuota(ctx, name, accountID, endpoint)
	if err != nil || !ok {
		return quota{}, false
	}
	return quota{Remaining: rem, Reset: reset.Unix()}, true
}

// noteQuota records the quota a response reports (or a 429 implies). A
// store that cannot be written loses the note; the bank still refuses a
// call it cannot afford, and that refusal is noted next time.
func (a *Adapter) noteQuota(ctx context.Context, accountID, endpoint string, q quota) {
	_ = a.quotas.NoteProviderQuota(ctx, name, accountID, endpoint, q.Remaining, q.resetTime())
}

// observe records the quota headers of resp, if any, and returns them. A
// 429 with no quota headers marks the endpoint spent until its reset.
func (a *Adapter) observe(ctx context.Context, accountID, endpoint string, resp *wire.Response) (quota, bool) {
	if resp == nil {
		return quota{}, false
	}
	now := a.now()
	q, ok := readQuota(resp.Header, now)
	if !ok && resp.Status == http.StatusTooManyRequests {
		q, ok = quota{Remaining: 0, Reset: now.Add(rateLimitReset(resp.Header, now)).Unix()}, true
	}
	if ok {
		a.noteQuota(ctx, accountID, endpoint, q)
	}
	return q, ok
}
