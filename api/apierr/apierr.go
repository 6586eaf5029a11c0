// Package apierr writes the endpoint error envelope both API versions share:
// {"error": {"code": ..., "message": ...}}.
package apierr

import "github.com/gin-gonic/gin"

// Body is the error envelope.
type Body struct {
	Error Detail `json:"error"`
}

// Detail is the envelope's error object.
type Detail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Fail writes the envelope with the status and aborts the request.
func Fail(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, Body{Error: Detail{Code: code, Message: message}})
}
