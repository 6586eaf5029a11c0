package requestid_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/finsync/finsync/internal/requestid"
)

func TestValid(t *testing.T) {
	for _, ok := range []string{"a", "0f8fad5b-d9cb-469f-a165-70867728950e", "trace.1:2_3-4", strings.Repeat("x", requestid.MaxLen)} {
		if !requestid.Valid(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", requestid.MaxLen+1), "a b", "a\tb", "a\r\nb", "a\x00", "\x7f", "é", "a/b", "a;b", `"a"`, "a=b"} {
		if requestid.Valid(bad) {
			t.Errorf("%q honoured", bad)
		}
		if got := requestid.Honour(bad); got == bad || !requestid.Valid(got) {
			t.Errorf("Honour(%q) = %q", bad, got)
		}
		if requestid.From(requestid.With(context.Background(), bad)) != "" {
			t.Errorf("With attached %q", bad)
		}
	}
}

func TestHandlerAddsTheContextsID(t *testing.T) {
	var buf bytes.Buffer
	log := requestid.Logger(slog.New(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	if requestid.Logger(log) != log {
		t.Fatal("wrapping twice")
	}
	ctx := requestid.With(context.Background(), "req-1")
	log.InfoContext(ctx, "with")
	log.Info("without")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	var with, without map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &with); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &without); err != nil {
		t.Fatal(err)
	}
	if with["request_id"] != "req-1" || with["component"] != "test" {
		t.Fatalf("with a context: %v", with)
	}
	if _, ok := without["request_id"]; ok {
		t.Fatalf("without a context: %v", without)
	}
}
