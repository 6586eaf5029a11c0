// Package migrations holds finsync's SQL schema migrations, embedded in the
// binary and applied with goose (River's own tables are migrated separately
// by rivermigrate; see storage.Migrate).
package migrations

import "embed"

// FS holds the goose migration files.
//
//go:embed *.sql
var FS embed.FS
