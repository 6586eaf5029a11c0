package composecheck

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
)

// finsyncCommands are the binary's subcommands a compose service may run.
var finsyncCommands = []string{"migrate", "serve", "worker", "sim", "dev"}

// wantServices are the compose services, in start order.
var wantServices = []string{"postgres", "migrate", "sim", "api", "worker"}

// finsyncServices are the services that run the finsync image.
var finsyncServices = []string{"migrate", "sim", "api", "worker"}

// sharedEnvExtension is the extension holding configuration every finsync
// service shares.
const sharedEnvExtension = "x-finsync-env"

// simURL is where api and worker reach the provider simulator.
const simURL = "http://sim:8090"

// loadCompose loads the compose file at path with the compose-spec loader:
// schema validation, interpolation, normalisation and consistency checks.
// The OS environment and .env files are left out so the result is the file's
// own.
func loadCompose(t *testing.T, path string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithName("finsync"),
		cli.WithEnv(nil),
	)
	if err != nil {
		return nil, fmt.Errorf("compose options: %w", err)
	}
	p, err := opts.LoadProject(t.Context())
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return p, nil
}

// repoCompose loads the repository's docker-compose.yml.
func repoCompose(t *testing.T) *types.Project {
	t.Helper()
	p, err := loadCompose(t, filepath.Join(repoRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkCompose returns what is wrong with p as finsync's compose project.
// finalStage is the Dockerfile's image stage, to check healthcheck tools exist.
func checkCompose(p *types.Project, finalStage instructions.Stage) []string {
	var pr problems
	names := p.ServiceNames()
	slices.Sort(names)
	want := slices.Sorted(slices.Values(wantServices))
	if !slices.Equal(names, want) {
		pr.addf("services = %q, want %q", names, want)
	}
	checkPostgres(&pr, p)
	for _, name := range finsyncServices {
		svc, ok := p.Services[name]
		if !ok {
			continue
		}
		checkFinsyncService(&pr, p, svc)
		checkHealthcheckTools(&pr, svc, finalStage)
	}
	checkMigrate(&pr, p.Services["migrate"])
	checkAPI(&pr, p.Services["api"])
	checkWorker(&pr, p.Services["worker"])
	checkSim(&pr, p.Services["sim"])
	checkDatabaseURL(&pr, p)
	checkPlaceholders(&pr, p)
	return pr
}

func checkPostgres(pr *problems, p *types.Project) {
	svc, ok := p.Services["postgres"]
	if !ok {
		return
	}
	if svc.Image != "postgres:16" {
		pr.addf("postgres image = %q, want postgres:16", svc.Image)
	}
	if envValue(svc, "POSTGRES_PASSWORD") == "" && envValue(svc, "POSTGRES_HOST_AUTH_METHOD") != "trust" {
		pr.addf("postgres has neither POSTGRES_PASSWORD nor trust auth")
	}
	if !hasNamedVolume(p, svc, "/var/lib/postgresql/data") {
		pr.addf("postgres keeps /var/lib/postgresql/data on no named volume")
	}
	if hc := healthcheck(pr, svc); hc != nil && !slices.ContainsFunc(hc.Test, func(s string) bool { return strings.Contains(s, "pg_isready") }) {
		pr.addf("postgres healthcheck %q does not run pg_isready", hc.Test)
	}
}

// hasNamedVolume reports whether svc mounts a top-level named volume at target.
func hasNamedVolume(p *types.Project, svc types.ServiceConfig, target string) bool {
	for _, v := range svc.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Target == target {
			_, declared := p.Volumes[v.Source]
			return declared
		}
	}
	return false
}

// checkFinsyncService checks what every finsync container shares: the
// image, a real subcommand, and the shared environment.
func checkFinsyncService(pr *problems, p *types.Project, svc types.ServiceConfig) {
	if svc.Build == nil || svc.Build.Context != p.WorkingDir || svc.Build.Dockerfile != "Dockerfile" {
		pr.addf("%s is not built from the repository's Dockerfile", svc.Name)
	}
	if svc.Image != p.Services["migrate"].Image {
		pr.addf("%s image %q differs from migrate's %q", svc.Name, svc.Image, p.Services["migrate"].Image)
	}
	if len(svc.Entrypoint) > 0 {
		pr.addf("%s overrides the image's entrypoint", svc.Name)
	}
	if len(svc.Command) == 0 || !slices.Contains(finsyncCommands, svc.Command[0]) {
		pr.addf("%s command %q is not a finsync subcommand (%s)", svc.Name, svc.Command, strings.Join(finsyncCommands, ", "))
	}
	shared, _ := p.Extensions[sharedEnvExtension].(map[string]any)
	if len(shared) == 0 {
		pr.addf("no %s extension with the shared environment", sharedEnvExtension)
	}
	for key, value := range shared {
		if got := envValue(svc, key); got != fmt.Sprint(value) {
			pr.addf("%s: %s = %q, want the shared %q", svc.Name, key, got, value)
		}
	}
}

// checkHealthcheckTools checks a healthcheck's program exists in the image.
func checkHealthcheckTools(pr *problems, svc types.ServiceConfig, final instructions.Stage) {
	if svc.HealthCheck == nil || len(svc.HealthCheck.Test) < 2 || svc.HealthCheck.Test[0] != "CMD" {
		return
	}
	tool := svc.HealthCheck.Test[1]
	if tool != "/finsync" && !installsPackage(final, tool) {
		pr.addf("%s healthcheck runs %s, which the image does not install", svc.Name, tool)
	}
}

func checkMigrate(pr *problems, svc types.ServiceConfig) {
	wantCommand(pr, svc, "migrate")
	wantDependency(pr, svc, "postgres", types.ServiceConditionHealthy)
	if svc.Restart != "" && svc.Restart != types.RestartPolicyNo {
		pr.addf("migrate restart = %q; a one-shot must not restart", svc.Restart)
	}
}

func checkAPI(pr *problems, svc types.ServiceConfig) {
	wantCommand(pr, svc, "serve", "--addr", "0.0.0.0:8080", "--metrics-addr", "0.0.0.0:9090")
	wantDependency(pr, svc, "migrate", types.ServiceConditionCompletedSuccessfully)
	wantPublished(pr, svc, 8080, 9090)
	wantHealthURL(pr, svc, "9090", "/readyz", "/livez")
	wantEnv(pr, svc, "FINSYNC_SIM_URL", simURL)
}

func checkWorker(pr *problems, svc types.ServiceConfig) {
	if len(svc.Command) == 0 || svc.Command[0] != "worker" {
		pr.addf("worker command = %q, want worker", svc.Command)
	}
	wantDependency(pr, svc, "migrate", types.ServiceConditionCompletedSuccessfully)
	wantEnv(pr, svc, "FINSYNC_SIM_URL", simURL)
}

func checkSim(pr *problems, svc types.ServiceConfig) {
	wantCommand(pr, svc, "sim", "--addr", "0.0.0.0:8090")
	wantHealthURL(pr, svc, "8090", "/_sim/state")
}

func wantCommand(pr *problems, svc types.ServiceConfig, want ...string) {
	if !slices.Equal(svc.Command, want) {
		pr.addf("%s command = %q, want %q", svc.Name, svc.Command, want)
	}
}

func wantDependency(pr *problems, svc types.ServiceConfig, on, condition string) {
	dep, ok := svc.DependsOn[on]
	switch {
	case !ok:
		pr.addf("%s does not depend on %s", svc.Name, on)
	case dep.Condition != condition:
		pr.addf("%s depends on %s with condition %q, want %q", svc.Name, on, dep.Condition, condition)
	}
}

func wantPublished(pr *problems, svc types.ServiceConfig, ports ...uint32) {
	for _, port := range ports {
		if !slices.ContainsFunc(svc.Ports, func(pc types.ServicePortConfig) bool {
			return pc.Target == port && pc.Published != ""
		}) {
			pr.addf("%s does not publish port %d", svc.Name, port)
		}
	}
}

func wantEnv(pr *problems, svc types.ServiceConfig, key, want string) {
	if got := envValue(svc, key); got != want {
		pr.addf("%s: %s = %q, want %q", svc.Name, key, got, want)
	}
}

// healthcheck returns svc's enabled healthcheck, or nil with a problem.
func healthcheck(pr *problems, svc types.ServiceConfig) *types.HealthCheckConfig {
	hc := svc.HealthCheck
	if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] == "NONE" {
		pr.addf("%s has no healthcheck", svc.Name)
		return nil
	}
	if hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL" {
		pr.addf("%s healthcheck %q starts with neither CMD nor CMD-SHELL", svc.Name, hc.Test)
	}
	return hc
}

