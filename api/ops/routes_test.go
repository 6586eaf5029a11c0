package ops_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
	"github.com/finsync/finsync/worker"
)

// TestRoutesListsEveryRoute: ops.Routes, which the API's tests walk to
// check that every ops route needs the operator token, names exactly the
// routes Register mounts.
func TestRoutesListsEveryRoute(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	jobs, err := worker.NewInsertClient(storage.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := ops.New(ctx, ops.Config{Token: browserToken, Store: storage.New(pool), Jobs: jobs,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	c.Register(e)
	var mounted []string
	for _, r := range e.Routes() {
		mounted = append(mounted, r.Method+" "+r.Path)
	}
	var listed []string
	for _, r := range ops.Routes() {
		method, path, _ := strings.Cut(r, " ")
		if method != "ANY" {
			listed = append(listed, r)
			continue
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "HEAD", "OPTIONS", "DELETE", "CONNECT", "TRACE"} {
			listed = append(listed, m+" "+path)
		}
	}
	slices.Sort(mounted)
	slices.Sort(listed)
	if !slices.Equal(mounted, listed) {
		t.Fatalf("Register mounts\n%s\nRoutes lists\n%s", strings.Join(mounted, "\n"), strings.Join(listed, "\n"))
	}
}

// TestValidateToken: hex or base64 of at least 32 random bytes is
// accepted; short, spaced, non-encoded, low-entropy and patterned tokens
// are refused, each for its reason.
func TestValidateToken(t *testing.T) {
	for _, c := range []struct {
		name, token, refusal string
	}{
		{"hex of 32 random bytes", browserToken, ""},
		{"upper-case hex", strings.ToUpper(browserToken), ""},
		{"hex of 48 random bytes", "3cbad89a031d3fffecaa45cb8d736dbeba72a6d439790eb3d0a1a5fa7a7872f458e2ffcbbf324adcc630c699b4613fab", ""},
		{"base64url of 32 random bytes, unpadded", "RmVeAtLD3H_dlRZooZ808UBFc6SFgm0n-EOVOBfYuw8", ""},
		{"base64url of 32 random bytes, padded", "RmVeAtLD3H_dlRZooZ808UBFc6SFgm0n-EOVOBfYuw8=", ""},
		{"base64 of 48 random bytes", "SKg14TSuedW6gPFPbkadsxaalTY9SzvdabA1U+8tWEilYam2mNIyEFwSV/NIa7ng", ""},
		{"empty", "", "empty"},
		{"short", "short", "hex or base64"},
		{"hex of 16 bytes", browserToken[:32], "at least 32 random bytes"},
		{"hex of 31 bytes", browserToken[:62], "encodes 31"},
		{"odd hex", browserToken[:63], "odd"},
		{"44 hex digits (33 bytes as base64, 22 as hex)", browserToken[:44], "encodes 22"},
		{"base64 of 31 bytes", "RmVeAtLD3H_dlRZooZ808UBFc6SFgm0n-EOVOBfYuw", "encodes 31"},
		{"white space", browserToken[:32] + " " + browserToken[32:], "white space"},
		{"trailing newline", browserToken + "\n", "white space"},
		{"non-ASCII", browserToken + "é", "non-ASCII"},
		{"one character repeated", strings.Repeat("a", 64), "does not look random"},
		{"zero bytes in base64", strings.Repeat("A", 43) + "=", "does not look random"},
		{"two hex digits alternating", strings.Repeat("0f", 32), "does not look random"},
		{"a repeated hex block", strings.Repeat("0123456789abcdef", 4), "does not look random"},
		{"random hex whose first 4 bytes recur", browserToken[:56] + browserToken[:8], "repeats"},
		{"a repeated base64 block", strings.Repeat("Xy3-Qz9_Ab7K", 4), "does not look random"},
		{"a 32-character phrase", "correct horse battery staple ok!", "white space"},
		{"a 32-character phrase without spaces", "correcthorsebatterystaplefinsync", "at least 32 random bytes"},
		{"a long lower-case phrase", "correcthorsebatterystaplecorrecthorsebattery", "does not look random"},
		{"the tests' former token", "ops-token-for-tests-0123456789abcdef", "at least 32 random bytes"},
		{"punctuation", "!!" + browserToken, "hex or base64"},
	} {
		err := ops.ValidateToken(c.token)
		switch {
		case c.refusal == "" && err != nil:
			t.Errorf("%s (%q) refused: %v", c.name, c.token, err)
		case c.refusal != "" && err == nil:
			t.Errorf("%s (%q) accepted", c.name, c.token)
		case c.refusal != "" && !strings.Contains(err.Error(), c.refusal):
			t.Errorf("%s (%q): %v, want a refusal saying %q", c.name, c.token, err, c.refusal)
		}
	}
}

// TestRandomTokensPass: tokens drawn at random, in every accepted
// encoding, pass (the randomness checks refuse about one in ten million
// random tokens; a thousand draws never hit one).
func TestRandomTokensPass(t *testing.T) {
	for i := 0; i < 1000; i++ {
		b := make([]byte, 32+i%33)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{hex.EncodeToString(b), base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)} {
			if err := ops.ValidateToken(tok); err != nil {
				t.Fatalf("random token %q refused: %v", tok, err)
			}
		}
	}
}

// TestPanicsBecome500: a panic in an ops route (here the sessions' clock,
// read by sign-in) is logged and answered 500, like on /v1 and /v2, and
// the server goes on serving.
func TestPanicsBecome500(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	jobs, err := worker.NewInsertClient(storage.New(pool))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs strings.Builder
	c, err := ops.New(ctx, ops.Config{Token: browserToken, Store: storage.New(pool), Jobs: jobs,
		Log: slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, nil)), Now: func() time.Time { panic("clock broken") }})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	c.Register(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp, err := http.PostForm(srv.URL+"/ops/sign-in", url.Values{"token": {browserToken}})
	if err != nil {
		t.Fatalf("sign-in with a panicking clock: %v, want a 500", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("sign-in with a panicking clock: %d, want 500", resp.StatusCode)
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/ops", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+browserToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ops after the panic: %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "clock broken") {
		t.Fatalf("the panic was not logged: %s", logs.String())
	}
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
