// Package requestid carries a request's id through a context and into
// every log line written with that context: the API sets it for each
// request, River jobs the request enqueued carry it in their metadata, and
// their workers put it back in the context they work with.
package requestid

import (
	"context"
	"log/slog"

	"github.com/google/uuid"
)

// MaxLen is the longest incoming id honoured. Ids are at most MaxLen bytes
// of [A-Za-z0-9._:-], enough for a UUID, a ULID or a proxy's trace id, and
// safe to echo in a header and write in a log line as they are.
const MaxLen = 128

// LogKey is the attribute under which log lines carry the id, and the key
// of River job metadata that holds it.
const LogKey = "request_id"

// Valid reports whether s may be honoured as a request id: 1 to MaxLen
// bytes, each a letter, a digit or one of . _ : -. Anything else (spaces,
// control characters, CR/LF, non-ASCII, longer ids) is refused.
func Valid(s string) bool {
	if s == "" || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// New returns a fresh id (a random UUID).
func New() string { return uuid.NewString() }

// Honour returns incoming when it is Valid, else a fresh id. Caveat: it
// never reports which happened; callers that must know call Valid.
func Honour(incoming string) string {
	if Valid(incoming) {
		return incoming
	}
	return New()
}

type ctxKey struct{}

// With returns ctx carrying id. An id that is not Valid is not attached,
// so that what From returns is always safe to log and echo.
func With(ctx context.Context, id string) context.Context {
	if !Valid(id) {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, id)
}

// From returns the id ctx carries, or "" when it carries none.
func From(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// handler adds the context's request id to every record.
type handler struct{ inner slog.Handler }

// NewHandler wraps h so that every record logged with a context carrying a
// request id (the *Context methods of slog.Logger, or LogAttrs) gets a
// request_id attribute. Records logged without a context, or with one
// that carries no id, pass unchanged.
func NewHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(handler); ok {
		return h
	}
	return handler{inner: h}
}

// Enabled implements slog.Handler.
func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(LogKey, id))
	}
	return h.inner.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	return handler{inner: h.inner.WithAttrs(as)}
}

// WithGroup implements slog.Handler. Caveat: the request id then lands
// inside the group.
func (h handler) WithGroup(name string) slog.Handler {
	return handler{inner: h.inner.WithGroup(name)}
}

// Logger returns l with its handler wrapped by NewHandler (l itself when it
// already is); nil yields a logger that discards.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	if _, ok := l.Handler().(handler); ok {
		return l
	}
	return slog.New(NewHandler(l.Handler()))
}
