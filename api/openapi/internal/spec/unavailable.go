package spec

// serviceUnavailableName is the name of the 503 response component both
// documents share.
const serviceUnavailableName = "ServiceUnavailable"

// serviceUnavailable is the 503 every operation of both versions may
// answer while the database is down or restarting: finsync's addition to
// both API contracts (docs/api-v1.md, docs/api-v2.md; version 1 names the
// code only for its health check), with the endpoint envelope (the Error
// schema both documents define) and a Retry-After header. contract is the
// version's, contractV1 or contractV2.
func serviceUnavailable(contract string) Obj {
	return errorResponse(
		"The database is down or restarting, finsync's addition to "+contract+"; "+
			"retry after the number of seconds in Retry-After.",
		responseHeaders(maybeLimited, KV{hdrRetryAfter, headerRef("RetryAfter")}),
		"SERVICE_UNAVAILABLE",
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
