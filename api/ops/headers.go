package ops

import (
	"strings"

	"github.com/gin-gonic/gin"
)

// Content security policies of the ops routes. Both forbid framing
// (frame-ancestors 'none', with X-Frame-Options: DENY for older browsers),
// plugins and <base>. The console's own pages load nothing but their
// inline styles. River's UI loads its scripts, styles, icons and API from
// /ops/jobs itself and sets inline styles (React, React Flow), hence
// 'unsafe-inline' for styles only; no inline or foreign script runs.
const (
	pageCSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	jobsCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
		"font-src 'self' data:; connect-src 'self'; object-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)

// securityHeaders sets, on every /ops response whatever its status, the
// headers that forbid framing (X-Frame-Options: DENY and the CSP's
// frame-ancestors), MIME sniffing and sending the console's URLs to other
// sites.
func securityHeaders(ctx *gin.Context) {
	h := ctx.Writer.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if p := ctx.Request.URL.Path; p == JobsPrefix || strings.HasPrefix(p, JobsPrefix+"/") {
		h.Set("Content-Security-Policy", jobsCSP)
	} else {
		h.Set("Content-Security-Policy", pageCSP)
	}
}