// wantHealthURL checks svc's healthcheck requests one of paths on the
// container's own port.
func wantHealthURL(pr *problems, svc types.ServiceConfig, port string, paths ...string) {
	hc := healthcheck(pr, svc)
	if hc == nil {
		return
	}
	for _, word := range hc.Test[1:] {
		u, err := url.Parse(word)
		if err != nil || u.Scheme != "http" {
			continue
		}
		if u.Port() != port || !slices.Contains(paths, u.Path) {
			pr.addf("%s healthcheck asks %s, want port %s and one of %q", svc.Name, word, port, paths)
		}
		return
	}
	pr.addf("%s healthcheck %q requests no http URL", svc.Name, hc.Test)
}

// envValue returns svc's environment variable key, or "".
func envValue(svc types.ServiceConfig, key string) string {
	if v := svc.Environment[key]; v != nil {
		return *v
	}
	return ""
}

// checkDatabaseURL checks DATABASE_URL points at the postgres service with
// its credentials.
func checkDatabaseURL(pr *problems, p *types.Project) {
	pg := p.Services["postgres"]
	for _, name := range finsyncServices {
		raw := envValue(p.Services[name], "DATABASE_URL")
		u, err := url.Parse(raw)
		if err != nil || raw == "" {
			pr.addf("%s: DATABASE_URL %q is not a URL", name, raw)
			continue
		}
		password, _ := u.User.Password()
		host, port, _ := net.SplitHostPort(u.Host)
		switch {
		case host != "postgres" || port != "5432":
			pr.addf("%s: DATABASE_URL host %q, want postgres:5432", name, u.Host)
		case u.User.Username() != envValue(pg, "POSTGRES_USER") ||
			password != envValue(pg, "POSTGRES_PASSWORD") ||
			strings.TrimPrefix(u.Path, "/") != envValue(pg, "POSTGRES_DB"):
			pr.addf("%s: DATABASE_URL user, password or database differ from the postgres service's", name)
		}
	}
}

