package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toolsDir holds the pinned Node packages (package.json, package-lock.json)
// the OpenAPI client and lint tests run, and their configuration.
const toolsDir = "testdata/openapitools"

// requireNodeToolsEnv, set to 1 (as .ci/run does), turns a missing Node.js
// or a failed install of the pinned packages into a test failure instead
// of a skip.
const requireNodeToolsEnv = "FINSYNC_REQUIRE_NODE_TOOLS"

// nodeBins are the executables of node_modules/.bin the tests run.
func nodeBins() []string { return []string{"openapi-typescript", "tsc", "redocly", "spectral"} }

// nodeTools is where the pinned packages are installed.
type nodeTools struct {
	// dir is toolsDir as an absolute path: the configuration files.
	dir string
	// modules is the node_modules folder holding the packages.
	modules string
}

// bin is the path of an executable of the packages.
func (n nodeTools) bin(name string) string { return filepath.Join(n.modules, ".bin", name) }

// run runs an executable of the packages in wd and returns its standard
// output; it fails t, quoting both outputs, when the command fails and
// mayFail is false.
func (n nodeTools) run(ctx context.Context, t *testing.T, wd string, mayFail bool, name string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, n.bin(name), args...)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(),
		"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_UPDATE_NOTIFIER=1", "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && !mayFail {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes(), err
}

// needNodeTools returns the pinned Node packages: those of toolsDir's own
// node_modules when `npm ci` was run there (as .ci/run does), else a copy
// installed once with `npm ci` into the user's cache directory, keyed by
// the lockfile's digest. Without node or npm, or when the install fails,
// the test skips naming the command to run, or fails when
// FINSYNC_REQUIRE_NODE_TOOLS=1. The first install takes a minute.
func needNodeTools(t *testing.T) nodeTools {
	t.Helper()
	dir, err := filepath.Abs(toolsDir)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := findNodeTools(dir)
	if err == nil {
		return tools
	}
	msg := fmt.Sprintf("OpenAPI Node tools unavailable: %v; run `npm ci --prefix api/%s` (Node.js 20.19 or later)", err, toolsDir)
	if os.Getenv(requireNodeToolsEnv) == "1" {
		t.Fatalf("%s (%s=1)", msg, requireNodeToolsEnv)
	}
	t.Skip(msg)
	return nodeTools{}
}

// findNodeTools locates or installs the packages pinned in dir.
func findNodeTools(dir string) (nodeTools, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return nodeTools{}, fmt.Errorf("node is not installed: %w", err)
	}
	local := nodeTools{dir: dir, modules: filepath.Join(dir, "node_modules")}
	if local.complete() {
		return local, nil
	}
	modules, err := installNodeTools(dir)
	if err != nil {
		return nodeTools{}, err
	}
	return nodeTools{dir: dir, modules: modules}, nil
}

// complete reports whether every executable the tests run is installed.
func (n nodeTools) complete() bool {
	for _, name := range nodeBins() {
		if _, err := os.Stat(n.bin(name)); err != nil {
			return false
		}
	}
	return true
}

// installNodeTools runs `npm ci` for dir's lockfile into a cache folder
// named by the lockfile's digest, unless an earlier run did, and returns
// its node_modules. The install goes to a fresh folder renamed into place,
// so concurrent test processes never see half an install.
func installNodeTools(dir string) (string, error) {
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm is not installed: %w", err)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("read lockfile: %w", err)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("read package.json: %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache directory: %w", err)
	}
	sum := sha256.Sum256(append(append([]byte{}, lock...), manifest...))
	root := filepath.Join(cache, "finsync", "openapitools-"+hex.EncodeToString(sum[:8]))
	if (nodeTools{modules: filepath.Join(root, "node_modules")}).complete() {
		return filepath.Join(root, "node_modules"), nil
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return "", fmt.Errorf("create cache folder: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(root), "install-")
	if err != nil {
		return "", fmt.Errorf("create install folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	for name, data := range map[string][]byte{"package-lock.json": lock, "package.json": manifest} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci: %w\n%s", err, out)
	}
	// When another process moved its install into place first, the rename
	// fails with ErrExist (ENOTEMPTY) and that install serves as well.
	if err := os.Rename(tmp, root); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("move install into place: %w", err)
	}
	modules := filepath.Join(root, "node_modules")
	if !(nodeTools{modules: modules}).complete() {
		return "", fmt.Errorf("npm ci into %s left executables missing", root)
	}
	return modules, nil
}

// execNode is the command running a script with node in wd.
func execNode(ctx context.Context, wd, script string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = wd
	return cmd
}
