package layers

import (
	"strings"
	"testing"
)

// pgxPrefix is the PostgreSQL driver's module: only storage (and the
// load-test and multi-process tools) may import it.
const pgxPrefix = "github.com/jackc/pgx/v5"

// pgxAllowed names the packages under api/ and cmd/ that may still import
// the driver, each with its reason. It is empty: storage is their one face
// to the database.
var pgxAllowed = map[string]string{}

// TestAPIAndCLINeverImportTheDriver lists the non-test imports of every
// package under api/ and cmd/ and fails on one of the driver's packages
// (pgx, pgxpool, pgconn, pgtype...): SQL, pools and transactions stay in
// storage (docs/architecture.md).
func TestAPIAndCLINeverImportTheDriver(t *testing.T) {
	checked := 0
	for pkg, imports := range packageImports(t, module+"api/...", module+"cmd/...") {
		checked++
		for _, imp := range imports {
			if !driverImport(imp) {
				continue
			}
			if _, ok := pgxAllowed[pkg]; !ok {
				t.Errorf("%s imports %s: SQL and the driver belong in storage; add a storage method instead", pkg, imp)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d packages checked", checked)
	}
}

// driverImport reports whether imp is one of the driver's packages.
func driverImport(imp string) bool {
	return imp == pgxPrefix || strings.HasPrefix(imp, pgxPrefix+"/")
}

func TestTheDriverCheckKnowsTheDriver(t *testing.T) {
	for imp, want := range map[string]bool{
		"github.com/jackc/pgx/v5":            true,
		"github.com/jackc/pgx/v5/pgxpool":    true,
		"github.com/jackc/pgx/v5/pgconn":     true,
		"github.com/jackc/pgx/v5/pgtype":     true,
		"github.com/jackc/pgx/v5extra":       false,
		"github.com/riverqueue/river":        false,
		"github.com/finsync/finsync/storage": false,
	} {
		if got := driverImport(imp); got != want {
			t.Errorf("driverImport(%s) = %v, want %v", imp, got, want)
		}
	}
}