// checkPlaceholders checks every key and password is an obvious
// development-only placeholder, and the encryption key has the right shape.
func checkPlaceholders(pr *problems, p *types.Project) {
	for _, svc := range p.Services {
		for key, v := range svc.Environment {
			if v == nil {
				continue
			}
			checkPlaceholder(pr, svc.Name, key, *v)
		}
	}
}

func checkPlaceholder(pr *problems, service, key, value string) {
	switch {
	case key == "FINSYNC_ENCRYPTION_KEY":
		if len(value) != 64 || strings.Trim(value, "0") != "" {
			pr.addf("%s: %s must be 64 hex zeros, an obvious placeholder", service, key)
		}
	case key == "DATABASE_URL":
		if u, err := url.Parse(value); err == nil {
			if pw, ok := u.User.Password(); ok && !devOnly(pw) {
				pr.addf("%s: the DATABASE_URL password does not say it is for development only", service)
			}
		}
	case strings.Contains(key, "KEY") || strings.Contains(key, "PASSWORD") || strings.Contains(key, "SECRET"):
		if !devOnly(value) {
			pr.addf("%s: %s does not say it is for development only", service, key)
		}
	}
}

// devOnly reports whether a secret's value says it is for development.
func devOnly(value string) bool {
	return strings.Contains(strings.ToLower(value), "dev-only")
}

func TestCompose(t *testing.T) {
	p := repoCompose(t)
	df, _ := loadDockerfile(t)
	reportProblems(t, "docker-compose.yml", checkCompose(p, df.Final()))
}

// editService applies edit to a copy of the named service and stores it back.
func editService(p *types.Project, name string, edit func(*types.ServiceConfig)) {
	svc := p.Services[name]
	edit(&svc)
	p.Services[name] = svc
}

func setEnv(svc *types.ServiceConfig, key, value string) {
	env := maps.Clone(svc.Environment)
	env[key] = &value
	svc.Environment = env
}

