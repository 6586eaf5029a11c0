package gocardless_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/gocardless"
	"github.com/finsync/finsync/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Provider:   gocardless.Name,
		New:        func(c *http.Client) providers.Provider { return gocardless.New(c) },
		BaseURL:    func(root string) string { return root + "/api/v2" },
		LoginCodes: []string{"AccessExpiredError", "REQUISITION_EXPIRED"},
	})
}
