package middleware

import "github.com/gin-gonic/gin"

// RequirePlan answers 403 through the responder unless the user's plan is
// active and one of the allowed plans.
func RequirePlan(r Responder, plans ...string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := GetPrincipal(c)
		if p == nil || !p.PlanActive || !contains(plans, p.Plan) {
			r.Forbidden(c, GateSubscription)
			c.Abort()
			return
		}
		c.Next()
	}
}

// RequireStorageMode answers 403 through the responder unless the user has
// storage mode on.
func RequireStorageMode(r Responder) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := GetPrincipal(c)
		if p == nil || !p.StorageMode {
			r.Forbidden(c, GateStorageMode)
			c.Abort()
			return
		}
		c.Next()
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
