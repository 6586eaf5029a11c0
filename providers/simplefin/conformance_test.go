package simplefin_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/providertest"
	"github.com/finsync/finsync/providers/simplefin"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Provider:   simplefin.Name,
		New:        func(c *http.Client) providers.Provider { return simplefin.New(c) },
		BaseURL:    func(root string) string { return root + "/simplefin" },
		LoginCodes: []string{"FORBIDDEN"},
	})
}
