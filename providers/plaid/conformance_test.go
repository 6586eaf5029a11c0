package plaid_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/plaid"
	"github.com/finsync/finsync/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Provider:        plaid.Name,
		New:             func(c *http.Client) providers.Provider { return plaid.New(c) },
		LoginCodes:      []string{"ITEM_LOGIN_REQUIRED"},
		Investments:     true,
		InstitutionDown: true,
		Mutation:        true,
	})
}
