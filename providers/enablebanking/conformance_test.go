package enablebanking_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/enablebanking"
	"github.com/finsync/finsync/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Provider:   enablebanking.Name,
		New:        func(c *http.Client) providers.Provider { return enablebanking.New(providers.Deps{HTTPClient: c}) },
		BaseURL:    func(root string) string { return root + "/enablebanking" },
		LoginCodes: []string{"EXPIRED_SESSION"},
	})
}
