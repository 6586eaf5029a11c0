package all_test

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/finsync/finsync/providers/all"
)

// allowedOutside are the folders (relative to the module root, with a
// trailing slash) whose non-test Go files may name a provider, besides
// each provider's own providers/<name>/ and the test files anywhere.
var allowedOutside = map[string]string{
	"providers/all/":       "the registration files: one line per adapter (all.go) and per simulator (allsim)",
	"bench/seed/":          "benchmark seed data",
	"storage/storagetest/": "test database helper and fixtures",
}

// TestNoProviderNamedOutsideItsPackage enforces that the core never asks
// "which provider?": outside the folders above, no non-test Go file has an
// identifier containing a provider's name, nor a string literal naming one
// as a word (import paths of adapters included). Comments may name them.
func TestNoProviderNamedOutsideItsPackage(t *testing.T) {
	root := moduleRoot(t)
	names := map[string]bool{}
	// The adapter folders on disk, not only the registry, so that a name
	// cannot slip out of the check by slipping out of the registry.
	for _, n := range adapterFolders(t) {
		names[n] = true
	}
	for _, n := range all.NewRegistry().Names() {
		names[strings.ToLower(n)] = true
	}
	var words []string
	for n := range names {
		words = append(words, regexp.QuoteMeta(n))
	}
	inString := regexp.MustCompile(`(?i)\b(` + strings.Join(words, "|") + `)\b`)

	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if allowedDir(rel+"/", names) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, hit := range providerMentions(src, names, inString) {
			t.Errorf("%s:%s names a provider (%s); declare it in the adapter's Description instead", rel, hit.pos, hit.text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s: the walk missed the source tree", checked, root)
	}
}

// TestProviderMentionsFindsANameInTheWorker checks the checker itself: a
// worker file comparing against "plaid", or an identifier built on a
// provider's name, is found; a comment is not.
func TestProviderMentionsFindsANameInTheWorker(t *testing.T) {
	names := map[string]bool{"plaid": true, "gocardless": true}
	inString := regexp.MustCompile(`(?i)\b(plaid|gocardless)\b`)
	src := []byte(`package worker

// A comment may say Plaid.
func f(p string) bool { return p == "plaid" }

const GoCardlessSyncInterval = 8
var explained = "plaidish words do not count"
`)
	hits := providerMentions(src, names, inString)
	if len(hits) != 2 || hits[0].text != `"plaid"` || hits[1].text != "GoCardlessSyncInterval" {
		t.Fatalf("hits = %+v, want the string \"plaid\" and GoCardlessSyncInterval", hits)
	}
}

func allowedDir(rel string, names map[string]bool) bool {
	if _, ok := allowedOutside[rel]; ok {
		return true
	}
	if rest, ok := strings.CutPrefix(rel, "providers/"); ok {
		first, _, _ := strings.Cut(rest, "/")
		return names[strings.ToLower(first)]
	}
	return false
}

type mention struct {
	pos  string
	text string
}

// providerMentions scans Go source (comments skipped) for identifiers
// containing a provider's name and string literals naming one as a word.
func providerMentions(src []byte, names map[string]bool, inString *regexp.Regexp) []mention {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var out []mention
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		hit := false
		switch tok {
		case token.IDENT:
			low := strings.ToLower(lit)
			for n := range names {
				if strings.Contains(low, n) {
					hit = true
				}
			}
		case token.STRING, token.CHAR:
			hit = inString.MatchString(lit)
		}
		if hit {
			p := fset.Position(pos)
			out = append(out, mention{pos: strings.TrimPrefix(p.String(), ":"), text: lit})
		}
	}
}

// moduleRoot is the folder holding go.mod, found upward from the test's
// working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}
