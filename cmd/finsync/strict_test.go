package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUnknownCommandsFail: an unknown command or subcommand is an error
// (a non-zero exit) naming it, while a group without one prints its help.
func TestUnknownCommandsFail(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"connections", "bogus"}, {"keys", "rotate-nothing"}, {"providers", "configur"}} {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs(args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), `unknown command "`+args[len(args)-1]+`"`) {
			t.Errorf("finsync %s: error %v, want unknown command", strings.Join(args, " "), err)
		}
	}
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetOut(&out)
	root.SetArgs([]string{"connections"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "Available Commands") {
		t.Errorf("finsync connections: %v, output %q; want its help", err, out.String())
	}
}
