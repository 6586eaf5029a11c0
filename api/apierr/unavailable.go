package apierr

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// CodeServiceUnavailable is the code of a 503: a dependency the API needs
// (the database) is down or restarting. Both API versions use it.
const CodeServiceUnavailable = "SERVICE_UNAVAILABLE"

// UnavailableRetryAfter is the wait a 503 advises in its Retry-After
// header: short, because the API serves again as soon as the database does.
const UnavailableRetryAfter = 5 * time.Second

// UnavailableMessage is the message of a 503.
const UnavailableMessage = "The service is temporarily unavailable: its database cannot be reached. Retry after the number of seconds in the Retry-After header."

// Unavailable writes 503 SERVICE_UNAVAILABLE in the envelope with a
// Retry-After header and aborts the request.
func Unavailable(c *gin.Context) {
	c.Header("Retry-After", strconv.Itoa(int(UnavailableRetryAfter/time.Second)))
	Fail(c, http.StatusServiceUnavailable, CodeServiceUnavailable, UnavailableMessage)
}
