package composecheck

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// binaryPackage is the package the image is built from.
const binaryPackage = "./cmd/finsync"

// line is the Dockerfile line on which c starts.
func line(c instructions.Command) int {
	if loc := c.Location(); len(loc) > 0 {
		return loc[0].Start.Line
	}
	return 0
}

// goBuild is the `go build` command of a build stage.
type goBuild struct {
	// Env holds VAR=value words written before `go` on the same command.
	Env []string
	// Args are the words after `go build`.
	Args []string
}

// flag returns the value of -name (or --name), written as `-name=v` or
// `-name v`, and whether it is present. A boolean flag has value "".
func (b goBuild) flag(name string, boolean bool) (string, bool) {
	for i, a := range b.Args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name {
			if !boolean && i+1 < len(b.Args) {
				return b.Args[i+1], true
			}
			return "", true
		}
	}
	return "", false
}

// stageCommands returns every simple command the stage's RUNs run. A RUN
// the shell parser rejects is a problem.
func stageCommands(p *problems, st instructions.Stage) []SimpleCommand {
	var cmds []SimpleCommand
	for _, run := range Commands[*instructions.RunCommand](st) {
		rc, err := RunCommands(run)
		if err != nil {
			p.addf("line %d: %v", line(run), err)
		}
		cmds = append(cmds, rc...)
	}
	return cmds
}

// runs reports whether c's words start with prefix.
func runs(c SimpleCommand, prefix ...string) bool {
	return len(c.Args) >= len(prefix) && slices.Equal(c.Args[:len(prefix)], prefix)
}

// createsUser reports whether a RUN of st creates the user called name with
// useradd or adduser.
func createsUser(st instructions.Stage, name string) bool {
	cmds := stageCommands(&problems{}, st)
	return slices.ContainsFunc(cmds, func(c SimpleCommand) bool {
		return (runs(c, "useradd") || runs(c, "adduser")) && c.Args[len(c.Args)-1] == name
	})
}

// installsPackage reports whether a RUN of st installs pkg with apt-get or apk.
func installsPackage(st instructions.Stage, pkg string) bool {
	cmds := stageCommands(&problems{}, st)
	return slices.ContainsFunc(cmds, func(c SimpleCommand) bool {
		install := (runs(c, "apt-get") && slices.Contains(c.Args, "install")) || runs(c, "apk", "add")
		return install && slices.Contains(c.Args[1:], pkg)
	})
}

// imageRef splits an image reference into its familiar repository name
// (`golang`, not `docker.io/library/golang`) and its tag, "latest" if none.
func imageRef(image string) (repo, tag string, err error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", "", fmt.Errorf("image %q: %w", image, err)
	}
	tag = "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}
	return reference.FamiliarName(named), tag, nil
}

// copies reports whether c is a COPY of exactly the sources srcs, in any order.
func copies(c instructions.Command, srcs ...string) bool {
	cp, ok := c.(*instructions.CopyCommand)
	return ok && len(cp.SourcePaths) == len(srcs) &&
		slices.Equal(slices.Sorted(slices.Values(cp.SourcePaths)), slices.Sorted(slices.Values(srcs)))
}

// checkDockerfile returns what is wrong with df as finsync's image build,
// given go.mod's Go version.
func checkDockerfile(df *Dockerfile, goVersion string) []string {
	var p problems
	if len(df.Stages) < 2 {
		p.addf("want a multi-stage build, got %d stage(s)", len(df.Stages))
		return p
	}
	final := df.Final()
	buildName, binary := checkFinalCopy(&p, final)
	build, ok := df.Stage(buildName)
	if !ok {
		p.addf("final stage copies from %q, which is no named stage", buildName)
		return p
	}
	checkBuildImage(&p, build, goVersion)
	checkModuleLayer(&p, build)
	checkBuildCommand(&p, df, build, binary)
	checkFinalImage(&p, final)
	checkUser(&p, final)
	checkEntrypoint(&p, final)
	return p
}

