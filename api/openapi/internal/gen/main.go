// Command gen writes finsync's OpenAPI documents (v1.json, v2.json) into
// the directory given as its only argument (default: the current one).
// As a command it may import the adapters' registry (providers/all), which
// the api packages themselves never do.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/finsync/finsync/api/openapi/internal/spec"
	"github.com/finsync/finsync/providers/all"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	// The provider enums list what the registry holds, in its order.
	provs := all.NewRegistry().Profiles()
	docs := []struct {
		name string
		doc  spec.Obj
	}{
		{"v1.json", spec.V1(provs)},
		{"v2.json", spec.V2(provs)},
	}
	for _, d := range docs {
		data, err := spec.Marshal(d.doc)
		if err != nil {
			return fmt.Errorf("render %s: %w", d.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, d.name), data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", d.name, err)
		}
	}
	return nil
}
