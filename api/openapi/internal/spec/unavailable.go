package spec

// serviceUnavailableName is the name of the 503 response component both
// documents share.
const serviceUnavailableName = "ServiceUnavailable"

// serviceUnavailable is the 503 every operation of both versions may
// answer while the database is down or restarting: finsync's addition to
// both specifications (version 1 names the code only for its health
// check), with the endpoint envelope (body, the version's schema for it)
// and a Retry-After header.
func serviceUnavailable(body Obj) Obj {
	return jsonResponse(
		"The database is down or restarting (finsync's addition to the specification); "+
			"retry after the number of seconds in Retry-After.",
		body,
		responseHeaders(maybeLimited, KV{hdrRetryAfter, headerRef("RetryAfter")}),
	)
}

// unrouted renders the value of openapi.UnroutedExtension: the responses
// to requests that match no operation, keyed by status.
func unrouted(routeNotFound, methodNotAllowed Obj) Obj {
	return Obj{
		{"404", routeNotFound},
		{"405", methodNotAllowed},
	}
}
