package composecheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// binaryPackage is the package the image is built from.
const binaryPackage = "./cmd/finsync"

// goBuild is the `go build` command of a build stage.
type goBuild struct {
	// Env holds VAR=value words written before `go` on the same command.
	Env []string
	// Args are the words after `go build`.
	Args []string
	// Run is the RUN instruction holding the command.
	Run Instruction
}

// output returns the value of -o, or "".
func (b goBuild) output() string {
	v, _ := b.flag("o")
	return v
}

// flag returns the value of -name (or --name), written as `-name=v` or
// `-name v`, and whether it is present. A boolean flag has value "".
func (b goBuild) flag(name string) (string, bool) {
	for i, a := range b.Args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name {
			if i+1 < len(b.Args) && !strings.HasPrefix(b.Args[i+1], "-") && name != "trimpath" {
				return b.Args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// findGoBuild finds the first `go build` command in the stage's RUNs.
func findGoBuild(st Stage) (goBuild, bool) {
	for _, run := range st.All("RUN") {
		cmds, err := ShellCommands(run.Args)
		if err != nil {
			continue
		}
		for _, words := range cmds {
			env, rest := splitEnvPrefix(words)
			if len(rest) >= 2 && rest[0] == "go" && rest[1] == "build" {
				return goBuild{Env: env, Args: rest[2:], Run: run}, true
			}
		}
	}
	return goBuild{}, false
}

// splitEnvPrefix separates leading VAR=value words from a command.
func splitEnvPrefix(words []string) (env, rest []string) {
	for i, w := range words {
		if k, _, ok := strings.Cut(w, "="); !ok || k == "" || strings.ContainsAny(k, "-./") {
			return words[:i], words[i:]
		}
	}
	return words, nil
}

// stageEnv returns the variables set by the stage's ENV instructions.
func stageEnv(st Stage) map[string]string {
	env := map[string]string{}
	for _, in := range st.All("ENV") {
		words, err := SplitWords(in.Args)
		if err != nil || len(words) == 0 {
			continue
		}
		if !strings.Contains(words[0], "=") { // legacy `ENV KEY value`
			env[words[0]] = strings.Join(words[1:], " ")
			continue
		}
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			env[k] = v
		}
	}
	return env
}

// createsUser reports whether a RUN of st creates the user called name with
// useradd or adduser.
func createsUser(st Stage, name string) bool {
	for _, run := range st.All("RUN") {
		cmds, err := ShellCommands(run.Args)
		if err != nil {
			continue
		}
		for _, words := range cmds {
			if (words[0] == "useradd" || words[0] == "adduser") && words[len(words)-1] == name {
				return true
			}
		}
	}
	return false
}

func instructionRuns(in Instruction, prefix ...string) bool {
	if in.Cmd != "RUN" {
		return false
	}
	cmds, err := ShellCommands(in.Args)
	if err != nil {
		return false
	}
	for _, words := range cmds {
		if _, rest := splitEnvPrefix(words); len(rest) >= len(prefix) && slices.Equal(rest[:len(prefix)], prefix) {
			return true
		}
	}
	return false
}

// installsPackage reports whether a RUN of st installs pkg with apt-get or apk.
func installsPackage(st Stage, pkg string) bool {
	for _, run := range st.All("RUN") {
		cmds, err := ShellCommands(run.Args)
		if err != nil {
			continue
		}
		for _, words := range cmds {
			isInstall := len(words) > 2 && ((words[0] == "apt-get" && slices.Contains(words, "install")) ||
				(words[0] == "apk" && words[1] == "add"))
			if isInstall && slices.Contains(words, pkg) {
				return true
			}
		}
	}
	return false
}

// imageRef splits an image reference into repository and tag, dropping any
// digest and the docker.io/library/ prefix.
func imageRef(image string) (repo, tag string) {
	image, _, _ = strings.Cut(image, "@")
	image = strings.TrimPrefix(strings.TrimPrefix(image, "docker.io/"), "library/")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i], image[i+1:]
	}
	return image, "latest"
}

// copyArgs splits a COPY's arguments into sources and destination.
func copyArgs(in Instruction) (srcs []string, dest string) {
	words, ok := in.ExecForm()
	if !ok {
		words = strings.Fields(in.Args)
	}
	if len(words) < 2 {
		return nil, ""
	}
	return words[:len(words)-1], words[len(words)-1]
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
	checkBuildCommand(&p, build, binary)
	checkFinalImage(&p, final)
	checkUser(&p, final)
	checkEntrypoint(&p, final)
	return p
}

