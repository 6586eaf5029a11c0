package middleware

import (
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

// RequestIDHeader carries the request id on every response.
const RequestIDHeader = "x-request-id"

const requestIDKey = "finsync.request_id"

// RequestID gives every request a fresh UUID, sets it on the response and
// stores it in the context.
func RequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := uuid.New().String()
		c.Set(requestIDKey, id)
		c.Writer.Header().Set(RequestIDHeader, id)
		c.Next()
	}
}

// GetRequestID returns the request's id.
func GetRequestID(c *gin.Context) string { return c.GetString(requestIDKey) }

// Logger writes one structured log line per request, carrying its id.
func Logger(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		attrs := []slog.Attr{
			slog.String("request_id", GetRequestID(c)),
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.Int("status", c.Writer.Status()),
			slog.Duration("duration", time.Since(start)),
		}
		if p := GetPrincipal(c); p != nil {
			attrs = append(attrs, slog.String("user_id", p.UserID.String()))
		}
		level := slog.LevelInfo
		if c.Writer.Status() >= 500 {
			level = slog.LevelError
		}
		log.LogAttrs(c.Request.Context(), level, "request", attrs...)
	}
}

// Recover turns a panic into the version's 500 body, logging the panic
// (never the body) with the request id.
func Recover(log *slog.Logger, r Responder) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if v := recover(); v != nil {
				log.Error("panic", "request_id", GetRequestID(c), "panic", v)
				if !c.Writer.Written() {
					r.Internal(c)
				}
				c.Abort()
			}
		}()
		c.Next()
	}
}
