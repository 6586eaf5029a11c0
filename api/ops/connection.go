package ops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

// ReauthRequest is what the re-auth form posts for a connection: the new
// credentials (a JSON object, as `finsync connections reauth
// --credentials` takes) and, optionally, the provider's base URL (empty
// keeps the connection's).
type ReauthRequest struct {
	ConnectionID uuid.UUID
	Credentials  []byte
	BaseURL      string
}

// ReauthResult is how a re-auth went: the sync job it enqueued, or, when
// Refused is not empty, why the input was refused (the operator's to fix;
// nothing stored). Refused must never hold a credential's value: the page
// shows it.
type ReauthResult struct {
	JobID   int64
	Refused string
}

// ReauthFunc puts new credentials on a connection and enqueues its sync;
// cmd/finsync hands one over (ops.Config.Reauth) doing exactly what
// `finsync connections reauth` does. An error is the console's to report
// (503), a refusal the operator's (ReauthResult.Refused).
type ReauthFunc func(ctx context.Context, r ReauthRequest) (ReauthResult, error)

// maxReauthBody bounds a re-auth form: a provider's credentials object is
// a few hundred bytes, the CLI takes up to 64 KiB of it.
const maxReauthBody = 80 << 10

// maxCredentials bounds the credentials field itself, as the CLI does.
const maxCredentials = 64 << 10

// connectionData is what a connection's page shows.
type connectionData struct {
	Conn    storage.OpsConnection
	History []storage.SyncRecord
	Chart   *chart
	CSRF    string
	Notice  string
	JobID   string
	// Error is the re-auth form's refusal; CanReauth is set when the
	// console has a re-auth function.
	Error     string
	CanReauth bool
}

// connectionPage shows one connection: its health, its last syncs and
// their chart, and the re-auth form.
func (c *Console) connectionPage(ctx *gin.Context) {
	id, ok := c.parseID(ctx)
	if !ok {
		return
	}
	d, ok := c.connectionData(ctx, id)
	if !ok {
		return
	}
	if ctx.Query("done") == "reauth" {
		d.Notice = "New credentials stored; a sync is queued."
		if _, err := strconv.ParseInt(ctx.Query("job"), 10, 64); err == nil {
			d.JobID = ctx.Query("job")
		}
	}
	c.render(ctx, http.StatusOK, "connection.html", d)
}

// connectionData reads what the page of connection id shows, answering
// 404 (unknown) or 503 itself when it cannot (ok false).
func (c *Console) connectionData(ctx *gin.Context, id uuid.UUID) (connectionData, bool) {
	rctx := ctx.Request.Context()
	conn, err := c.cfg.Store.GetOpsConnection(rctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		c.errorPage(ctx, http.StatusNotFound, "No such connection.")
		return connectionData{}, false
	}
	if err != nil {
		c.unreadable(ctx, err)
		return connectionData{}, false
	}
	history, err := c.cfg.Store.ListSyncHistory(rctx, id, storage.SyncHistoryKept)
	if err != nil {
		c.unreadable(ctx, err)
		return connectionData{}, false
	}
	return connectionData{Conn: conn, History: history, Chart: newChart(history),
		CSRF: c.auth.csrfFor(ctx.GetString(sessionKey)), CanReauth: c.cfg.Reauth != nil}, true
}

// reauth takes the re-auth form: new credentials for the connection,
// through Config.Reauth. A refusal shows on the page (422) without the
// credentials; success goes back to the page with a notice.
func (c *Console) reauth(ctx *gin.Context) {
	ctx.Request.Body = http.MaxBytesReader(ctx.Writer, ctx.Request.Body, maxReauthBody)
	if err := ctx.Request.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			ctx.String(http.StatusRequestEntityTooLarge, "The form is larger than %d KiB.", maxReauthBody>>10)
			return
		}
		ctx.String(http.StatusBadRequest, "The form cannot be read.")
		return
	}
	if !c.csrfOK(ctx) {
		return
	}
	id, ok := c.connectionID(ctx)
	if !ok {
		return
	}
	if c.cfg.Reauth == nil {
		ctx.String(http.StatusServiceUnavailable, "Re-auth is not available in this process.")
		return
	}
	creds := bytes.TrimSpace([]byte(ctx.PostForm("credentials")))
	refused := ""
	switch {
	case len(creds) == 0:
		refused = "Credentials are required: the provider's credentials as a JSON object."
	case len(creds) > maxCredentials:
		refused = fmt.Sprintf("The credentials are longer than %d KiB.", maxCredentials>>10)
	}
	var res ReauthResult
	if refused == "" {
		var err error
		res, err = c.cfg.Reauth(ctx.Request.Context(), ReauthRequest{ConnectionID: id, Credentials: creds, BaseURL: strings.TrimSpace(ctx.PostForm("base_url"))})
		if errors.Is(err, storage.ErrNotFound) {
			c.errorPage(ctx, http.StatusNotFound, "No such connection.")
			return
		}
		if err != nil {
			c.fail(ctx, fmt.Errorf("reauth connection %s: %w", id, err))
			return
		}
		refused = res.Refused
	}
	if refused != "" {
		d, ok := c.connectionData(ctx, id)
		if !ok {
			return
		}
		d.Error = refused
		c.render(ctx, http.StatusUnprocessableEntity, "connection.html", d)
		return
	}
	ctx.Redirect(http.StatusSeeOther, Prefix+"/connections/"+id.String()+"?done=reauth&job="+strconv.FormatInt(res.JobID, 10))
}

// errorPage answers status with a short HTML page saying msg.
func (c *Console) errorPage(ctx *gin.Context, status int, msg string) {
	c.render(ctx, status, "error.html", map[string]any{"Status": status, "Title": http.StatusText(status), "Message": msg,
		"CSRF": c.auth.csrfFor(ctx.GetString(sessionKey))})
}

// unreadable logs err and answers 503: the data cannot be read now.
func (c *Console) unreadable(ctx *gin.Context, err error) {
	c.cfg.Log.ErrorContext(ctx.Request.Context(), "ops page", "path", ctx.Request.URL.Path, "error", err)
	c.errorPage(ctx, http.StatusServiceUnavailable, "The data cannot be read right now; try again shortly.")
}

// parseID parses the :id parameter, answering 400 when it is no
// connection id (ok false).
func (c *Console) parseID(ctx *gin.Context) (uuid.UUID, bool) {
	id, err := uuid.Parse(ctx.Param("id"))
	if err != nil {
		c.errorPage(ctx, http.StatusBadRequest, fmt.Sprintf("%q is not a connection id (a UUID).", ctx.Param("id")))
		return uuid.Nil, false
	}
	return id, true
}
