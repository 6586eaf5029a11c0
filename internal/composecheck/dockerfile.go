package composecheck

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Dockerfile is a Dockerfile as BuildKit reads it: its build stages, each
// with its base image resolved from the global ARG defaults, as `docker
// build` resolves it when no --build-arg is given.
type Dockerfile struct {
	// Stages are the build stages in order; the last one is the image.
	Stages []instructions.Stage
	// escape is the escape character, `\` unless a directive changes it.
	escape rune
}

// ParseDockerfile reads a Dockerfile with BuildKit's own parser and
// instruction reader, so it rejects what `docker build` rejects before
// running anything: unknown instructions and flags, malformed FROM, COPY or
// ENV, instructions other than ARG before the first FROM. Caveat: variables
// are expanded only in FROM (from global ARG defaults) and in ENV (see
// Dockerfile.StageEnv); other instructions keep their text as written.
func ParseDockerfile(r io.Reader) (*Dockerfile, error) {
	res, err := parser.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("parse dockerfile: %w", err)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, fmt.Errorf("read dockerfile instructions: %w", err)
	}
	if len(stages) == 0 {
		return nil, errors.New("dockerfile has no FROM instruction")
	}
	lex := shell.NewLex(res.EscapeToken)
	args := envMap{}
	for _, arg := range metaArgs {
		for _, kv := range arg.Args {
			if kv.Value == nil {
				continue
			}
			v, _, err := lex.ProcessWord(*kv.Value, args)
			if err != nil {
				return nil, fmt.Errorf("expand ARG %s: %w", kv.Key, err)
			}
			args[kv.Key] = v
		}
	}
	for i := range stages {
		base, _, err := lex.ProcessWord(stages[i].BaseName, args)
		if err != nil {
			return nil, fmt.Errorf("expand FROM %s: %w", stages[i].BaseName, err)
		}
		stages[i].BaseName = base
	}
	return &Dockerfile{Stages: stages, escape: res.EscapeToken}, nil
}

// Stage returns the stage called name (any case) and whether there is one.
func (d *Dockerfile) Stage(name string) (instructions.Stage, bool) {
	i, ok := instructions.HasStage(d.Stages, name)
	if !ok || name == "" {
		return instructions.Stage{}, false
	}
	return d.Stages[i], true
}

// Final returns the last stage, the one `docker build` produces by default.
func (d *Dockerfile) Final() instructions.Stage {
	return d.Stages[len(d.Stages)-1]
}

// Commands returns the stage's instructions of type T, in order.
func Commands[T instructions.Command](st instructions.Stage) []T {
	var out []T
	for _, c := range st.Commands {
		if t, ok := c.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// StageEnv returns the variables the stage's ENV instructions set, with
// their values expanded and unquoted as BuildKit does. Caveat: ARG values
// and the base image's environment are not included.
func (d *Dockerfile) StageEnv(st instructions.Stage) (map[string]string, error) {
	lex := shell.NewLex(d.escape)
	env := envMap{}
	for _, in := range Commands[*instructions.EnvCommand](st) {
		for _, kv := range in.Env {
			v, _, err := lex.ProcessWord(kv.Value, env)
			if err != nil {
				return nil, fmt.Errorf("expand ENV %s: %w", kv.Key, err)
			}
			env[kv.Key] = v
		}
	}
	return env, nil
}

// SimpleCommand is one command of a RUN instruction.
type SimpleCommand struct {
	// Env holds the VAR=value assignments written before the command.
	Env []string
	// Args are the command's words with quotes removed.
	Args []string
}

// RunCommands returns the simple commands a RUN instruction runs: the
// exec form as one command, the shell form parsed as POSIX shell, with every
// command joined by `&&`, `||`, `;` or a pipe listed in order, including
// those inside command substitutions. Caveat: words are expanded without
// running anything, so `$VAR` and `$(cmd)` expand to "", and heredoc bodies
// are not read.
func RunCommands(run *instructions.RunCommand) ([]SimpleCommand, error) {
	if !run.PrependShell {
		return []SimpleCommand{{Args: slices.Clone(run.CmdLine)}}, nil
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(strings.Join(run.CmdLine, " ")), "")
	if err != nil {
		return nil, fmt.Errorf("parse RUN %q: %w", run.CmdLine, err)
	}
	// Expand words without running anything: variables are unset and
	// command substitutions give "".
	cfg := &expand.Config{CmdSubst: func(io.Writer, *syntax.CmdSubst) error { return nil }}
	var (
		out  []SimpleCommand
		werr error
	)
	syntax.Walk(file, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || werr != nil {
			return werr == nil
		}
		var c SimpleCommand
		for _, a := range call.Assigns {
			v := ""
			if a.Value != nil {
				if v, werr = expand.Literal(cfg, a.Value); werr != nil {
					return false
				}
			}
			c.Env = append(c.Env, a.Name.Value+"="+v)
		}
		for _, w := range call.Args {
			arg, err := expand.Literal(cfg, w)
			if err != nil {
				werr = err
				return false
			}
			c.Args = append(c.Args, arg)
		}
		out = append(out, c)
		return true
	})
	if werr != nil {
		return nil, fmt.Errorf("expand RUN %q: %w", run.CmdLine, werr)
	}
	return out, nil
}

// envMap is a set of variables for BuildKit's shell lexer.
type envMap map[string]string

func (m envMap) Get(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

func (m envMap) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
