package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/finsync/finsync/api/openapi"
	"github.com/finsync/finsync/domain"
)

// openapiDocument renders one version's document for the given
// providers, as serve does.
func openapiDocument(version string, provs []domain.ProviderProfile) ([]byte, error) {
	if version == "v1" {
		return openapi.V1(provs)
	}
	return openapi.V2(provs)
}

func (a *app) openapiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "openapi v1|v2",
		Short: "Print the OpenAPI document of API v1 or v2",
		Long: `Print the OpenAPI 3.1 document of API v1 or v2, built for the providers this
binary registers: the bytes serve answers at /v1/openapi.json and
/v2/openapi.json. It needs no database. Generate a client from it, e.g.:

  go run ./cmd/finsync openapi v2 > v2.json
  go tool oapi-codegen -generate types,client -package finsync -o client.gen.go v2.json`,
		ValidArgs: []string{"v1", "v2"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(_ *cobra.Command, args []string) error {
			doc, err := openapiDocument(args[0], a.reg.Profiles())
			if err != nil {
				return err
			}
			_, err = a.out.Write(doc)
			if err != nil {
				return fmt.Errorf("write the %s document: %w", args[0], err)
			}
			return nil
		},
	}
}
