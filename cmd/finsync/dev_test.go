package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/finsync/finsync/api/ops"
)

// TestDevTextOutputNamesEveryURL: the text output of finsync dev names the
// metrics URL, like --json does, besides the ops URL and token.
func TestDevTextOutputNamesEveryURL(t *testing.T) {
	var out bytes.Buffer
	a := &app{out: &out}
	a.cfg.OpsToken = "69d76aa0731ca7183a8f4faa6ec72e79c6d6fbefc949fb5d4f94c7f2f61f6212"
	d := demo{UserID: uuid.New(), Key: "fsk_test", MetricsURL: "http://127.0.0.1:9090/metrics"}
	a.printDemo("127.0.0.1:8080", "http://127.0.0.1:8181", "postgres://x", d)
	for _, want := range []string{
		"Metrics:    http://127.0.0.1:9090/metrics",
		"Ops:        http://127.0.0.1:8080/ops",
		"operator token " + a.cfg.OpsToken,
		`curl -s -H "Authorization: Bearer ` + a.cfg.OpsToken + `" http://127.0.0.1:8080/ops`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dev output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	d.MetricsURL = ""
	a.printDemo("127.0.0.1:8080", "http://127.0.0.1:8181", "postgres://x", d)
	if !strings.Contains(out.String(), "Metrics:    none") {
		t.Errorf("dev output without metrics:\n%s", out.String())
	}
}

// TestDevOpsTokenPassesTheTokenRule: the operator token finsync dev makes
// when none is configured is one serve accepts.
func TestDevOpsTokenPassesTheTokenRule(t *testing.T) {
	for i := 0; i < 200; i++ {
		tok, err := newOpsToken()
		if err != nil {
			t.Fatal(err)
		}
		if err := ops.ValidateToken(tok); err != nil {
			t.Fatalf("dev's token %q refused: %v", tok, err)
		}
	}
}
