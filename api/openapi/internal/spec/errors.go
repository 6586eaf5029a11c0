package spec

import "strings"

// The API contracts the documents follow, for descriptions that tell what
// finsync adds to them.
const (
	contractV1 = "the API contract (docs/api-v1.md)"
	contractV2 = "the API contract (docs/api-v2.md)"
)

// ourV2Code ends the first sentence of the description of a v2 response
// whose code is finsync's addition to the contract's codes.
const ourV2Code = "; the code is our addition to " + contractV2

// errorSchema is the name of the error envelope's component schema in both
// documents ({error: {code, message}}; v2's also carries retryAfter on a
// 429). Every response with the envelope refers to it and to nothing else,
// so that generated clients have one error type.
const errorSchema = "Error"

// codesText tells, for a response's description, which values error.code
// takes there (the schema's ErrorCode enum lists every code of the
// version).
func codesText(codes []string) string {
	return " error.code: " + strings.Join(codes, " or ") + "."
}

// ErrorCodesExtension is the key, on each response with the error
// envelope, of the codes error.code takes there; ErrorFieldsExtension, on
// a response whose envelope always carries an optional field of the
// schema, lists those fields (retryAfter on v2's 429). Package openapi
// exports both. The shared schema cannot say either without a schema per
// response, which would give generated clients an error type per
// response; generators ignore extensions, and the descriptions say the
// same in words.
// ErrorMessagesExtension, on a v1 response with the middleware's
// {error, requestId} body, lists the messages its error takes there.
const (
	ErrorCodesExtension    = "x-error-codes"
	ErrorFieldsExtension   = "x-error-fields"
	ErrorMessagesExtension = "x-error-messages"
)

// errorResponse is a response carrying the error envelope, its
// description and ErrorCodesExtension naming the codes it may hold.
func errorResponse(desc string, headers Obj, codes ...string) Obj {
	return append(jsonResponse(desc+codesText(codes), ref(errorSchema), headers), KV{ErrorCodesExtension, codes})
}

// unknownQueryText says, for the 400 responses of both documents, that
// the query is checked as strictly as a body.
const unknownQueryText = "a query parameter the operation does not list (unknown parameters are refused, " +
	"never ignored: the message names it and the accepted ones, `unknown query parameter \"acount_id\"; " +
	"accepted: bankAccountId, startDate, …`), a value outside a parameter's accepted values (the message " +
	"names the parameter and every accepted value)"

// publicBadRequestName is the 400 response of GET /openapi.json, which
// needs no credentials (so no rate-limit headers) and accepts no query
// parameters.
const publicBadRequestName = "PublicBadRequest"

// publicBadRequest is the response publicBadRequestName names.
func publicBadRequest() Obj {
	return errorResponse("The query string does not decode or names a parameter: this operation accepts none, "+
		"and unknown parameters are refused, never ignored.", responseHeaders(public), "BAD_REQUEST")
}

// withoutRepeats returns base followed by the names of extra it lacks.
func withoutRepeats(base []string, extra []string) []string {
	out := base
	for _, name := range extra {
		if !contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
