package credinput

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/finsync/finsync/linking"
)

// TestRead: credentials come from a file or standard input (trimmed,
// bounded) or the command line (with a warning), never from two places.
func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "creds.json")
	if err := os.WriteFile(path, []byte("{\"token\":\"x\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	for _, c := range []struct {
		in      Input
		want    string
		refusal string
		warned  bool
	}{
		{in: Input{CredentialsFile: path}, want: `{"token":"x"}`},
		{in: Input{Credentials: "-", Stdin: strings.NewReader(" {\"a\":1}\n")}, want: `{"a":1}`},
		{in: Input{Credentials: `{"b":2}`}, want: `{"b":2}`, warned: true},
		{in: Input{}, want: ""},
		{in: Input{Credentials: "{}", CredentialsFile: path}, refusal: "give either --credentials or --credentials-file"},
		{in: Input{Credentials: "-"}, refusal: "--credentials -: no standard input"},
		{in: Input{Credentials: "-", Stdin: strings.NewReader(strings.Repeat("x", maxCredentialsBytes+1))}, refusal: "--credentials -: longer than 64 KiB"},
		{in: Input{CredentialsFile: path + ".missing"}, refusal: "--credentials-file:"},
	} {
		warn.Reset()
		c.in.Warn = &warn
		got, err := c.in.Read()
		if c.refusal != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.refusal) {
				t.Errorf("%+v: %q %v, want %q", c.in, got, err, c.refusal)
			}
			continue
		}
		if err != nil || string(got) != c.want || (warn.Len() > 0) != c.warned {
			t.Errorf("%+v: %q %v (warned %v), want %q", c.in, got, err, warn.Len() > 0, c.want)
		}
	}
}

// TestFlagged: a refusal of package linking names its flag.
func TestFlagged(t *testing.T) {
	err := Flagged(&linking.InputError{Field: "base-url", Msg: "not an absolute URL"})
	if err.Error() != "--base-url: not an absolute URL" {
		t.Fatalf("%v", err)
	}
	if err := Flagged(&linking.InputError{Msg: "settings missing"}); err.Error() != "settings missing" {
		t.Fatalf("%v", err)
	}
}
