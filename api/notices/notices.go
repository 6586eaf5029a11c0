// Package notices serves the notifications providers send about their
// links: POST /providers/{provider}/webhooks. It takes no API key; what a
// notification is worth is decided by the provider's signature, which the
// Receiver checks before anything is done (docs/webhooks.md, "Provider
// notifications in").
package notices

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/domain"
)

// Path is the route notifications are sent to.
const Path = "/providers/:provider/webhooks"

// Receiver verifies and acts on one notification (the worker's
// NoticeReceiver). Its errors: domain.ErrNoticeProvider (404),
// domain.ErrNoticeRefused (400, nothing done), any other (503: the
// provider sends it again).
type Receiver interface {
	Receive(ctx context.Context, provider string, header http.Header, body []byte) (domain.NoticeResult, error)
}

// Register mounts the route on e; a nil r mounts nothing (the path then
// answers 404 as any unknown one).
func Register(e *gin.Engine, r Receiver, log *slog.Logger) {
	if r == nil {
		return
	}
	e.POST(Path, func(c *gin.Context) { receive(c, r, log) })
}

// receive answers one notification: 200 {"result": ...} once it is
// verified and stored, or for a link no connection has (logged).
func receive(c *gin.Context, r Receiver, log *slog.Logger) {
	provider := c.Param("provider")
	body, err := io.ReadAll(c.Request.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		apierr.Fail(c, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "The notification body is larger than the API accepts")
		return
	}
	if err != nil {
		apierr.Fail(c, http.StatusBadRequest, "BAD_REQUEST", "The notification body could not be read")
		return
	}
	result, err := r.Receive(c.Request.Context(), provider, c.Request.Header, body)
	switch {
	case errors.Is(err, domain.ErrNoticeProvider):
		apierr.Fail(c, http.StatusNotFound, "NOT_FOUND", "No notifications are accepted from provider "+strconv.Quote(truncate(provider)))
		return
	case errors.Is(err, domain.ErrNoticeRefused):
		log.WarnContext(c.Request.Context(), "provider notification refused", "provider", provider, "error", err)
		apierr.Fail(c, http.StatusBadRequest, "BAD_REQUEST", err.Error())
		return
	case err != nil:
		log.ErrorContext(c.Request.Context(), "provider notification not handled", "provider", provider, "error", err)
		c.Header("Retry-After", "5")
		apierr.Fail(c, http.StatusServiceUnavailable, apierr.CodeServiceUnavailable, "The notification could not be handled now; send it again")
		return
	}
	if result == domain.NoticeUnknownLink {
		log.InfoContext(c.Request.Context(), "provider notification for no known connection", "provider", provider)
	}
	c.JSON(http.StatusOK, gin.H{"result": result})
}

// truncate bounds a path parameter shown in a message.
func truncate(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}
