package spec

import (
	"slices"
	"testing"
)

// TestOperationsAreDescribedAndTagged holds every operation of both
// documents to what the linters ask (api/lint_test.go runs them): a
// description, and exactly one tag that the document lists.
func TestOperationsAreDescribedAndTagged(t *testing.T) {
	docs := []struct {
		name   string
		routes []route
		tags   []tag
	}{
		{"v1", v1Routes(), v1Tags()},
		{"v2", v2Routes(), v2Tags()},
	}
	for _, d := range docs {
		listed := make([]string, len(d.tags))
		for i, tg := range d.tags {
			listed[i] = tg.name
			if tg.desc == "" {
				t.Errorf("%s: tag %q has no description", d.name, tg.name)
			}
		}
		used := map[string]bool{}
		for _, r := range d.routes {
			where := d.name + " " + r.method + " " + r.path
			if r.op.desc == "" {
				t.Errorf("%s: no description", where)
			}
			if len(r.op.tags) != 1 || !slices.Contains(listed, r.op.tags[0]) {
				t.Errorf("%s: tags %q, want one of %q", where, r.op.tags, listed)
				continue
			}
			used[r.op.tags[0]] = true
		}
		for _, name := range listed {
			if !used[name] {
				t.Errorf("%s: tag %q tags no operation", d.name, name)
			}
		}
	}
}
