package spec

import "net/http"

// Idempotency-Key on v2's POST and PATCH operations (package
// api/idempotency): finsync's addition to the API contract
// (docs/api-v2.md).

const (
	hdrIdempotencyKey = "Idempotency-Key"
	hdrReplayed       = "Idempotent-Replayed"
)

// idempotencyText describes the header, for the parameter and the
// document's description.
const idempotencyText = "A key of 1 to 255 characters making the request safe to retry: the first request " +
	"with a key runs and its response is kept for 24 hours for the credential (API key or OAuth token) that " +
	"sent it; a retry with the same key, method, path, query and body gets the same status and body with " +
	"Idempotent-Replayed: true, without running again. The same key with another request answers 422 " +
	"IDEMPOTENCY_KEY_REUSED; while the first request is in flight, the same key answers 409 CONFLICT (retry " +
	"later). 5xx responses are not kept, so their retries run. Answers over 64 KiB, and a credential's " +
	"oldest answers past 1,000 or 8 MiB, are not kept: a retry of such a key answers 409 CONFLICT saying the " +
	"request completed (with its status) and does not run again."

// idempotencyParam is the optional Idempotency-Key request header.
func idempotencyParam() Obj {
	return Obj{
		{"name", hdrIdempotencyKey}, {"in", "header"}, {"description", idempotencyText}, {"required", false},
		{"schema", str().with("minLength", 1).with("maxLength", 255)},
	}
}

// replayedHeader documents Idempotent-Replayed on a success response.
func replayedHeader() KV {
	return KV{hdrReplayed, Obj{
		{"description", "true when this response is the stored one of an earlier request with the same Idempotency-Key."},
		{"required", false},
		{"schema", enum("true")},
	}}
}

// v2IdempotencyStatuses maps the Idempotency-Key responses to their codes.
func v2IdempotencyStatuses() map[string]int {
	return map[string]int{"Conflict": http.StatusConflict, "IdempotencyKeyReused": http.StatusUnprocessableEntity}
}

// v2IdempotencyErrorCodes are the envelope codes of Idempotency-Key.
func v2IdempotencyErrorCodes() []string { return []string{"CONFLICT", "IDEMPOTENCY_KEY_REUSED"} }

// v2IdempotencyResponses are the reusable Idempotency-Key responses.
func v2IdempotencyResponses() Obj {
	return Obj{
		{"Conflict", errorResponse("A request with the same Idempotency-Key is still in flight (retry later), or "+
			"completed but its answer is not kept for replay (over 64 KiB, or dropped past the credential's "+
			"1,000 answers or 8 MiB): it does not run again"+ourV2Code+".",
			responseHeaders(limited), "CONFLICT")},
		{"IdempotencyKeyReused", errorResponse("The Idempotency-Key was used with another method, path, query or body"+
			ourV2Code+".", responseHeaders(limited), "IDEMPOTENCY_KEY_REUSED")},
	}
}

// withIdempotency documents Idempotency-Key on every POST and PATCH route.
func withIdempotency(routes []route) []route {
	for i, r := range routes {
		if r.method != "post" && r.method != "patch" {
			continue
		}
		o := &routes[i].op
		o.params = append(append([]Obj{}, o.params...), idempotencyParam())
		if o.success == nil {
			o.success = jsonResponse(o.respDesc, o.schema, responseHeaders(limited, replayedHeader()))
		}
	}
	return routes
}
