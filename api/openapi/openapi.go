// Package openapi embeds the OpenAPI 3.1 documents of finsync's API v1
// and v2, served at /v1/openapi.json and /v2/openapi.json.
//
// The JSON files are generated from package internal/spec; edit the
// builders there and run `go generate ./api/openapi`.
package openapi

import (
	"bytes"
	_ "embed"
)

// UnroutedExtension is the key, at the top of both documents, of the
// responses to requests that match no operation, keyed by status: "404"
// for a path the document does not list, "405" for a listed path asked
// with another method. OpenAPI has no place for responses of no
// operation, so they live in this extension rather than among the
// components (which linters rightly flag when no operation uses them);
// tools that do not know the extension ignore it.
const UnroutedExtension = "x-unrouted-responses"

//go:generate go run ./internal/gen .

//go:embed v1.json
var v1 []byte

//go:embed v2.json
var v2 []byte

// V1 returns the OpenAPI document of API v1 (a fresh copy).
func V1() []byte { return bytes.Clone(v1) }

// V2 returns the OpenAPI document of API v2 (a fresh copy).
func V2() []byte { return bytes.Clone(v2) }
