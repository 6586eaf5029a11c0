package stripe_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/stripe"
)

// outflow tells a balance transaction's direction from its type.
func outflow(tx providers.Transaction) (bool, bool) {
	if tx.Type == nil {
		return false, false
	}
	switch *tx.Type {
	case "charge", "payment", "topup":
		return false, true
	case "payout", "refund", "stripe_fee", "payment_refund":
		return true, true
	}
	return false, false
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Provider:   stripe.Name,
		New:        func(c *http.Client) providers.Provider { return stripe.New(c) },
		LoginCodes: []string{"api_key_expired"},
		Outflow:    outflow,
	})
}
