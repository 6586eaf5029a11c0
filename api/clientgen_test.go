package api_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	// The generated clients import the runtime: importing it here keeps
	// its version pinned in go.mod and the module in the cache the client
	// program builds from.
	_ "github.com/oapi-codegen/runtime/types"
)

// TestGeneratedClientsListTransactions generates Go clients from the v1 and
// v2 documents with the oapi-codegen pinned in go.mod (go tool), compiles a
// small program using both, and runs it against the real router over HTTP
// on PostgreSQL: it must read exactly the seeded transactions. The first
// run builds the generator, which takes a while.
func TestGeneratedClientsListTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds oapi-codegen and a client program")
	}
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	goCmd := func(wd string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}

	runtimeVersion := strings.TrimSpace(goCmd(root, "list", "-m", "-f", "{{.Version}}", "github.com/oapi-codegen/runtime"))
	v1Doc, v2Doc := writeRegistryDocs(t, t.TempDir())
	for v, doc := range map[string]string{"v1": v1Doc, "v2": v2Doc} {
		pkgDir := filepath.Join(dir, v+"client")
		if err := os.MkdirAll(pkgDir, 0o755); err != nil {
			t.Fatal(err)
		}
		gen := filepath.Join(pkgDir, "client.gen.go")
		goCmd(root, "tool", "oapi-codegen", "-generate", "types,client", "-package", v+"client", "-o", gen, doc)
		// One error type: every response with the error envelope is the
		// Error schema, so the generator makes it once and aliases it.
		if got := envelopeTypes(t, gen); !slices.Equal(got, []string{"Error"}) {
			t.Errorf("%s client: error envelope types %q, want only Error", v, got)
		}
		// v1's middleware answers its own {error, requestId} shape, one
		// type for all of them.
		if want := map[string][]string{"v1": {"MiddlewareError"}, "v2": nil}[v]; !slices.Equal(middlewareTypes(t, gen), want) {
			t.Errorf("%s client: middleware error types %q, want %q", v, middlewareTypes(t, gen), want)
		}
	}
	program, err := os.ReadFile(filepath.Join("testdata", "clientgen", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"main.go": program,
		"go.mod":  fmt.Appendf(nil, "module clientcheck\n\ngo 1.24\n\nrequire github.com/oapi-codegen/runtime %s\n", runtimeVersion),
		"go.sum":  sum,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "clientcheck")
	goCmd(dir, "build", "-o", bin, ".")

	cmd := exec.CommandContext(ctx, bin, e.srv.URL, key, w.connA1.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client program: %v\n%s", err, out)
	}
	var got2, got1 []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "v2":
			got2 = append(got2, f[1])
		case len(f) == 2 && f[0] == "v1":
			got1 = append(got1, f[1])
		}
	}
	// v2 lists posted, unhidden transactions by default; the pages of two
	// are walked with the generated cursor parameter.
	want2 := []string{w.txA1[0].String(), w.txA1[4].String(), w.txA2[0].String(), w.txA2[1].String()}
	slices.Sort(got2)
	slices.Sort(want2)
	if !slices.Equal(got2, want2) {
		t.Fatalf("v2 client read %v, want %v\n%s", got2, want2, out)
	}
	if !strings.Contains(string(out), "v2 "+w.txA1[0].String()+" -4.50") {
		t.Fatalf("v2 amount not decoded as -4.50:\n%s", out)
	}
	// v1 must agree with the same listing read over plain HTTP.
	raw := e.get("/v1/transactions?bankConnectionId="+w.connA1.String()+"&startDate=2026-03-01&endDate=2026-03-31", key)
	want1 := v1IDs(t, v1Rows(t, raw, "transactions"))
	slices.Sort(got1)
	slices.Sort(want1)
	if len(want1) == 0 || !slices.Equal(got1, want1) {
		t.Fatalf("v1 client read %v, want %v\n%s", got1, want1, out)
	}
	if want := fmt.Sprintf("count v2 %d v1 %d", len(want2), len(want1)); !strings.Contains(string(out), want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}

// envelopeTypes are the types a generated client declares (aliases aside)
// for the error envelope: structs with an Error field that is the
// ErrorDetail type or a struct of its own (a narrowed copy of the
// envelope), sorted.
func envelopeTypes(t *testing.T, path string) []string {
	return structsWithField(t, path, func(f *ast.Field) bool {
		if len(f.Names) != 1 || f.Names[0].Name != "Error" {
			return false
		}
		switch ft := f.Type.(type) {
		case *ast.StructType:
			return true
		case *ast.Ident:
			return ft.Name == "ErrorDetail"
		}
		return false
	})
}

// middlewareTypes are the types a generated client declares (aliases
// aside) for v1's middleware error body: structs with a RequestId field,
// sorted.
func middlewareTypes(t *testing.T, path string) []string {
	return structsWithField(t, path, func(f *ast.Field) bool {
		return len(f.Names) == 1 && f.Names[0].Name == "RequestId"
	})
}

// structsWithField lists, sorted, the struct types (aliases aside)
// declared in the Go file at path that have a field match accepts.
func structsWithField(t *testing.T, path string, match func(*ast.Field) bool) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var out []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if ts.Assign.IsValid() || !ok {
				continue
			}
			if slices.ContainsFunc(st.Fields.List, match) {
				out = append(out, ts.Name.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}
