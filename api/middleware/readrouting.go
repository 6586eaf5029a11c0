package middleware

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

// ReadRouter decides where a user's reads go and records a user's writes
// (storage.Store with a read replica).
type ReadRouter interface {
	// RouteRead returns the context for a read on behalf of userID.
	RouteRead(ctx context.Context, userID uuid.UUID) context.Context
	// RecordWrite records that userID's write was just acknowledged.
	RecordWrite(ctx context.Context, userID uuid.UUID) error
}

// ReadRouting sends an authenticated GET or HEAD to the read replica when
// the router allows it (the replica is fresh enough and has replayed the
// user's last write), and, for every other method that succeeds (status
// below 400), records the write position before the answer leaves: the
// answer is held in memory until then, so a client that has the answer can
// count on its next read, on any API process, seeing the write. Caveat: if
// recording fails (the primary went away just after the write) the answer
// is still sent and the failure logged; that user's reads may then reach a
// replica that has not replayed the write, for at most the lag bound.
//
// readOnly lists routes (Gin route templates, such as "/v2/rules/preview")
// that are read like a GET whatever their method: they must write nothing
// the user can read back, and they record no write position.
func ReadRouting(rr ReadRouter, log *slog.Logger, readOnly ...string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := GetPrincipal(c)
		if p == nil {
			c.Next()
			return
		}
		if m := c.Request.Method; m == http.MethodGet || m == http.MethodHead || slices.Contains(readOnly, c.FullPath()) {
			c.Request = c.Request.WithContext(rr.RouteRead(c.Request.Context(), p.UserID))
			c.Next()
			return
		}
		orig := c.Writer
		held := &heldWriter{ResponseWriter: orig}
		c.Writer = held
		// On a panic the held answer is dropped and the recovery
		// middleware answers on the original writer.
		defer func() { c.Writer = orig }()
		c.Next()
		if held.Status() < http.StatusBadRequest {
			if err := rr.RecordWrite(c.Request.Context(), p.UserID); err != nil {
				log.ErrorContext(c.Request.Context(), "write position not recorded; the user's next reads may miss this write on a lagging replica",
					"error", err, "user_id", p.UserID)
			}
		}
		held.release()
	}
}

// heldWriter keeps a response's body in memory until release; status and
// headers go to the wrapped writer, which sends nothing before release.
type heldWriter struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (w *heldWriter) Write(b []byte) (int, error)       { return w.body.Write(b) }
func (w *heldWriter) WriteString(s string) (int, error) { return w.body.WriteString(s) }
func (w *heldWriter) WriteHeaderNow()                   {}
func (w *heldWriter) Size() int                         { return w.body.Len() }
func (w *heldWriter) Written() bool                     { return w.body.Len() > 0 }
func (w *heldWriter) Flush()                            {}

// release sends the held status, headers and body.
func (w *heldWriter) release() {
	w.ResponseWriter.WriteHeaderNow()
	if w.body.Len() > 0 {
		_, _ = w.ResponseWriter.Write(w.body.Bytes())
	}
}
