// Package openapi renders the OpenAPI 3.1 documents of finsync's API v1
// and v2, served at /v1/openapi.json and /v2/openapi.json.
//
// The documents are built, by the builders of package internal/spec, from
// the providers they are given: the API passes the registry's profiles
// (api.Config.Providers) and renders both once when it is assembled, so a
// provider added to the registry shows in the documents' Provider enums
// with no file to regenerate. `finsync openapi v1|v2` prints them.
package openapi

import (
	"errors"
	"fmt"

	"github.com/finsync/finsync/api/openapi/internal/spec"
	"github.com/finsync/finsync/domain"
)

// UnroutedExtension is the key, at the top of both documents, of the
// responses to requests that match no operation, keyed by status: "404"
// for a path the document does not list, "405" for a listed path asked
// with another method. OpenAPI has no place for responses of no
// operation, so they live in this extension rather than among the
// components (which linters rightly flag when no operation uses them);
// tools that do not know the extension ignore it.
const UnroutedExtension = spec.UnroutedExtension

// ErrorCodesExtension is the key, on each response with the error
// envelope, of the codes its error.code takes there (the one Error schema
// both documents share lists every code of the version); tools that do
// not know it ignore it, and the response's description says the same.
const ErrorCodesExtension = spec.ErrorCodesExtension

// ErrorFieldsExtension is the key, on a response whose envelope always
// carries an optional field of the Error schema (retryAfter on v2's 429),
// of those fields.
const ErrorFieldsExtension = spec.ErrorFieldsExtension

// ErrorMessagesExtension is the key, on a v1 response whose body is the
// middleware's {error, requestId} (one MiddlewareError schema for all of
// them), of the messages its error takes there.
const ErrorMessagesExtension = spec.ErrorMessagesExtension

// V1 renders the OpenAPI document of API v1 for provs (the registry's
// profiles, in its order): its Provider enum lists their v1 names, then
// Manual. Each call renders a new document, so callers that serve it
// render it once. It fails when provs cannot make a valid enum (a name
// empty, or two providers with the same v1 name or named like Manual) or
// the document cannot be encoded.
func V1(provs []domain.ProviderProfile) ([]byte, error) {
	return render("v1", spec.V1Providers(provs), spec.V1(provs))
}

// V2 renders the OpenAPI document of API v2 for provs (the registry's
// profiles, in its order): its Provider enum lists their names, then
// manual. Each call renders a new document, so callers that serve it
// render it once. It fails when provs cannot make a valid enum (a name
// empty, repeated or manual) or the document cannot be encoded.
func V2(provs []domain.ProviderProfile) ([]byte, error) {
	return render("v2", spec.V2Providers(provs), spec.V2(provs))
}

// render checks the Provider enum of a document and encodes the document.
func render(version string, providers []string, doc spec.Obj) ([]byte, error) {
	if err := distinctNames(providers); err != nil {
		return nil, fmt.Errorf("openapi %s: Provider enum: %w", version, err)
	}
	data, err := spec.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi %s: %w", version, err)
	}
	return data, nil
}

// distinctNames fails on an empty or repeated name: JSON Schema wants an
// enum's values unique, and an empty provider name names nothing.
func distinctNames(names []string) error {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" {
			return errors.New("an empty provider name")
		}
		if seen[n] {
			return fmt.Errorf("provider name %q twice", n)
		}
		seen[n] = true
	}
	return nil
}
