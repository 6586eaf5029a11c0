package middleware

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
)

// DefaultRequestDeadline bounds a request's work, database waits included:
// longer than the database's statement timeout (storage, 10 s), so a slow
// query fails there first, and shorter than the server's write timeout
// (30 s), so the client still gets an answer.
const DefaultRequestDeadline = 15 * time.Second

// Deadline gives every request a context that ends after d, so a database
// that hangs (rather than refusing connections) ends in a 503 instead of a
// request that never returns. Caveat: work that ignores its context is not
// bounded.
func Deadline(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}
