package composecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
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

// goDirective returns the version in go.mod's `go` line.
func goDirective(gomod []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "go" {
			return fields[1], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read go.mod: %w", err)
	}
	return "", fmt.Errorf("go.mod has no go directive")
}

// repoGoVersion reads the go directive of the repository's go.mod.
func repoGoVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatalf("read go.mod: %v", err)
	}
	v, err := goDirective(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
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

func TestGoDirective(t *testing.T) {
	tests := []struct {
		name, gomod, want string
		wantErr           bool
	}{
		{name: "patch", gomod: "module x\n\ngo 1.26.8\n", want: "1.26.8"},
		{name: "minor", gomod: "module x\ngo 1.26\ntoolchain go1.26.8\n", want: "1.26"},
		{name: "missing", gomod: "module x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := goDirective([]byte(tt.gomod))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
