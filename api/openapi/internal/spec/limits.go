package spec

import (
	"encoding/json"
	"net/http"

	"github.com/finsync/finsync/api/params"
)

// Request input limits (package params), documented on the request
// schemas: names and short labels, any other string, every number.

// name is a required, non-blank name of at most params.MaxNameLength characters.
func name() Obj { return nonEmpty().with("maxLength", params.MaxNameLength) }

// label is a short string of at most params.MaxNameLength characters.
func label() Obj { return str().with("maxLength", params.MaxNameLength) }

// text is a request string of at most params.MaxTextLength characters.
func text() Obj { return str().with("maxLength", params.MaxTextLength) }

// amount is a request number within what numeric(19,4) holds: at most 15
// digits before and 4 after the decimal point.
func amount() Obj {
	return number().
		with("minimum", json.Number("-"+params.MaxAmount)).
		with("maximum", json.Number(params.MaxAmount)).
		with("description", "At most 15 digits before and 4 after the decimal point.")
}

// inputLimitsText describes the limits every request obeys, for the
// documents' descriptions.
const inputLimitsText = " Request limits: bodies up to 1 MiB (larger ones answer 413 PAYLOAD_TOO_LARGE); " +
	"names and short labels up to 200 characters, other strings up to 1,000; no string may contain " +
	"a NUL character; every number has at most 15 digits before and 4 after the decimal point; " +
	"bodies nest at most 16 levels deep; a query string that does not decode (a malformed " +
	"percent-escape) answers 400 BAD_REQUEST rather than being ignored."

// v2InputStatuses maps the responses about oversized input to their codes.
func v2InputStatuses() map[string]int {
	return map[string]int{"PayloadTooLarge": http.StatusRequestEntityTooLarge}
}

// v2InputErrorCodes are our additions to the error codes of the API
// contract (docs/api-v2.md) about
// oversized input.
func v2InputErrorCodes() []string { return []string{"PAYLOAD_TOO_LARGE"} }

// v2InputResponses are the reusable responses about oversized input.
func v2InputResponses() Obj {
	return Obj{
		{"PayloadTooLarge", errorResponse("The request body is larger than 1 MiB"+ourV2Code+".",
			responseHeaders(limited), "PAYLOAD_TOO_LARGE")},
	}
}

// bodyErrors are the errors of every authenticated v2 operation with a
// request body.
func bodyErrors(extra ...string) []string {
	return authErrors(append([]string{"BadRequest", "PayloadTooLarge", "Conflict", "IdempotencyKeyReused"}, extra...)...)
}
