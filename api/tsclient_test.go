package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptClientsListTransactions generates TypeScript types from the
// v1 and v2 documents with openapi-typescript, type-checks a program using
// them through openapi-fetch with tsc (strict), compiles it and runs it
// with node against the real router over HTTP on PostgreSQL: it must read
// exactly the seeded transactions, in the API's order, and a typed error.
// The packages are the ones pinned in testdata/openapitools (needNodeTools).
func TestTypeScriptClientsListTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and compiles a TypeScript client")
	}
	tools := needNodeTools(t)
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := tsClientFolder(t, tools)
	v1Doc, v2Doc := writeRegistryDocs(t, t.TempDir())
	for v, doc := range map[string]string{"v1": v1Doc, "v2": v2Doc} {
		tools.run(ctx, t, build, false, "openapi-typescript", doc, "-o", filepath.Join(build, v+".ts"))
	}
	tools.run(ctx, t, build, false, "tsc", "-p", "tsconfig.json", "--noEmit")
	tools.run(ctx, t, build, false, "tsc", "-p", "tsconfig.json")
	out := runNode(ctx, t, build, filepath.Join("dist", "client.js"), e.srv.URL, key, w.connA1.String())
	t.Logf("client output:\n%s", out)

	var got2, got1 []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "v2" && f[1] != "error":
			got2 = append(got2, f[1])
		case len(f) == 2 && f[0] == "v1":
			got1 = append(got1, f[1])
		}
	}
	// v2 lists posted, unhidden transactions newest first, walked in
	// pages of two with pageInfo.nextCursor.
	want2 := []string{w.txA2[1].String(), w.txA2[0].String(), w.txA1[4].String(), w.txA1[0].String()}
	if !slices.Equal(got2, want2) {
		t.Fatalf("v2 client read %v, want %v\n%s", got2, want2, out)
	}
	for _, line := range []string{"v2 " + w.txA1[0].String() + " -4.50", "v2 " + w.txA1[4].String() + " 1000.10", "v2 error 404 NOT_FOUND"} {
		if !strings.Contains(out, line+"\n") {
			t.Fatalf("output lacks %q:\n%s", line, out)
		}
	}
	// v1, walked in pages of two through meta.nextPage, must read what a
	// single page read over plain HTTP holds.
	raw := e.get("/v1/transactions?bankConnectionId="+w.connA1.String()+"&startDate=2026-03-01&endDate=2026-03-31&limit=250", key)
	want1 := v1IDs(t, v1Rows(t, raw, "transactions"))
	if len(want1) < 3 || !slices.Equal(got1, want1) {
		t.Fatalf("v1 client read %v, want %v\n%s", got1, want1, out)
	}
	if want := fmt.Sprintf("count v2 %d v1 %d\n", len(want2), len(want1)); !strings.Contains(out, want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}

// tsClientFolder prepares a build folder for the TypeScript program: its
// source and tsconfig.json from toolsDir, an ES module package.json, and
// node_modules linked to the pinned packages.
func tsClientFolder(t *testing.T, tools nodeTools) string {
	t.Helper()
	build := t.TempDir()
	for _, name := range []string{"client.ts", "tsconfig.json"} {
		data, err := os.ReadFile(filepath.Join(tools.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(build, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(build, "package.json"), []byte(`{"private": true, "type": "module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tools.modules, filepath.Join(build, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return build
}

// runNode runs a compiled script with node in wd and returns its output.
func runNode(ctx context.Context, t *testing.T, wd, script string, args ...string) string {
	t.Helper()
	cmd := execNode(ctx, wd, script, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	return string(out)
}