// checkFinalCopy checks the final stage copies one thing, the binary, from
// another stage, and returns that stage's name and the binary's build path.
func checkFinalCopy(p *problems, final Stage) (from, binary string) {
	for _, in := range final.Instructions {
		if in.Cmd != "COPY" && in.Cmd != "ADD" {
			continue
		}
		f, ok := in.Flag("from")
		if !ok {
			p.addf("line %d: final stage %s %q from the build context; it must hold only the binary", in.Line, in.Cmd, in.Args)
			continue
		}
		srcs, dest := copyArgs(in)
		if dest != "/finsync" || len(srcs) != 1 {
			p.addf("line %d: final stage copies %q; want one binary copied to /finsync", in.Line, in.Args)
			continue
		}
		from, binary = f, srcs[0]
	}
	if from == "" {
		p.addf("final stage copies no binary from a build stage")
	}
	return from, binary
}

// checkBuildImage checks the build stage uses the official Go image at
// go.mod's version: `golang:1.26.8` or a variant such as `golang:1.26.8-trixie`.
func checkBuildImage(p *problems, build Stage, goVersion string) {
	repo, tag := imageRef(build.Image)
	if repo != "golang" {
		p.addf("build image %q: want the official golang image", build.Image)
		return
	}
	if version, _, _ := strings.Cut(tag, "-"); version != goVersion {
		p.addf("build image %q: Go %s does not match go.mod's go %s", build.Image, version, goVersion)
	}
}

func checkModuleLayer(p *problems, build Stage) {
	modCopy := build.Index(func(in Instruction) bool {
		srcs, _ := copyArgs(in)
		return in.Cmd == "COPY" && len(srcs) == 2 && slices.Contains(srcs, "go.mod") && slices.Contains(srcs, "go.sum")
	})
	download := build.Index(func(in Instruction) bool { return instructionRuns(in, "go", "mod", "download") })
	source := build.Index(func(in Instruction) bool {
		srcs, _ := copyArgs(in)
		return in.Cmd == "COPY" && slices.Contains(srcs, ".")
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
		if _, cached := build.Instructions[download].Flag("mount"); cached {
			p.addf("line %d: `go mod download` uses a cache mount, so its layer holds no modules", build.Instructions[download].Line)
		}
	}
}

func checkBuildCommand(p *problems, build Stage, binary string) {
	gb, ok := findGoBuild(build)
	if !ok {
		p.addf("build stage runs no `go build`")
		return
	}
	env := stageEnv(build)
	for _, kv := range gb.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if env["CGO_ENABLED"] != "0" {
		p.addf("go build runs without CGO_ENABLED=0")
	}
	if _, ok := gb.flag("trimpath"); !ok {
		p.addf("go build lacks -trimpath")
	}
	if v, _ := gb.flag("ldflags"); strings.Join(strings.Fields(v), " ") != "-s -w" {
		p.addf(`go build -ldflags = %q, want "-s -w"`, v)
	}
	if !slices.Contains(gb.Args, binaryPackage) {
		p.addf("go build does not build %s", binaryPackage)
	}
	if binary != "" && gb.output() != binary {
		p.addf("go build writes %q but the final stage copies %q", gb.output(), binary)
	}
}

func checkFinalImage(p *problems, final Stage) {
	repo, tag := imageRef(final.Image)
	switch {
	case repo == "debian" && strings.HasSuffix(tag, "-slim"):
	case strings.HasPrefix(repo, "gcr.io/distroless/static") && strings.Contains(tag, "nonroot"):
	default:
		p.addf("final image %q: want debian:<release>-slim or gcr.io/distroless/static:nonroot", final.Image)
	}
}

// checkUser checks the image runs as a user other than root, and that a
// named user is created in the stage.
func checkUser(p *problems, final Stage) {
	in, ok := final.Last("USER")
	if !ok {
		if _, tag := imageRef(final.Image); !strings.Contains(tag, "nonroot") {
			p.addf("final stage sets no USER, so the image runs as root")
		}
		return
	}
	user, _, _ := strings.Cut(strings.TrimSpace(in.Args), ":")
	switch {
	case user == "root" || strings.Trim(user, "0") == "" && user != "":
		p.addf("line %d: USER %s is root", in.Line, in.Args)
	case strings.Trim(user, "0123456789") != "" && user != "nonroot" && !createsUser(final, user):
		p.addf("line %d: USER %s is never created", in.Line, user)
	}
}

func checkEntrypoint(p *problems, final Stage) {
	in, ok := final.Last("ENTRYPOINT")
	if !ok {
		p.addf("final stage has no ENTRYPOINT")
		return
	}
	if args, ok := in.ExecForm(); !ok || !slices.Equal(args, []string{"/finsync"}) {
		p.addf(`line %d: ENTRYPOINT %s, want ["/finsync"]`, in.Line, in.Args)
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
	df, err := ParseDockerfile(strings.NewReader(string(src)))
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
		{"cached download", "RUN go mod download", "RUN --mount=type=cache,target=/go/pkg/mod go mod download", "cache mount"},
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
