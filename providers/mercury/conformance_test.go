package mercury_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/mercury"
	"github.com/finsync/finsync/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Suite{
		Provider:   mercury.Name,
		New:        func(c *http.Client) providers.Provider { return mercury.New(c) },
		BaseURL:    func(root string) string { return root + "/api/v1" },
		LoginCodes: []string{"UNAUTHORIZED"},
	})
}