// TestComposeChecksCatchMistakes breaks the loaded project in one way at a
// time and expects checkCompose to say what broke.
func TestComposeChecksCatchMistakes(t *testing.T) {
	df, _ := loadDockerfile(t)
	tests := []struct {
		name string
		edit func(*types.Project)
		want string
	}{
		{"api starts before migrations finish", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) {
				s.DependsOn["migrate"] = types.ServiceDependency{Condition: types.ServiceConditionStarted}
			})
		}, `api depends on migrate with condition "service_started"`},
		{"worker without migrate", func(p *types.Project) {
			editService(p, "worker", func(s *types.ServiceConfig) { delete(s.DependsOn, "migrate") })
		}, "worker does not depend on migrate"},
		{"migrate before postgres is healthy", func(p *types.Project) {
			editService(p, "migrate", func(s *types.ServiceConfig) {
				s.DependsOn["postgres"] = types.ServiceDependency{Condition: types.ServiceConditionStarted}
			})
		}, "migrate depends on postgres"},
		{"migrate restarts", func(p *types.Project) {
			editService(p, "migrate", func(s *types.ServiceConfig) { s.Restart = types.RestartPolicyAlways })
		}, "one-shot"},
		{"no api healthcheck", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) { s.HealthCheck = nil })
		}, "api has no healthcheck"},
		{"api healthcheck on the API port", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) {
				s.HealthCheck.Test = types.HealthCheckTest{"CMD", "curl", "-fsS", "http://127.0.0.1:8080/readyz"}
			})
		}, "api healthcheck asks"},
		{"healthcheck tool missing from image", func(p *types.Project) {
			editService(p, "sim", func(s *types.ServiceConfig) {
				s.HealthCheck.Test = types.HealthCheckTest{"CMD", "wget", "-q", "http://127.0.0.1:8090/_sim/state"}
			})
		}, "runs wget, which the image does not install"},
		{"sim healthcheck elsewhere", func(p *types.Project) {
			editService(p, "sim", func(s *types.ServiceConfig) {
				s.HealthCheck.Test = types.HealthCheckTest{"CMD", "curl", "http://127.0.0.1:8090/"}
			})
		}, "sim healthcheck asks"},
		{"unknown subcommand", func(p *types.Project) {
			editService(p, "worker", func(s *types.ServiceConfig) { s.Command = types.ShellCommand{"work"} })
		}, "not a finsync subcommand"},
		{"api listens on loopback", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) { s.Command = types.ShellCommand{"serve"} })
		}, "api command"},
		{"api port not published", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) { s.Ports = s.Ports[:1] })
		}, "does not publish port 9090"},
		{"postgres version", func(p *types.Project) {
			editService(p, "postgres", func(s *types.ServiceConfig) { s.Image = "postgres:15" })
		}, "postgres image"},
		{"postgres without volume", func(p *types.Project) {
			editService(p, "postgres", func(s *types.ServiceConfig) { s.Volumes = nil })
		}, "named volume"},
		{"postgres without auth", func(p *types.Project) {
			editService(p, "postgres", func(s *types.ServiceConfig) { delete(s.Environment, "POSTGRES_PASSWORD") })
		}, "neither POSTGRES_PASSWORD nor trust"},
		{"no simulator URL", func(p *types.Project) {
			editService(p, "worker", func(s *types.ServiceConfig) { delete(s.Environment, "FINSYNC_SIM_URL") })
		}, "worker: FINSYNC_SIM_URL"},
		{"service drifts from shared env", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) { setEnv(s, "FINSYNC_LOG_LEVEL", "debug") })
		}, "want the shared"},
		{"database elsewhere", func(p *types.Project) {
			editService(p, "migrate", func(s *types.ServiceConfig) {
				setEnv(s, "DATABASE_URL", "postgres://finsync:dev-only-password@localhost:5432/finsync")
			})
		}, "want postgres:5432"},
		{"real-looking key", func(p *types.Project) {
			editService(p, "api", func(s *types.ServiceConfig) {
				setEnv(s, "FINSYNC_ENCRYPTION_KEY", strings.Repeat("3f9a", 16))
			})
		}, "64 hex zeros"},
		{"real-looking password", func(p *types.Project) {
			editService(p, "postgres", func(s *types.ServiceConfig) { setEnv(s, "POSTGRES_PASSWORD", "hunter2") })
		}, "POSTGRES_PASSWORD does not say"},
		{"different image", func(p *types.Project) {
			editService(p, "sim", func(s *types.ServiceConfig) { s.Image = "finsync:other" })
		}, "sim image"},
		{"no shared env", func(p *types.Project) { delete(p.Extensions, sharedEnvExtension) }, "no x-finsync-env"},
		{"extra service", func(p *types.Project) {
			p.Services["redis"] = types.ServiceConfig{Name: "redis", ContainerSpec: types.ContainerSpec{Image: "redis:7"}}
		}, "services ="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := repoCompose(t)
			tt.edit(p)
			wantProblem(t, checkCompose(p, df.Final()), tt.want)
		})
	}
}

// TestComposeLoaderRejects checks the compose-spec loader, not only our own
// checks, stands between a broken file and a green test.
func TestComposeLoaderRejects(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"misspelt key", "services:\n  a:\n    image: x\n    healthchek:\n      test: [\"CMD\", \"true\"]\n", "healthchek"},
		{"bad condition", "services:\n  a:\n    image: x\n    depends_on:\n      b:\n        condition: service_done\n  b:\n    image: x\n", "condition value must be one of"},
		{"unknown dependency", "services:\n  a:\n    image: x\n    depends_on:\n      missing:\n        condition: service_healthy\n", "missing"},
		{"undeclared volume", "services:\n  a:\n    image: x\n    volumes:\n      - data:/data\n", "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "compose.yml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadCompose(t, path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
