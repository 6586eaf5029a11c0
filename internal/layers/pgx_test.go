package layers

import (
	"strings"
	"testing"
)

// pgxPrefix is the PostgreSQL driver's module: only storage (and the
// load-test and multi-process tools) may import it.
const pgxPrefix = "github.com/jackc/pgx/v5"

// driverAllowed are the package trees that may import the driver, each
// with its reason.
var driverAllowed = map[string]string{
	"storage": "the only place with SQL, pools and transactions",
	"bench":   "load-test tools with their own naive handler and seeding",
}

// TestOnlyStorageImportsTheDriver lists the non-test imports of every
// package and fails on one of the driver's packages (pgx, pgxpool, pgconn,
// pgtype...) outside the trees of driverAllowed: SQL, pools and
// transactions stay in storage (docs/architecture.md); the API, the CLI
// and the worker (River included) reach the database through
// *storage.Store and *storage.Tx.
func TestOnlyStorageImportsTheDriver(t *testing.T) {
	checked := 0
	for pkg, imports := range packageImports(t, module+"...") {
		checked++
		top := strings.SplitN(pkg, "/", 2)[0]
		if _, ok := driverAllowed[top]; ok {
			continue
		}
		for _, imp := range imports {
			if driverImport(imp) {
				t.Errorf("%s imports %s: SQL and the driver belong in storage; add a storage method instead", pkg, imp)
			}
		}
	}
	if checked < 20 {
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
