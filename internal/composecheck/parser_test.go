package composecheck

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseDockerfile(t *testing.T) {
	src := "# syntax=docker/dockerfile:1\n" +
		"# a comment that ends the directives\n" +
		"ARG GO=1.26.8\n" +
		"from golang:${GO}-trixie as build\n" +
		"RUN --mount=type=cache,target=/root/.cache/go-build \\\n" +
		"    # comment inside a continuation\n" +
		"    go build -o /out/x \\\n" +
		"\n" +
		"    ./cmd/x\n" +
		"FROM debian:trixie-slim\n" +
		"COPY --from=build /out/x /x\n" +
		"USER 10001:10001\n" +
		"ENTRYPOINT [\"/x\"]\n"
	d, err := ParseDockerfile(strings.NewReader(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got := d.Directives["syntax"]; got != "docker/dockerfile:1" {
		t.Errorf("syntax directive = %q", got)
	}
	if len(d.Stages) != 2 {
		t.Fatalf("stages = %d, want 2", len(d.Stages))
	}
	build, ok := d.Stage("build")
	if !ok {
		t.Fatal("no stage called build")
	}
	if build.Image != "golang:1.26.8-trixie" {
		t.Errorf("build image = %q (global ARG not substituted?)", build.Image)
	}
	run, ok := build.Last("run")
	if !ok {
		t.Fatal("build stage has no RUN")
	}
	if mount, _ := run.Flag("mount"); mount != "type=cache,target=/root/.cache/go-build" {
		t.Errorf("RUN --mount = %q", mount)
	}
	if want := "go build -o /out/x     ./cmd/x"; run.Args != want {
		t.Errorf("RUN args = %q, want %q", run.Args, want)
	}
	if run.Line != 5 {
		t.Errorf("RUN line = %d, want 5", run.Line)
	}
	final := d.Final()
	if final.Name != "" || final.Image != "debian:trixie-slim" {
		t.Errorf("final stage = %q %q", final.Name, final.Image)
	}
	entry, _ := final.Last("ENTRYPOINT")
	if args, ok := entry.ExecForm(); !ok || !reflect.DeepEqual(args, []string{"/x"}) {
		t.Errorf("ENTRYPOINT exec form = %q, %v", args, ok)
	}
	copyIn, _ := final.Last("COPY")
	if from, _ := copyIn.Flag("from"); from != "build" || copyIn.Args != "/out/x /x" {
		t.Errorf("COPY = %+v", copyIn)
	}
}

func TestParseDockerfileEscapeDirective(t *testing.T) {
	src := "# escape=`\nFROM scratch\nCOPY a `\n  b /\n"
	d, err := ParseDockerfile(strings.NewReader(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	in, _ := d.Final().Last("COPY")
	if in.Args != "a   b /" {
		t.Errorf("COPY args = %q", in.Args)
	}
}

func TestParseDockerfileErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{name: "empty", src: "# nothing\n", want: "no FROM"},
		{name: "run before from", src: "RUN true\nFROM scratch\n", want: "RUN before the first FROM"},
		{name: "unknown instruction", src: "FROM scratch\nRUNN true\n", want: `unknown instruction "RUNN"`},
		{name: "bad from", src: "FROM a b c d\n", want: "FROM wants"},
		{name: "dangling continuation", src: "FROM scratch\nRUN true \\\n", want: "continuation at end of file"},
		{name: "heredoc", src: "FROM scratch\nRUN <<EOF\ntrue\nEOF\n", want: ErrHeredoc.Error()},
		{name: "bad escape", src: "# escape=x\nFROM scratch\n", want: "escape directive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDockerfile(strings.NewReader(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if tt.name == "heredoc" && !errors.Is(err, ErrHeredoc) {
				t.Errorf("err = %v, want ErrHeredoc", err)
			}
		})
	}
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: `go build -ldflags="-s -w" ./cmd/x`, want: []string{"go", "build", "-ldflags=-s -w", "./cmd/x"}},
		{in: `echo 'a  "b"' \"c\"`, want: []string{"echo", `a  "b"`, `"c"`}},
		{in: `a\ b "x\"y"`, want: []string{"a b", `x"y`}},
		{in: `""  x`, want: []string{"", "x"}},
		{in: `  `, want: nil},
		{in: `"open`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitWords(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShellCommands(t *testing.T) {
	tests := []struct {
		in   string
		want [][]string
	}{
		{in: "go mod download && go mod verify", want: [][]string{{"go", "mod", "download"}, {"go", "mod", "verify"}}},
		{in: "a; b || c", want: [][]string{{"a"}, {"b"}, {"c"}}},
		{in: `echo "x && y" && z`, want: [][]string{{"echo", "x && y"}, {"z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ShellCommands(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