// checkFinalCopy checks the final stage copies one thing, the binary, from
// another stage, and returns that stage's name and the binary's build path.
func checkFinalCopy(p *problems, final instructions.Stage) (from, binary string) {
	if adds := Commands[*instructions.AddCommand](final); len(adds) > 0 {
		p.addf("line %d: final stage ADDs %q; it must hold only the binary", line(adds[0]), adds[0].SourcePaths)
	}
	for _, in := range Commands[*instructions.CopyCommand](final) {
		if in.From == "" {
			p.addf("line %d: final stage copies %q from the build context; it must hold only the binary", line(in), in.SourcePaths)
			continue
		}
		if in.DestPath != "/finsync" || len(in.SourcePaths) != 1 {
			p.addf("line %d: final stage copies %q to %q; want one binary copied to /finsync", line(in), in.SourcePaths, in.DestPath)
			continue
		}
		from, binary = in.From, in.SourcePaths[0]
	}
	if from == "" {
		p.addf("final stage copies no binary from a build stage")
	}
	return from, binary
}

// checkBuildImage checks the build stage uses the official Go image at
// go.mod's version: `golang:1.26.8` or a variant such as `golang:1.26.8-trixie`.
func checkBuildImage(p *problems, build instructions.Stage, goVersion string) {
	repo, tag, err := imageRef(build.BaseName)
	switch {
	case err != nil:
		p.addf("build %v", err)
	case repo != "golang":
		p.addf("build image %q: want the official golang image", build.BaseName)
	default:
		if version, _, _ := strings.Cut(tag, "-"); version != goVersion {
			p.addf("build image %q: Go %s does not match go.mod's go %s", build.BaseName, version, goVersion)
		}
	}
}

// checkModuleLayer checks the modules are downloaded in a layer of their
// own, which only go.mod and go.sum invalidate.
func checkModuleLayer(p *problems, build instructions.Stage) {
	modCopy := slices.IndexFunc(build.Commands, func(c instructions.Command) bool { return copies(c, "go.mod", "go.sum") })
	source := slices.IndexFunc(build.Commands, func(c instructions.Command) bool { return copies(c, ".") })
	download := slices.IndexFunc(build.Commands, func(c instructions.Command) bool {
		run, ok := c.(*instructions.RunCommand)
		if !ok {
			return false
		}
		cmds, err := RunCommands(run)
		return err == nil && slices.ContainsFunc(cmds, func(c SimpleCommand) bool { return runs(c, "go", "mod", "download") })
	})
	switch {
	case modCopy < 0:
		p.addf("build stage never copies go.mod and go.sum on their own")
	case download < 0:
		p.addf("build stage never runs `go mod download`")
	case source < 0:
		p.addf("build stage never copies the source (COPY . .)")
	case !(modCopy < download && download < source):
		p.addf("module download is not its own layer: want COPY go.mod go.sum, then RUN go mod download, then COPY . .")
	}
	if download >= 0 {
		if run := build.Commands[download].(*instructions.RunCommand); slices.Contains(run.FlagsUsed, "mount") {
			p.addf("line %d: `go mod download` uses a mount, so its layer holds no modules", line(run))
		}
	}
}

// findGoBuild returns the stage's first `go build` command.
func findGoBuild(p *problems, st instructions.Stage) (goBuild, bool) {
	cmds := stageCommands(p, st)
	for _, c := range cmds {
		if runs(c, "go", "build") {
			return goBuild{Env: c.Env, Args: c.Args[2:]}, true
		}
	}
	return goBuild{}, false
}

// buildEnv returns the environment the stage gives its `go build`: the
// stage's ENV, then the assignments written before the command.
func buildEnv(df *Dockerfile, build instructions.Stage, gb goBuild) (map[string]string, error) {
	env, err := df.StageEnv(build)
	if err != nil {
		return nil, err
	}
	for _, kv := range gb.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env, nil
}

func checkBuildCommand(p *problems, df *Dockerfile, build instructions.Stage, binary string) {
	gb, ok := findGoBuild(p, build)
	if !ok {
		p.addf("build stage runs no `go build`")
		return
	}
	env, err := buildEnv(df, build, gb)
	if err != nil {
		p.addf("build stage environment: %v", err)
	}
	if env["CGO_ENABLED"] != "0" {
		p.addf("go build runs without CGO_ENABLED=0")
	}
	if _, ok := gb.flag("trimpath", true); !ok {
		p.addf("go build lacks -trimpath")
	}
	if v, _ := gb.flag("ldflags", false); strings.Join(strings.Fields(v), " ") != "-s -w" {
		p.addf(`go build -ldflags = %q, want "-s -w"`, v)
	}
	if !slices.Contains(gb.Args, binaryPackage) {
		p.addf("go build does not build %s", binaryPackage)
	}
	if out, _ := gb.flag("o", false); binary != "" && out != binary {
		p.addf("go build writes %q but the final stage copies %q", out, binary)
	}
}

