// Package idempotency makes version 2's POST and PATCH requests safe to
// retry with an Idempotency-Key header, with Stripe's semantics: the first
// request with a key runs and its response (status, Content-Type and body)
// is stored per credential for 24 hours in PostgreSQL; a retry with the
// same key, method, path, query and body gets that response again with
// Idempotent-Replayed: true, without the handler running again.
//
// The same key with another method, path, query or body answers 422
// IDEMPOTENCY_KEY_REUSED. A request whose key is held by one still in
// flight answers 409 CONFLICT at once (it does not wait); the in-flight
// claim expires after Lock, so a process that died does not block the key
// forever. Responses with a 5xx status, and requests that wrote no
// response, are not stored: the claim is released and the client may
// retry. 4xx responses are stored.
//
// Stored answers are bounded: a body over MaxAnswerBytes is not
// kept, and a credential keeps at most MaxAnswersPerCredential answers and
// MaxAnswerBytesPerCredential bytes of them, its oldest dropped first. A key
// whose answer is not kept still guards its request: a retry answers 409
// CONFLICT saying the request completed (and with which status), and the
// handler does not run again.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/api/apierr"
	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/storage"
)

// Header names.
const (
	// HeaderKey is the request header carrying the key.
	HeaderKey = "Idempotency-Key"
	// HeaderReplayed is set to "true" on a replayed response.
	HeaderReplayed = "Idempotent-Replayed"
)

// Error codes of the envelope, finsync's additions to version 2's codes.
const (
	// CodeKeyReused (422): the key was used with another request.
	CodeKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// CodeConflict (409): a request with the same key is in flight.
	CodeConflict = "CONFLICT"
)

// MaxKeyLength is the longest key accepted; longer (or empty) keys answer
// 400 BAD_REQUEST.
const MaxKeyLength = 255

// TTL is how long a key and its response are kept.
const TTL = 24 * time.Hour

// Bounds of the answers kept for replay (docs/idempotency.md).
const (
	// MaxAnswerBytes is the largest body kept for replay (64 KiB); a
	// larger answer keeps only its status and size.
	MaxAnswerBytes = 64 << 10
	// MaxAnswersPerCredential is how many answers one credential keeps;
	// past it, its oldest are dropped.
	MaxAnswersPerCredential = 1000
	// MaxAnswerBytesPerCredential bounds the total size of one
	// credential's kept answers (8 MiB); past it, its oldest are dropped.
	MaxAnswerBytesPerCredential = 8 << 20
)

// bounds returns the bounds above, as storage takes them.
func bounds() storage.IdemBounds {
	return storage.IdemBounds{
		MaxBody: MaxAnswerBytes, MaxAnswers: MaxAnswersPerCredential, MaxBytes: MaxAnswerBytesPerCredential,
	}
}

// lockMargin is added to the request deadline to bound an in-flight claim.
const lockMargin = 5 * time.Second

// purgeEvery and purgeBatch pace the deletion of expired keys.
const (
	purgeEvery = 5 * time.Minute
	purgeBatch = 1000
)

// Store is what the guard needs from storage.
type Store interface {
	ClaimIdempotencyKey(ctx context.Context, c storage.IdemClaim) (storage.IdemState, storage.IdemResponse, error)
	CompleteIdempotencyKey(ctx context.Context, k storage.IdemKey, claim uuid.UUID, r storage.IdemResponse, b storage.IdemBounds) (bool, error)
	ReleaseIdempotencyKey(ctx context.Context, k storage.IdemKey, claim uuid.UUID) error
	PurgeIdempotencyKeys(ctx context.Context, limit int) (int64, error)
}

// Guard applies Idempotency-Key to the routes it wraps.
type Guard struct {
	store Store
	log   *slog.Logger
	lock  time.Duration
}

// New returns a guard whose in-flight claims hold a key for the request
// deadline plus a margin: a request that outlives it (its context ignored)
// may run twice.
func New(store Store, requestDeadline time.Duration, log *slog.Logger) *Guard {
	return &Guard{store: store, log: log, lock: requestDeadline + lockMargin}
}

