package storage_test

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// driverInFace lists the exported names of storage whose signatures may
// name the driver's types, each with why. Everything else storage exports
// speaks in domain and storage types, so callers never see a pool or a
// transaction of the driver (docs/architecture.md).
var driverInFace = map[string]string{
	"Open":           "opens a pool for tests and the load tools that wrap it with New",
	"Options":        "Open's options, whose Tracer lets the sync benchmarks time statements",
	"New":            "wraps a pool the caller opened (tests, load tools); the service uses Connect",
	"NewWithReplica": "New with a replica, for tests that build their own pools",
	"NewReplica":     "a replica over pools the caller opened, for tests",
	"JobClient":      "River's client type: River is generic over the driver's transaction",
	"JobInserter":    "what River's client offers for enqueueing in a transaction",
}

// TestFaceNamesNoDriverType parses storage's non-test files and fails on
// any exported function, method, type or field whose declaration names a
// pgx type outside driverInFace.
func TestFaceNamesNoDriverType(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			found = append(found, driverNames(fset, d)...)
		}
	}
	sort.Strings(found)
	for _, n := range found {
		if _, ok := driverInFace[n]; !ok {
			t.Errorf("exported %s names a driver type: give callers a Store or Tx method instead", n)
		}
	}
	for n := range driverInFace {
		if !slices.Contains(found, n) {
			t.Errorf("driverInFace lists %s, which no longer names a driver type: remove it", n)
		}
	}
}

// driverNames returns the exported names declared by d whose exported
// parts mention pgx.
func driverNames(fset *token.FileSet, d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || (d.Recv != nil && !ast.IsExported(receiverType(fset, d.Recv))) {
			return nil
		}
		if mentionsDriver(fset, d.Type) {
			out = append(out, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			ts, ok := s.(*ast.TypeSpec)
			if !ok || !ts.Name.IsExported() {
				continue
			}
			st, isStruct := ts.Type.(*ast.StructType)
			if !isStruct {
				if mentionsDriver(fset, ts.Type) {
					out = append(out, ts.Name.Name)
				}
				continue
			}
			for _, field := range st.Fields.List {
				if exportedField(field) && mentionsDriver(fset, field.Type) {
					out = append(out, ts.Name.Name)
				}
			}
		}
	}
	return out
}

func receiverType(fset *token.FileSet, recv *ast.FieldList) string {
	s := render(fset, recv.List[0].Type)
	s = strings.TrimLeft(s, "*")
	return strings.SplitN(s, "[", 2)[0]
}

func exportedField(f *ast.Field) bool {
	if len(f.Names) == 0 {
		return true
	}
	for _, n := range f.Names {
		if n.IsExported() {
			return true
		}
	}
	return false
}

func mentionsDriver(fset *token.FileSet, n ast.Node) bool {
	s := render(fset, n)
	return strings.Contains(s, "pgx.") || strings.Contains(s, "pgxpool.") ||
		strings.Contains(s, "pgconn.") || strings.Contains(s, "pgtype.")
}

func render(fset *token.FileSet, n ast.Node) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, n); err != nil {
		return ""
	}
	return b.String()
}
