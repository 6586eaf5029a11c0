package stripesim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// webhookSecret is the signing secret of the simulated Connect webhook
// endpoint (the webhook_secret setting).
func webhookSecret() string {
	return "whsec_" + string(simkit.AppendAlnum(nil, simkit.HashString(0x5eed, Name, "webhook"), 32))
}

// Settings returns the provider settings the simulator accepts: the
// Connect endpoint's signing secret, which Credentials carries too.
func (Sim) Settings() json.RawMessage {
	return simkit.MustJSON(map[string]string{"webhook_secret": webhookSecret()})
}

// notifier sends one simulator's Stripe events to the URL set with POST
// /_sim/webhooks, as a Connect endpoint receives them: a balance.available
// event for every connected account whose balance was read, each time the
// clock advances, signed with Stripe-Signature (t=…,v1=HMAC-SHA256 of
// "t.body" with the endpoint's secret).
type notifier struct {
	h  *sim.Simulator
	mu sync.Mutex
	// accounts are the connected accounts whose balance was read, with
	// their connection keys.
	accounts map[string]*stripeConn
}

// seen records a connected account whose balance was read.
func (n *notifier) seen(c *stripeConn) {
	if c.account == "" {
		return
	}
	n.mu.Lock()
	n.accounts[c.account] = c
	n.mu.Unlock()
}

// changed sends balance.available for every account as the clock advances.
func (n *notifier) changed(s *server, c sim.Change) {
	if c.Days == 0 || n.h.WebhookURL(Name) == "" {
		return
	}
	n.mu.Lock()
	conns := make([]*stripeConn, 0, len(n.accounts))
	for _, sc := range n.accounts {
		conns = append(conns, sc)
	}
	n.mu.Unlock()
	for _, sc := range conns {
		body, err := json.Marshal(map[string]any{
			"id": "evt_" + string(simkit.AppendAlnum(nil, simkit.Hash2(sc.seed, uint64(n.h.Clock())), 24)), "object": "event",
			"api_version": "2026-07-29.dahlia", "created": n.h.Now().Unix(), "type": "balance.available",
			"account": sc.account, "livemode": sc.live, "pending_webhooks": 1,
			"request": map[string]any{"id": nil, "idempotency_key": nil},
			"data":    map[string]any{"object": s.balanceOf(sc)},
		})
		if err != nil {
			continue
		}
		n.h.Notify(Name, body, func(b []byte, now time.Time) http.Header {
			ts := strconv.FormatInt(now.Unix(), 10)
			return http.Header{"Stripe-Signature": {"t=" + ts + ",v1=" + sign(webhookSecret(), ts, b)}}
		})
	}
}

// sign is the v1 value of Stripe-Signature: the hex HMAC-SHA256 of
// "ts.body" with secret.
func sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
