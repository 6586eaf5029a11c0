package layers

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/finsync/finsync/"

// allowed maps a package (by the longest matching path prefix) to the
// project packages it may import, by prefix. A package may always import
// its own subtree. Test files are not checked.
var allowed = []struct {
	pkg   string
	may   []string
	about string
}{
	{"domain", nil, "every layer's records; imports no layer"},
	{"migrations", nil, "embedded SQL"},
	{"jobargs", []string{"domain"}, "River job arguments, shared by api and worker"},
	{"secrets", []string{"domain"}, "sealing credentials"},
	{"internal", []string{"domain"}, "small shared helpers"},
	{"rules", []string{"domain", "internal"}, "the pure rule engine"},
	{"resilience", []string{"domain"}, "the guard of every outbound call"},
	// rules is pure (no I/O), so storage may apply it to stored rows and
	// turn a rule's prefilter into SQL.
	{"storage", []string{"domain", "migrations", "rules"}, "the only place with SQL"},
	{"providers", []string{"domain", "resilience", "internal"}, "the adapters and their simulators"},
	{"destinations", []string{"domain", "resilience", "internal"}, "delivery of manual-account changes"},
	{"api", []string{"domain", "storage", "rules", "jobargs", "internal"}, "the HTTP API"},
	{"worker", []string{"domain", "storage", "providers", "resilience", "rules", "destinations", "secrets", "jobargs", "internal"}, "River jobs"},
	// linking seals credentials and calls a provider (an exchange, a
	// check): never under api, which cmd hands it to as a func.
	{"linking", []string{"domain", "storage", "providers", "secrets", "jobargs"}, "putting credentials on connections"},
	{"linking/credinput", nil, "credentials as an operator gives them on the command line"},
	// The packages below assemble what cmd/finsync runs; only cmd and the
	// packages above them in this list import them.
	{"config", []string{"domain", "storage", "secrets", "api", "internal"}, "the configuration, parsed once"},
	{"useradmin", []string{"domain", "storage"}, "an operator's input for users and their API credentials"},
	{"servicekeys", []string{"domain", "storage", "secrets", "api"}, "making and rotating the fleet's shared keys"},
	{"syncwait", []string{"domain", "storage", "worker"}, "following enqueued syncs to their end"},
	{"process", []string{"domain", "config", "api", "worker", "storage", "providers", "linking", "secrets", "rules", "destinations", "internal"},
		"assembling serve and worker processes"},
	{"demo", []string{"domain", "config", "process", "syncwait", "servicekeys", "api", "worker", "storage", "providers", "destinations",
		"linking", "secrets", "internal"}, "the zero-config demo (finsync dev)"},
	{"cmd", []string{""}, "the binary wires everything"},
	{"bench", []string{""}, "load-test tools"},
	{"fleet", []string{""}, "the multi-process test"},
}

// rule returns the entry governing pkg (relative to the module).
func rule(pkg string) (may []string, ok bool) {
	best := -1
	for i, r := range allowed {
		if (pkg == r.pkg || strings.HasPrefix(pkg, r.pkg+"/")) && (best < 0 || len(r.pkg) > len(allowed[best].pkg)) {
			best = i
		}
	}
	if best < 0 {
		return nil, false
	}
	may = allowed[best].may
	// A narrower entry adds to its parent's.
	for _, r := range allowed {
		if r.pkg != allowed[best].pkg && strings.HasPrefix(allowed[best].pkg, r.pkg+"/") {
			may = append(may, r.may...)
		}
	}
	return may, true
}

func permitted(pkg, imp string, may []string) bool {
	top := strings.SplitN(pkg, "/", 2)[0]
	if imp == top || strings.HasPrefix(imp, top+"/") {
		return true
	}
	for _, m := range may {
		if m == "" || imp == m || strings.HasPrefix(imp, m+"/") {
			return true
		}
	}
	return false
}

// TestImportsFlowOneWay lists every package's non-test imports with
// `go list` and fails on an import against the direction, or on a package
// no entry governs.
func TestImportsFlowOneWay(t *testing.T) {
	checked := 0
	for pkg, imports := range packageImports(t, module+"...") {
		may, ok := rule(pkg)
		if !ok {
			t.Errorf("%s: no layer governs this package; add it to the table", pkg)
			continue
		}
		checked++
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if imp = strings.TrimPrefix(imp, module); !permitted(pkg, imp, may) {
				t.Errorf("%s imports %s, against the one direction imports flow (docs/architecture.md)", pkg, imp)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d packages checked", checked)
	}
}

// packageImports lists, with `go list`, the non-test imports of the
// packages matching the patterns, by package path relative to the module.
func packageImports(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkgs[strings.TrimPrefix(f[0], module)] = f[1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

func TestTheRuleCatchesAnImportAgainstTheDirection(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		ok       bool
	}{
		{"storage", "api/v2", false},
		{"storage", "rules", true},
		{"rules", "storage", false},
		{"providers/plaid", "storage", false},
		{"api/v2", "worker", false},
		{"domain", "rules", false},
		{"worker", "api", false},
		{"api/v2", "storage", true},
		{"worker", "providers", true},
		{"providers/plaid", "providers/internal/wire", true},
		// The OpenAPI documents list the providers they are handed
		// (api.Config.Providers), never the registry itself.
		{"api/openapi", "providers/all", false},
		{"api/openapi/internal/spec", "providers", false},
		{"api/openapi", "api/openapi/internal/spec", true},
		{"cmd/finsync", "worker", true},
		// The configuration and the process assembly sit just below the
		// binary: no layer they build imports them.
		{"worker", "config", false},
		{"api", "process", false},
		{"storage", "config", false},
		{"config", "process", false},
		{"process", "demo", false},
		{"syncwait", "process", false},
		{"demo", "process", true},
		{"process", "config", true},
		{"linking/credinput", "linking", true},
		{"linking/credinput", "worker", false},
	} {
		may, ok := rule(c.pkg)
		if !ok {
			t.Fatalf("%s governed by nothing", c.pkg)
		}
		if got := permitted(c.pkg, c.imp, may); got != c.ok {
			t.Errorf("%s -> %s: permitted %v, want %v", c.pkg, c.imp, got, c.ok)
		}
	}
}