// checkFinalImage checks the image is a small base: debian slim, or
// distroless static as nonroot.
func checkFinalImage(p *problems, final instructions.Stage) {
	repo, tag, err := imageRef(final.BaseName)
	switch {
	case err != nil:
		p.addf("final %v", err)
	case repo == "debian" && strings.HasSuffix(tag, "-slim"):
	case strings.HasPrefix(repo, "gcr.io/distroless/static") && strings.Contains(tag, "nonroot"):
	default:
		p.addf("final image %q: want debian:<release>-slim or gcr.io/distroless/static:nonroot", final.BaseName)
	}
}

// checkUser checks the image runs as a user other than root, and that a
// named user is created in the stage.
func checkUser(p *problems, final instructions.Stage) {
	users := Commands[*instructions.UserCommand](final)
	if len(users) == 0 {
		if _, tag, _ := imageRef(final.BaseName); !strings.Contains(tag, "nonroot") {
			p.addf("final stage sets no USER, so the image runs as root")
		}
		return
	}
	in := users[len(users)-1]
	user, _, _ := strings.Cut(in.User, ":")
	switch {
	case user == "root" || user != "" && strings.Trim(user, "0") == "":
		p.addf("line %d: USER %s is root", line(in), in.User)
	case strings.Trim(user, "0123456789") != "" && user != "nonroot" && !createsUser(final, user):
		p.addf("line %d: USER %s is never created", line(in), user)
	}
}

// checkEntrypoint checks the entrypoint is the binary in exec form, so it
// runs as PID 1 and receives signals.
func checkEntrypoint(p *problems, final instructions.Stage) {
	eps := Commands[*instructions.EntrypointCommand](final)
	if len(eps) == 0 {
		p.addf("final stage has no ENTRYPOINT")
		return
	}
	if in := eps[len(eps)-1]; in.PrependShell || !slices.Equal(in.CmdLine, []string{"/finsync"}) {
		p.addf(`line %d: ENTRYPOINT %q (shell form %v), want ["/finsync"]`, line(in), in.CmdLine, in.PrependShell)
	}
}

// loadDockerfile parses the repository's Dockerfile.
func loadDockerfile(t *testing.T) (*Dockerfile, []byte) {
	t.Helper()
	path := filepath.Join(repoRoot(t), "Dockerfile")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	df, err := ParseDockerfile(bytes.NewReader(src))
	if err != nil {
		t.Fatalf("parse Dockerfile: %v", err)
	}
	return df, src
}

func TestDockerfile(t *testing.T) {
	df, _ := loadDockerfile(t)
	reportProblems(t, "Dockerfile", checkDockerfile(df, repoGoVersion(t)))
}

// TestDockerfileChecksCatchMistakes edits the real Dockerfile in ways that
// break the image and expects checkDockerfile to say what broke.
func TestDockerfileChecksCatchMistakes(t *testing.T) {
	_, src := loadDockerfile(t)
	goVersion := repoGoVersion(t)
	tests := []struct {
		name, old, new, want string
	}{
		{"older go", "golang:" + goVersion, "golang:1.25.0", "does not match go.mod"},
		{"not golang", "golang:" + goVersion, "ubuntu:24.04", "want the official golang image"},
		{"root user", "USER 10001:10001", "USER root", "is root"},
		{"uid zero", "USER 10001:10001", "USER 0:0", "is root"},
		{"no user", "USER 10001:10001", "", "no USER"},
		{"unknown user", "USER 10001:10001", "USER app", "never created"},
		{"cgo", "CGO_ENABLED=0", "CGO_ENABLED=1", "CGO_ENABLED=0"},
		{"no trimpath", "-trimpath ", "", "-trimpath"},
		{"no strip", `-ldflags="-s -w"`, `-ldflags="-X main.v=1"`, "-ldflags"},
		{"no module layer", "COPY go.mod go.sum ./\n", "", "go.mod and go.sum"},
		{"cached download", "RUN go mod download", "RUN --mount=type=cache,target=/go/pkg/mod go mod download", "uses a mount"},
		{"context in final", "COPY --from=build /out/finsync /finsync", "COPY --from=build /out/finsync /finsync\nCOPY . /src", "build context"},
		{"wrong output", "-o /out/finsync", "-o /out/app", "copies"},
		{"shell entrypoint", `ENTRYPOINT ["/finsync"]`, "ENTRYPOINT /finsync", "ENTRYPOINT"},
		{"fat final", "debian:trixie-slim", "debian:trixie", "final image"},
		{"single stage", "FROM debian:trixie-slim AS runtime", "", "multi-stage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(src), tt.old) {
				t.Fatalf("Dockerfile no longer contains %q; update this case", tt.old)
			}
			broken := strings.Replace(string(src), tt.old, tt.new, 1)
			df, err := ParseDockerfile(strings.NewReader(broken))
			if err != nil {
				t.Fatalf("parse edited Dockerfile: %v", err)
			}
			wantProblem(t, checkDockerfile(df, goVersion), tt.want)
		})
	}
}