// Run deletes expired keys every few minutes until ctx ends. Every API
// process may run it; the deletes do not conflict. Expired keys are also
// reused in place when a request claims them again.
func (g *Guard) Run(ctx context.Context) {
	t := time.NewTicker(purgeEvery)
	defer t.Stop()
	for {
		g.purge(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (g *Guard) purge(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := g.store.PurgeIdempotencyKeys(ctx, purgeBatch)
		if err != nil {
			if ctx.Err() == nil {
				g.log.WarnContext(ctx, "purge expired idempotency keys", "error", err)
			}
			return
		}
		if n < purgeBatch {
			return
		}
	}
}

// Handler is the middleware; it must run after authentication (keys are
// per credential). Requests without the header pass through untouched.
// Failures of the database answer through r (500, or 503 when it is
// unavailable).
func (g *Guard) Handler(r middleware.Responder) gin.HandlerFunc { return g.handler(r, nil) }

// Box seals and opens stored bodies (secrets.Box does).
type Box interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// SealedHandler is Handler for a route whose answer holds a secret shown
// once (a webhook's signing secret): the stored body is sealed with box
// and opened for a replay, so the secret is never at rest in clear.
// Caveat: a body sealed with a key the box no longer holds cannot be
// replayed; until the key expires (24 hours) a retry answers 409 CONFLICT
// saying so, and the request does not run again.
func (g *Guard) SealedHandler(r middleware.Responder, box Box) gin.HandlerFunc {
	return g.handler(r, box)
}

func (g *Guard) handler(r middleware.Responder, box Box) gin.HandlerFunc {
	return func(c *gin.Context) {
		values, present := c.Request.Header[HeaderKey]
		if !present {
			c.Next()
			return
		}
		key := ""
		if len(values) == 1 {
			key = values[0]
		}
		if key == "" || len(key) > MaxKeyLength {
			apierr.Fail(c, http.StatusBadRequest, "BAD_REQUEST",
				fmt.Sprintf("%s: must be a single value of 1 to %d characters", HeaderKey, MaxKeyLength))
			return
		}
		p := middleware.GetPrincipal(c)
		if p == nil {
			c.Next()
			return
		}
		raw, readErr := io.ReadAll(c.Request.Body)
		if readErr != nil {
			// Too large or broken: the handler answers it from the same
			// bytes and error, and nothing is claimed.
			c.Request.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), errReader{readErr}))
			c.Next()
			return
		}
		c.Request.Body = io.NopCloser(bytes.NewReader(raw))
		k := storage.IdemKey{UserID: p.UserID, CredentialID: p.CredentialID, Key: key}
		claim := uuid.New()
		ctx := c.Request.Context()
		state, stored, err := g.store.ClaimIdempotencyKey(ctx, storage.IdemClaim{
			IdemKey: k, RequestHash: requestHash(c.Request.Method, c.Request.URL.EscapedPath(), c.Request.URL.RawQuery, raw),
			Claim: claim, Lock: g.lock, TTL: TTL,
		})
		if err != nil {
			middleware.ServerError(c, r, g.log, err)
			c.Abort()
			return
		}
		switch state {
		case storage.IdemMismatch:
			apierr.Fail(c, http.StatusUnprocessableEntity, CodeKeyReused,
				"This Idempotency-Key was used with another request (method, path, query or body)")
			return
		case storage.IdemInFlight:
			apierr.Fail(c, http.StatusConflict, CodeConflict,
				"A request with this Idempotency-Key is in progress; retry later")
			return
		case storage.IdemDone:
			if stored.Dropped != storage.IdemKept {
				apierr.Fail(c, http.StatusConflict, CodeConflict, droppedMessage(stored))
				return
			}
			body := stored.Body
			if box != nil {
				if body, err = box.Open(body); err != nil {
					// The request ran; only its answer is lost. Never run
					// it again, and say why rather than failing with 500.
					g.log.WarnContext(c.Request.Context(), "stored idempotent response no longer opens", "error", err)
					apierr.Fail(c, http.StatusConflict, CodeConflict,
						"A request with this Idempotency-Key already completed, but its stored answer, which held a secret, can no longer be opened (the encryption key that sealed it was removed); it will not run again: list the resource to find the result")
					return
				}
			}
			c.Header(HeaderReplayed, "true")
			c.Data(stored.Status, stored.ContentType, body)
			c.Abort()
			return
		}
		w := &capture{ResponseWriter: c.Writer}
		c.Writer = w
		defer func() {
			if v := recover(); v != nil {
				g.release(ctx, k, claim)
				panic(v)
			}
		}()
		c.Next()
		c.Writer = w.ResponseWriter
		g.finish(ctx, c, k, claim, w, box)
	}
}

