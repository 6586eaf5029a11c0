package composecheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Instruction is one Dockerfile instruction, with its line continuations
// joined and comment lines inside it dropped.
type Instruction struct {
	// Cmd is the instruction keyword in upper case: FROM, RUN, COPY, ...
	Cmd string
	// Flags are the leading `--name=value` options (RUN --mount, COPY --from).
	Flags []string
	// Args is the rest of the instruction after the flags, as written.
	Args string
	// Line is the 1-based line on which the instruction starts.
	Line int
}

// Flag returns the value of the flag called name (without dashes) and
// whether the instruction has it. A flag without `=` has the value "".
func (in Instruction) Flag(name string) (string, bool) {
	for _, f := range in.Flags {
		key, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if key == name {
			return value, true
		}
	}
	return "", false
}

// ExecForm returns the instruction's arguments when they are written in exec
// (JSON array) form, such as `ENTRYPOINT ["/finsync"]`; ok is false for the
// shell form.
func (in Instruction) ExecForm() (args []string, ok bool) {
	s := strings.TrimSpace(in.Args)
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		return nil, false
	}
	return args, true
}

// Stage is one build stage: a FROM instruction and what follows it up to the
// next FROM.
type Stage struct {
	// From is the stage's FROM instruction.
	From Instruction
	// Image is the base image with global ARG defaults substituted.
	Image string
	// Name is the stage name given with `AS name`, or "".
	Name string
	// Instructions are the stage's instructions after FROM, in order.
	Instructions []Instruction
}

// All returns the stage's instructions whose keyword is cmd (any case).
func (s Stage) All(cmd string) []Instruction {
	var out []Instruction
	for _, in := range s.Instructions {
		if in.Cmd == strings.ToUpper(cmd) {
			out = append(out, in)
		}
	}
	return out
}

// Last returns the stage's last instruction whose keyword is cmd (any case)
// and whether there is one.
func (s Stage) Last(cmd string) (Instruction, bool) {
	all := s.All(cmd)
	if len(all) == 0 {
		return Instruction{}, false
	}
	return all[len(all)-1], true
}

// Index returns the position in Instructions of the first instruction for
// which match reports true, or -1.
func (s Stage) Index(match func(Instruction) bool) int {
	for i, in := range s.Instructions {
		if match(in) {
			return i
		}
	}
	return -1
}

// Dockerfile is a parsed Dockerfile.
type Dockerfile struct {
	// Directives are the parser directives at the top (`# syntax=...`),
	// keyed by lower-case name.
	Directives map[string]string
	// GlobalArgs are the ARG instructions before the first FROM.
	GlobalArgs []Instruction
	// Stages are the build stages in order; the last one is the image.
	Stages []Stage
}

// Stage returns the stage called name and whether there is one.
func (d *Dockerfile) Stage(name string) (Stage, bool) {
	for _, s := range d.Stages {
		if s.Name != "" && strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return Stage{}, false
}

// Final returns the last stage, the one `docker build` produces by default.
func (d *Dockerfile) Final() Stage {
	if len(d.Stages) == 0 {
		return Stage{}
	}
	return d.Stages[len(d.Stages)-1]
}

// knownInstructions are the keywords of the Dockerfile reference.
var knownInstructions = map[string]bool{
	"ADD": true, "ARG": true, "CMD": true, "COPY": true, "ENTRYPOINT": true,
	"ENV": true, "EXPOSE": true, "FROM": true, "HEALTHCHECK": true,
	"LABEL": true, "MAINTAINER": true, "ONBUILD": true, "RUN": true,
	"SHELL": true, "STOPSIGNAL": true, "USER": true, "VOLUME": true,
	"WORKDIR": true,
}

// flagInstructions may start with `--name=value` options.
var flagInstructions = map[string]bool{
	"ADD": true, "COPY": true, "FROM": true, "HEALTHCHECK": true, "RUN": true,
}

var (
	directiveRE = regexp.MustCompile(`^#\s*([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(.*?)\s*$`)
	heredocRE   = regexp.MustCompile(`<<-?\s*["']?[A-Za-z_][A-Za-z0-9_]*`)
)

// ErrHeredoc reports a heredoc (`RUN <<EOF`), which this parser does not read.
var ErrHeredoc = errors.New("heredocs are not supported")

// ParseDockerfileFile parses the Dockerfile at path.
func ParseDockerfileFile(path string) (*Dockerfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open dockerfile: %w", err)
	}
	defer f.Close()
	d, err := ParseDockerfile(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return d, nil
}

// ParseDockerfile reads a Dockerfile: parser directives, comments, line
// continuations (with the `escape` directive honoured), instruction flags and
// stages. It rejects unknown instructions, instructions other than ARG before
// the first FROM, and heredocs.
func ParseDockerfile(r io.Reader) (*Dockerfile, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, err
	}
	d := &Dockerfile{Directives: map[string]string{}}
	start := readDirectives(lines, d.Directives)
	escape := byte('\\')
	if e, ok := d.Directives["escape"]; ok {
		if e != "\\" && e != "`" {
			return nil, fmt.Errorf("escape directive %q: want \\ or `", e)
		}
		escape = e[0]
	}
	instructions, err := joinInstructions(lines, start, escape)
	if err != nil {
		return nil, err
	}
	if err := d.addInstructions(instructions); err != nil {
		return nil, err
	}
	if len(d.Stages) == 0 {
		return nil, errors.New("no FROM instruction")
	}
	return d, nil
}

func readLines(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read dockerfile: %w", err)
	}
	return lines, nil
}

