package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestMalformedPathIDsAnswerBadRequest walks every mounted route with a
// path parameter and sends a malformed id: each answers 400 BAD_REQUEST in
// the error envelope, naming the parameter, never 404.
func TestMalformedPathIDsAnswerBadRequest(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	key := e.fx.Key(w.a.ID, nil)
	engine, ok := e.srv.Config.Handler.(*gin.Engine)
	if !ok {
		t.Fatalf("handler is %T, want *gin.Engine", e.srv.Config.Handler)
	}
	walked := 0
	for _, r := range engine.Routes() {
		if !strings.Contains(r.Path, "/:") && !strings.Contains(r.Path, "/*") {
			continue
		}
		var name string
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
				name = p[1:]
				parts[i] = "not-a-uuid"
			}
		}
		path := strings.Join(parts, "/")
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			body := ""
			if r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut {
				body = `{}`
			}
			resp := e.send(r.Method, path, key, body)
			e.expect(resp, http.StatusBadRequest, "BAD_REQUEST")
			msg, _ := resp.json(t)["error"].(map[string]any)["message"].(string)
			if msg != name+": must be a UUID" {
				t.Fatalf("message %q, want %q", msg, name+": must be a UUID")
			}
		})
		walked++
	}
	if walked < 7 {
		t.Fatalf("walked %d routes with a path parameter, want at least 7", walked)
	}
}
