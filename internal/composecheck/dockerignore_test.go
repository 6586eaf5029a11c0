package composecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// listedPackage is the part of `go list -json` output the context check needs.
type listedPackage struct {
	Dir        string
	GoFiles    []string
	EmbedFiles []string
	Module     *struct{ Main bool }
}

// buildInputs lists, relative to root, every file of the module that
// `go build ./cmd/finsync` reads for linux: go.mod, go.sum, and the Go and
// embedded files of the module's own packages.
func buildInputs(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module", binaryPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var pkg listedPackage
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list: %w", err)
		}
		if pkg.Module == nil || !pkg.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, pkg.Dir)
		if err != nil {
			return nil, fmt.Errorf("package dir: %w", err)
		}
		for _, f := range slices.Concat(pkg.GoFiles, pkg.EmbedFiles) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	return files, nil
}

// checkDockerignore returns the build inputs the patterns would leave out
// of the build context, and the private paths they would let in.
func checkDockerignore(patterns, inputs, private []string) []string {
	var p problems
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		p.addf(".dockerignore: %v", err)
		return p
	}
	for _, f := range inputs {
		if excluded, err := pm.MatchesOrParentMatches(f); err != nil || excluded {
			p.addf("%s is needed by go build but excluded from the build context", f)
		}
	}
	for _, f := range private {
		if excluded, err := pm.MatchesOrParentMatches(f); err != nil || !excluded {
			p.addf("%s would be sent to the build context", f)
		}
	}
	return p
}

// privatePaths must never reach the image build context.
var privatePaths = []string{".git/config", ".finsync/pgdata/postgresql.conf", "bin/finsync", "finsync", "storage/storage.test"}

func readDockerignore(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), ".dockerignore"))
	if err != nil {
		t.Fatalf("open .dockerignore: %v", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatalf("read .dockerignore: %v", err)
	}
	return patterns
}

func repoBuildInputs(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	inputs, err := buildInputs(ctx, repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cmd/finsync/main.go", "migrations/migrations.go"} {
		if !slices.Contains(inputs, want) {
			t.Fatalf("build inputs lack %s: %q", want, inputs)
		}
	}
	return inputs
}

func TestDockerignore(t *testing.T) {
	reportProblems(t, ".dockerignore", checkDockerignore(readDockerignore(t), repoBuildInputs(t), privatePaths))
}

func TestDockerignoreChecksCatchMistakes(t *testing.T) {
	patterns, inputs := readDockerignore(t), repoBuildInputs(t)
	embedded := ""
	for _, f := range inputs {
		if strings.HasSuffix(f, ".sql") {
			embedded = f
			break
		}
	}
	if embedded == "" {
		t.Fatal("no embedded migration among the build inputs")
	}
	tests := []struct {
		name     string
		patterns []string
		want     string
	}{
		{"embedded migrations excluded", append(slices.Clone(patterns), "**/*.sql"), embedded + " is needed"},
		{"sources excluded", append(slices.Clone(patterns), "cmd"), "cmd/finsync/main.go is needed"},
		{"go.sum excluded", append(slices.Clone(patterns), "go.*"), "go.sum is needed"},
		{"git history sent", slices.DeleteFunc(slices.Clone(patterns), func(s string) bool { return s == ".git" }), ".git/config would be sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, checkDockerignore(tt.patterns, inputs, privatePaths), tt.want)
		})
	}
}