// finish stores the response, or releases the claim for a 5xx or when no
// response was written. It runs even when the client went away.
func (g *Guard) finish(ctx context.Context, c *gin.Context, k storage.IdemKey, claim uuid.UUID, w *capture, box Box) {
	status := w.Status()
	if !w.Written() || status >= http.StatusInternalServerError {
		g.release(ctx, k, claim)
		return
	}
	body := w.body.Bytes()
	if box != nil {
		sealed, err := box.Seal(body)
		if err != nil {
			g.log.WarnContext(ctx, "seal idempotent response", "route", c.FullPath(), "error", err)
			g.release(ctx, k, claim)
			return
		}
		body = sealed
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	ok, err := g.store.CompleteIdempotencyKey(ctx, k, claim, storage.IdemResponse{
		Status: status, ContentType: w.Header().Get("Content-Type"), Body: body,
	}, bounds())
	if errors.Is(err, storage.ErrIdemTrim) {
		// The answer is stored; only older ones stay a while longer.
		g.log.WarnContext(ctx, "drop oldest idempotent answers", "route", c.FullPath(), "error", err)
		return
	}
	if err != nil {
		g.log.WarnContext(ctx, "store idempotent response", "route", c.FullPath(), "error", err)
		g.release(ctx, k, claim)
		return
	}
	if !ok {
		g.log.WarnContext(ctx, "idempotency claim lost before the response was stored", "route", c.FullPath())
	}
}

// release frees the key for the next request, even when the client went
// away; a release that fails leaves the key held until its lock passes.
func (g *Guard) release(ctx context.Context, k storage.IdemKey, claim uuid.UUID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := g.store.ReleaseIdempotencyKey(ctx, k, claim); err != nil {
		g.log.WarnContext(ctx, "release idempotency key (it frees itself after its lock)", "error", err)
	}
}

// droppedMessage explains a retry whose request completed but whose answer
// is not kept.
func droppedMessage(r storage.IdemResponse) string {
	why := fmt.Sprintf("its answer (%d bytes) was larger than the %d bytes kept for replay", r.Size, MaxAnswerBytes)
	if r.Dropped == storage.IdemEvicted {
		why = fmt.Sprintf("its answer is no longer kept (each credential keeps its newest %d answers, %d MiB at most)",
			MaxAnswersPerCredential, MaxAnswerBytesPerCredential>>20)
	}
	return fmt.Sprintf("A request with this Idempotency-Key already completed with status %d, but %s; it will not run again: read the resource, or send the request with a new key to run it again", r.Status, why)
}

// requestHash identifies a request by method, path, raw query and raw
// body. A request without a query hashes as before queries counted
// (method, path and body), so keys stored then still match; EscapedPath
// never holds a '?', so "path?query" is unambiguous.
func requestHash(method, path, query string, body []byte) []byte {
	if query != "" {
		path += "?" + query
	}
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// capture copies what the handler writes.
type capture struct {
	gin.ResponseWriter
	body bytes.Buffer
}

func (w *capture) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *capture) WriteString(s string) (int, error) {
	w.body.WriteString(s)
	return w.ResponseWriter.WriteString(s)
}

// errReader returns its error on every read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
