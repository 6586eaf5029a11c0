package doccheck

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// outsideRefs are text that names a place outside the repository: the
// folder beside the clone where the design and the API contracts once
// lived. Built by joining, so that this file does not match itself.
var outsideRefs = []string{
	".." + "/shared",
	"shared/" + "DESIGN.md",
	"shared/" + "spec/",
}

// checked reports whether a file's references are checked: Go sources,
// Markdown, the Makefile and the CI scripts.
func checked(name string) bool {
	return strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md") ||
		path.Base(name) == "Makefile" || strings.HasPrefix(name, ".ci/")
}

// linksMustResolve reports whether a Markdown file's relative links must
// reach existing files: every document but the notes kept with test data
// (which describe where upstream files came from).
func linksMustResolve(name string) bool {
	return strings.HasSuffix(name, ".md") && !strings.Contains("/"+name, "/testdata/")
}

// TestNothingPointsOutsideTheRepository fails when a tracked Go, Markdown,
// Makefile or CI file names a path outside the repository, or when a
// Markdown link climbs above the repository's root: a reader with only the
// clone must find everything the files cite.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	root := repoRoot(t)
	files := trackedFiles(t, root)
	n := 0
	for _, name := range files {
		if !checked(name) {
			continue
		}
		n++
		data := readFile(t, root, name)
		for _, ref := range outsideRefs {
			if i := bytes.Index(data, []byte(ref)); i >= 0 {
				t.Errorf("%s:%d names %q, outside the repository: cite the document inside it (docs/design.md, docs/api-v2.md, docs/api-v1.md)",
					name, lineOf(data, i), ref)
			}
		}
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, l := range markdownLinks(data) {
			target, ok := localTarget(l.target)
			if !ok || target == "" {
				continue
			}
			if escapes(name, target) {
				t.Errorf("%s:%d links to %q, which climbs out of the repository", name, l.line, l.target)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d files checked: the file list looks wrong", n)
	}
}

// TestDocumentationLinksResolve fails when a relative link in a Markdown
// document (README.md, docs/, providers/README.md, BENCHMARKS.md…) names a
// file that does not exist, or a heading (#anchor) that the
// linked Markdown file does not have.
func TestDocumentationLinksResolve(t *testing.T) {
	root := repoRoot(t)
	links := 0
	for _, name := range trackedFiles(t, root) {
		if !linksMustResolve(name) {
			continue
		}
		data := readFile(t, root, name)
		for _, l := range markdownLinks(data) {
			target, ok := localTarget(l.target)
			if !ok {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(target, "#")
			resolved := name
			if file != "" {
				resolved = path.Join(path.Dir(name), file)
				if escapes(name, file) {
					continue // reported by TestNothingPointsOutsideTheRepository
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err != nil {
					t.Errorf("%s:%d links to %q: %s does not exist", name, l.line, l.target, resolved)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !headingAnchors(readFile(t, root, resolved))[anchor] {
				t.Errorf("%s:%d links to %q: %s has no heading with anchor #%s", name, l.line, l.target, resolved, anchor)
			}
		}
	}
	if links < 20 {
		t.Fatalf("only %d links checked: the link parser looks wrong", links)
	}
}

// TestLinkParsing checks the parsing the two tests above rely on.
func TestLinkParsing(t *testing.T) {
	doc := []byte("See [a](docs/a.md) and [b](../b.md \"title\").\n" +
		"`[not](a/link.md)` and\n```\n[nor](this.md)\n```\n" +
		"[web](https://example.com/x) [mail](mailto:x@example.com) [top](#top) ![img](ops.png)\n" +
		"[ref]: sub/ref.md\n")
	var got []string
	for _, l := range markdownLinks(doc) {
		if target, ok := localTarget(l.target); ok {
			got = append(got, target)
		}
	}
	want := []string{"docs/a.md", "../b.md", "#top", "ops.png", "sub/ref.md"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("local targets = %q, want %q", got, want)
	}
	for _, c := range []struct {
		file, target string
		out          bool
	}{
		{"README.md", "docs/a.md", false},
		{"docs/a.md", "../README.md", false},
		{"docs/a.md", "../../elsewhere/design.md", true},
		{"README.md", "../x.md", true},
		{"docs/a.md", "../docs/../../x", true},
		{"docs/a.md", "/etc/passwd", true},
	} {
		if got := escapes(c.file, c.target); got != c.out {
			t.Errorf("escapes(%s, %s) = %v, want %v", c.file, c.target, got, c.out)
		}
	}
	anchors := headingAnchors([]byte("# Title\n## Held-back syncs\n### `GET /v2/x`: the one\n## Held-back syncs\n```\n# not a heading\n```\n"))
	for _, a := range []string{"title", "held-back-syncs", "get-v2x-the-one", "held-back-syncs-1"} {
		if !anchors[a] {
			t.Errorf("anchor %q missing from %v", a, anchors)
		}
	}
	if anchors["not-a-heading"] {
		t.Errorf("a line in a code block became a heading: %v", anchors)
	}
}

// repoRoot is the module's root directory, where go.mod is.
func repoRoot(t *testing.T) string {
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
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// trackedFiles lists the repository's files, slash-separated and relative
// to root: those git tracks or would add (not ignored), or, without git,
// every file outside hidden folders (but .ci) and node_modules.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			base := d.Name()
			if rel != "." && (base == "node_modules" || strings.HasPrefix(base, ".") && base != ".ci") {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("list the repository's files: %v", err)
	}
	return files
}

func readFile(t *testing.T, root, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // listed by git but deleted in the work tree
	}
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return data
}

// link is one Markdown link target and the line it is on.
type link struct {
	target string
	line   int
}

var (
	// inlineLink matches [text](target) and [text](target "title"),
	// images included; the text may hold one level of brackets.
	inlineLink = regexp.MustCompile(`\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refDefinition matches a reference definition, [label]: target.
	refDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	// codeSpan matches inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
)

// markdownLinks returns the link targets of a Markdown document, outside
// fenced code blocks and code spans.
func markdownLinks(data []byte) []link {
	var links []link
	inFence := false
	for i, line := range strings.Split(string(data), "\n") {
		if fence(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			links = append(links, link{m[1], i + 1})
			continue
		}
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, link{m[1], i + 1})
		}
	}
	return links
}

// fence reports whether a line opens or closes a fenced code block.
func fence(line string) bool {
	s := strings.TrimLeft(line, " ")
	return strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~")
}

// localTarget returns a link's target when it names a place in the
// repository (a relative path, a heading, or both), and false for a URL
// with a scheme (https:, mailto:).
func localTarget(target string) (string, bool) {
	if i := strings.IndexAny(target, ":/#?"); i > 0 && target[i] == ':' {
		return "", false
	}
	if strings.HasPrefix(target, "//") {
		return "", false
	}
	target, _, _ = strings.Cut(target, "?")
	return target, true
}

// escapes reports whether target, linked from the file name (both
// relative to the repository's root), lies outside the repository.
func escapes(name, target string) bool {
	file, _, _ := strings.Cut(target, "#")
	if strings.HasPrefix(file, "/") {
		return true
	}
	joined := path.Join(path.Dir(name), file)
	return joined == ".." || strings.HasPrefix(joined, "../")
}

// headingAnchors returns the anchors a Markdown renderer gives the ATX
// headings of a document (GitHub's rule: lower case, punctuation dropped,
// spaces to hyphens, repeats numbered -1, -2…).
func headingAnchors(data []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(data), "\n") {
		if fence(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		s := strings.TrimLeft(line, "#")
		if len(s) == len(line) || len(line)-len(s) > 6 || (s != "" && s[0] != ' ') {
			continue
		}
		slug := slugify(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "#")))
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// lineOf is the 1-based line of byte offset i.
func lineOf(data []byte, i int) int { return bytes.Count(data[:i], []byte("\n")) + 1 }