// TestDockerfileChecksAcceptAlternatives edits the real Dockerfile into other
// valid shapes and expects no problem.
func TestDockerfileChecksAcceptAlternatives(t *testing.T) {
	_, src := loadDockerfile(t)
	goVersion := repoGoVersion(t)
	tests := []struct {
		name, old, new string
	}{
		{"named user it creates", "USER 10001:10001", "USER finsync"},
		{"uid only", "USER 10001:10001", "USER 10001"},
		{"plain golang tag", "golang:" + goVersion + "-trixie", "golang:" + goVersion},
		{"distroless nonroot", "debian:trixie-slim", "gcr.io/distroless/static-debian12:nonroot"},
		{"pinned digest", "debian:trixie-slim", "debian:trixie-slim@sha256:" + strings.Repeat("ab", 32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(string(src), tt.old) {
				t.Fatalf("Dockerfile no longer contains %q; update this case", tt.old)
			}
			df, err := ParseDockerfile(strings.NewReader(strings.Replace(string(src), tt.old, tt.new, 1)))
			if err != nil {
				t.Fatalf("parse edited Dockerfile: %v", err)
			}
			reportProblems(t, tt.name, checkDockerfile(df, goVersion))
		})
	}
}

// TestParseDockerfile covers what this package adds to BuildKit's reader:
// FROM resolved from global ARG defaults, ENV expanded, and RUN split into
// simple commands by a shell parser.
func TestParseDockerfile(t *testing.T) {
	src := "# escape=`\n" +
		"ARG GO=1.26.8\n" +
		"FROM golang:${GO}-trixie AS build\n" +
		"ENV A=1 B=\"x y\" C=${A}z\n" +
		"RUN apt-get install -y curl `\n" +
		"    && CGO_ENABLED=0 go build -ldflags=\"-s -w\" -o '/out/x y' ./cmd/x; echo \"$(uname -m)\" done\n" +
		"FROM scratch\n"
	df, err := ParseDockerfile(strings.NewReader(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	build, ok := df.Stage("BUILD")
	if !ok || build.BaseName != "golang:1.26.8-trixie" {
		t.Fatalf("build stage = %q, %v; want golang:1.26.8-trixie", build.BaseName, ok)
	}
	env, err := df.StageEnv(build)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"A": "1", "B": "x y", "C": "1z"}; !maps.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	runs := Commands[*instructions.RunCommand](build)
	if len(runs) != 1 {
		t.Fatalf("RUNs = %d, want 1", len(runs))
	}
	cmds, err := RunCommands(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []SimpleCommand{
		{Args: []string{"apt-get", "install", "-y", "curl"}},
		{Env: []string{"CGO_ENABLED=0"}, Args: []string{"go", "build", "-ldflags=-s -w", "-o", "/out/x y", "./cmd/x"}},
		{Args: []string{"echo", "", "done"}},
		{Args: []string{"uname", "-m"}},
	}
	if !reflect.DeepEqual(cmds, want) {
		t.Errorf("commands = %q, want %q", cmds, want)
	}
	if !installsPackage(build, "curl") || installsPackage(build, "wget") {
		t.Error("installsPackage does not see apt-get install curl (only)")
	}
}

func TestParseDockerfileRejects(t *testing.T) {
	for name, src := range map[string]string{
		"no FROM":             "# nothing\n",
		"RUN before FROM":     "RUN true\nFROM scratch\n",
		"unknown instruction": "FROM scratch\nRUNN true\n",
		"unknown flag":        "FROM scratch\nCOPY --form=build /a /b\n",
	} {
		if _, err := ParseDockerfile(strings.NewReader(src)); err == nil {
			t.Errorf("%s: parsed %q without error", name, src)
		}
	}
}
