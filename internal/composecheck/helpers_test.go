package composecheck

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("repo root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repo root %s has no go.mod: %v", root, err)
	}
	return root
}

// repoGoVersion returns the version in go.mod's go directive, read by the go
// command itself (`go mod edit -json`).
func repoGoVersion(t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "edit", "-json")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct{ Go string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("decode go mod edit -json: %v", err)
	}
	if mod.Go == "" {
		t.Fatal("go.mod has no go directive")
	}
	return mod.Go
}

// problems collects what a check found wrong.
type problems []string

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// reportProblems fails t with every problem found.
func reportProblems(t *testing.T, what string, found []string) {
	t.Helper()
	for _, p := range found {
		t.Errorf("%s: %s", what, p)
	}
}

// wantProblem fails t unless one of found contains want.
func wantProblem(t *testing.T, found []string, want string) {
	t.Helper()
	for _, p := range found {
		if strings.Contains(p, want) {
			return
		}
	}
	t.Errorf("want a problem containing %q, got %q", want, found)
}