// readDirectives fills dirs from the leading `# key=value` lines and returns
// the index of the first line after them. Directives end at the first line
// that is not one, as in BuildKit.
func readDirectives(lines []string, dirs map[string]string) int {
	for i, line := range lines {
		m := directiveRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			return i
		}
		key := strings.ToLower(m[1])
		if _, dup := dirs[key]; dup {
			return i
		}
		dirs[key] = m[2]
	}
	return len(lines)
}

// rawInstruction is one logical line with the line it starts on.
type rawInstruction struct {
	text string
	line int
}

// joinInstructions turns physical lines into logical ones: comments and
// blank lines are dropped, and a line ending in the escape character
// continues on the next.
func joinInstructions(lines []string, start int, escape byte) ([]rawInstruction, error) {
	var (
		out     []rawInstruction
		buf     strings.Builder
		first   int
		pending bool
	)
	for i := start; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if !pending {
			first = i + 1
			buf.Reset()
		}
		body := strings.TrimRight(lines[i], " \t")
		pending = len(body) > 0 && body[len(body)-1] == escape
		if pending {
			body = body[:len(body)-1]
		}
		buf.WriteString(body)
		if !pending {
			out = append(out, rawInstruction{text: strings.TrimSpace(buf.String()), line: first})
		}
	}
	if pending {
		return nil, fmt.Errorf("line %d: line continuation at end of file", first)
	}
	return out, nil
}

func (d *Dockerfile) addInstructions(raws []rawInstruction) error {
	for _, raw := range raws {
		in, err := parseInstruction(raw)
		if err != nil {
			return err
		}
		if err := d.add(in); err != nil {
			return err
		}
	}
	return nil
}

func (d *Dockerfile) add(in Instruction) error {
	switch {
	case in.Cmd == "FROM":
		st, err := d.newStage(in)
		if err != nil {
			return err
		}
		d.Stages = append(d.Stages, st)
	case len(d.Stages) == 0 && in.Cmd == "ARG":
		d.GlobalArgs = append(d.GlobalArgs, in)
	case len(d.Stages) == 0:
		return fmt.Errorf("line %d: %s before the first FROM", in.Line, in.Cmd)
	default:
		last := &d.Stages[len(d.Stages)-1]
		last.Instructions = append(last.Instructions, in)
	}
	return nil
}

func parseInstruction(raw rawInstruction) (Instruction, error) {
	keyword, rest := cutBlank(raw.text)
	in := Instruction{Cmd: strings.ToUpper(keyword), Line: raw.line}
	if !knownInstructions[in.Cmd] {
		return Instruction{}, fmt.Errorf("line %d: unknown instruction %q", raw.line, keyword)
	}
	rest = strings.TrimSpace(rest)
	if flagInstructions[in.Cmd] {
		in.Flags, rest = splitFlags(rest)
	}
	in.Args = rest
	if (in.Cmd == "RUN" || in.Cmd == "COPY" || in.Cmd == "ADD") && heredocRE.MatchString(rest) {
		return Instruction{}, fmt.Errorf("line %d: %w", raw.line, ErrHeredoc)
	}
	return in, nil
}

// splitFlags takes the leading `--flag` words off s.
func splitFlags(s string) (flags []string, rest string) {
	for strings.HasPrefix(s, "--") {
		word, after := cutBlank(s)
		flags = append(flags, word)
		s = strings.TrimSpace(after)
	}
	return flags, s
}

// cutBlank splits s at its first blank (space or tab).
func cutBlank(s string) (head, tail string) {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func (d *Dockerfile) newStage(in Instruction) (Stage, error) {
	fields := strings.Fields(in.Args)
	st := Stage{From: in}
	switch {
	case len(fields) == 1:
	case len(fields) == 3 && strings.EqualFold(fields[1], "AS"):
		st.Name = fields[2]
	default:
		return Stage{}, fmt.Errorf("line %d: FROM wants `image [AS name]`, got %q", in.Line, in.Args)
	}
	st.Image = os.Expand(fields[0], d.globalArg)
	return st, nil
}

// globalArg is the default value of the global ARG called name, or "".
func (d *Dockerfile) globalArg(name string) string {
	value := ""
	for _, in := range d.GlobalArgs {
		key, v, hasDefault := strings.Cut(strings.TrimSpace(in.Args), "=")
		if key == name && hasDefault {
			value = strings.Trim(v, `"`)
		}
	}
	return value
}

// SplitWords splits a shell command line into words the way a POSIX shell
// would for simple commands: blanks separate words, single quotes keep text
// literally, double quotes keep blanks, and a backslash escapes the next
// character. It does not expand variables or globs.
func SplitWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		quote  rune
	)
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\' && i+1 < len(runes) && (quote == 0 || strings.ContainsRune(`"\$`+"`", runes[i+1])):
			i++
			cur.WriteRune(runes[i])
			inWord = true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// ShellCommands splits a RUN instruction's shell-form text into the simple
// commands joined by `&&`, `||` or `;`, each split into words. Operators
// inside quotes are not split on.
func ShellCommands(s string) ([][]string, error) {
	words, err := splitOperators(s)
	if err != nil {
		return nil, err
	}
	var out [][]string
	for _, part := range words {
		w, err := SplitWords(part)
		if err != nil {
			return nil, err
		}
		if len(w) > 0 {
			out = append(out, w)
		}
	}
	return out, nil
}

// splitOperators cuts s at unquoted `&&`, `||` and `;`.
func splitOperators(s string) ([]string, error) {
	var (
		parts []string
		start int
		quote byte
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == ';':
			parts, start = append(parts, s[start:i]), i+1
		case (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c:
			parts, start = append(parts, s[start:i]), i+2
			i++
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	return append(parts, s[start:]), nil
}
