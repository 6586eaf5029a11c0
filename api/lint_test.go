package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// lintProblem is one finding of either linter.
type lintProblem struct {
	linter, rule, severity, where, message string
}

func (p lintProblem) String() string {
	return fmt.Sprintf("%s %s %s at %s: %s", p.linter, p.severity, p.rule, p.where, p.message)
}

// lintConfigs are the linters' configuration files in toolsDir.
func lintConfigs() []string {
	return []string{"redocly.yaml", ".redocly.lint-ignore.yaml", ".spectral.yaml"}
}

// lintFolder writes the documents served for the registry's providers,
// v1.json and v2.json, into a temporary folder beside a copy of the
// linters' configuration (whose .redocly.lint-ignore.yaml names them by
// those paths, relative to itself), and returns the folder and the
// documents' names.
func lintFolder(t *testing.T, tools nodeTools) (dir string, docs []string) {
	t.Helper()
	dir = t.TempDir()
	for _, name := range lintConfigs() {
		data, err := os.ReadFile(filepath.Join(tools.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeRegistryDocs(t, dir)
	return dir, []string{"v1.json", "v2.json"}
}

// TestOpenAPIDocumentsLint runs `@redocly/cli lint` (recommended rules,
// redocly.yaml) and `@stoplight/spectral-cli lint` (spectral:oas,
// .spectral.yaml) over the v1 and v2 documents: both must report no
// error and no warning, nor any lesser finding. The one exception is in
// .redocly.lint-ignore.yaml, at the exact places it names and says why.
// To be sure the linters look at what matters, a copy of v2 stripped of
// an operation's description and tags and given an unused component must
// draw exactly those warnings.
func TestOpenAPIDocumentsLint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Node linters")
	}
	tools := needNodeTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	dir, docs := lintFolder(t, tools)
	problems := lint(ctx, t, tools, dir, docs)
	for _, p := range problems {
		t.Errorf("%s", p)
	}

	broken := brokenCopy(t, filepath.Join(dir, docs[1]))
	var rules []string
	for _, p := range lint(ctx, t, tools, dir, []string{broken}) {
		rules = append(rules, p.linter+" "+p.rule)
	}
	for _, want := range []string{
		"spectral operation-description", "spectral operation-tags", "spectral oas3-unused-component",
		"redocly no-unused-components",
	} {
		if !slices.Contains(rules, want) {
			t.Errorf("the linters missed %q in a broken copy of v2; they reported %q", want, rules)
		}
	}
}

// lint runs both linters in dir, which holds their configuration (see
// lintFolder), over docs (paths relative to dir, or absolute) and returns
// what they found.
func lint(ctx context.Context, t *testing.T, tools nodeTools, dir string, docs []string) []lintProblem {
	t.Helper()
	return append(redoclyLint(ctx, t, tools, dir, docs), spectralLint(ctx, t, tools, dir, docs)...)
}

// redoclyLint runs `redocly lint` with the checked-in configuration; it
// exits non-zero on errors, which the problems then list.
func redoclyLint(ctx context.Context, t *testing.T, tools nodeTools, dir string, docs []string) []lintProblem {
	t.Helper()
	args := append([]string{"lint", "--config", "redocly.yaml", "--format", "json", "--max-problems", "1000"}, docs...)
	out, runErr := tools.run(ctx, t, dir, true, "redocly", args...)
	// One JSON report per document, one after the other.
	dec := json.NewDecoder(bytes.NewReader(out))
	var problems []lintProblem
	reports := 0
	for {
		var report redoclyReport
		err := dec.Decode(&report)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || report.Totals == nil {
			t.Fatalf("redocly lint printed no report (exit: %v): %v\n%s", runErr, err, out)
		}
		reports++
		for _, p := range report.Problems {
			where := ""
			if len(p.Location) > 0 {
				where = filepath.Base(p.Location[0].Source.Ref) + p.Location[0].Pointer
			}
			problems = append(problems, lintProblem{"redocly", p.RuleID, p.Severity, where, p.Message})
		}
	}
	if reports != len(docs) {
		t.Fatalf("redocly lint printed %d reports for %d documents (exit: %v)\n%s", reports, len(docs), runErr, out)
	}
	if runErr != nil && len(problems) == 0 {
		t.Fatalf("redocly lint failed without problems: %v\n%s", runErr, out)
	}
	return problems
}

// redoclyReport is what `redocly lint --format json` prints for one
// document.
type redoclyReport struct {
	Totals *struct {
		Errors   int `json:"errors"`
		Warnings int `json:"warnings"`
	} `json:"totals"`
	Problems []struct {
		RuleID   string `json:"ruleId"`
		Severity string `json:"severity"`
		Message  string `json:"message"`
		Location []struct {
			Source  struct{ Ref string } `json:"source"`
			Pointer string               `json:"pointer"`
		} `json:"location"`
	} `json:"problems"`
}

// spectralLint runs `spectral lint` with the checked-in ruleset, failing
// on findings of any severity (which the results then list).
func spectralLint(ctx context.Context, t *testing.T, tools nodeTools, dir string, docs []string) []lintProblem {
	t.Helper()
	report := filepath.Join(t.TempDir(), "spectral.json")
	args := append([]string{"lint", "--ruleset", ".spectral.yaml", "--format", "json", "--output", report,
		"--fail-severity", "hint"}, docs...)
	out, runErr := tools.run(ctx, t, dir, true, "spectral", args...)
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("spectral lint wrote no report (exit: %v): %v\n%s", runErr, err, out)
	}
	var results []struct {
		Code     string `json:"code"`
		Message  string `json:"message"`
		Path     []any  `json:"path"`
		Severity int    `json:"severity"`
		Source   string `json:"source"`
	}
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatalf("decode spectral report: %v\n%s", err, data)
	}
	severities := []string{"error", "warning", "info", "hint"}
	var problems []lintProblem
	for _, r := range results {
		severity := fmt.Sprint(r.Severity)
		if r.Severity >= 0 && r.Severity < len(severities) {
			severity = severities[r.Severity]
		}
		where := filepath.Base(r.Source) + "#/" + strings.Trim(fmt.Sprint(r.Path), "[]")
		problems = append(problems, lintProblem{"spectral", r.Code, severity, where, r.Message})
	}
	if runErr != nil && len(problems) == 0 {
		t.Fatalf("spectral lint failed without results: %v\n%s", runErr, out)
	}
	return problems
}

// brokenCopy writes a copy of the document at path whose GET /me (or
// first) operation lacks its description and tags and whose components
// hold an unused schema, and returns the copy's path.
func brokenCopy(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	paths, _ := doc["paths"].(map[string]any)
	item, _ := paths["/me"].(map[string]any)
	op, _ := item["get"].(map[string]any)
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	if op == nil || schemas == nil {
		t.Fatalf("%s has no GET /me or no component schemas", path)
	}
	delete(op, "description")
	delete(op, "tags")
	schemas["NeverUsed"] = map[string]any{"type": "string"}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "broken.json")
	if err := os.WriteFile(broken, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return broken
}
