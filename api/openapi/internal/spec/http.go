package spec

import (
	"slices"
	"strconv"
)

// Names of the response headers shared by both documents.
const (
	hdrRequestID  = "x-request-id"
	hdrLimit      = "X-RateLimit-Limit"
	hdrRemaining  = "X-RateLimit-Remaining"
	hdrReset      = "X-RateLimit-Reset"
	hdrRetryAfter = "Retry-After"
	mediaJSON     = "application/json"
	bearerScheme  = "bearerAuth"
	respPrefix    = "#/components/responses/"
	paramPrefix   = "#/components/parameters/"
	headerPrefix  = "#/components/headers/"
)

// headerMode says which headers a response carries besides x-request-id.
type headerMode int

const (
	// public responses carry x-request-id only.
	public headerMode = iota
	// limited responses come from authenticated requests that went
	// through the rate limiter: the rate-limit headers are required.
	limited
	// maybeLimited responses may be produced before the rate limiter runs
	// (authentication, plan checks, routing): rate-limit headers optional.
	maybeLimited
)

// requestIDUUID is version 1's request id: the API contract
// (docs/api-v1.md) promises a
// UUID, so only a UUID sent by the client is echoed there.
func requestIDUUID() Obj { return uuidS() }

// requestIDToken is version 2's request id: the client's X-Request-Id when
// it is at most 128 characters of [A-Za-z0-9._:-], else a fresh UUID.
func requestIDToken() Obj {
	return str().with("pattern", "^[A-Za-z0-9._:-]{1,128}$")
}

// hdr is a Header Object.
func hdr(desc string, required bool, schema Obj) Obj {
	return Obj{{"description", desc}, {"required", required}, {"schema", schema}}
}

// headerComponents returns the response headers both documents use;
// requestID is the schema of x-request-id.
func headerComponents(requestID Obj) Obj {
	secs := count()
	return Obj{
		{"RequestId", hdr("Identifier of the request, carried by its log lines and by the jobs it enqueues: "+
			"the request's own X-Request-Id when this schema admits it, else a fresh UUID.", true, requestID)},
		{"RateLimitLimit", hdr("Requests allowed in the current window.", true, secs)},
		{"RateLimitRemaining", hdr("Requests left in the current window.", true, secs)},
		{"RateLimitReset", hdr("Unix time (seconds) at which the window resets.", true, secs)},
		{"RateLimitLimitOptional", hdr("Requests allowed in the current window, when the limiter ran.", false, secs)},
		{"RateLimitRemainingOptional", hdr("Requests left in the current window, when the limiter ran.", false, secs)},
		{"RateLimitResetOptional", hdr("Unix time (seconds) at which the window resets, when the limiter ran.", false, secs)},
		{"RetryAfter", hdr("Seconds to wait before retrying.", true, secs)},
	}
}

func headerRef(name string) Obj { return Obj{{"$ref", headerPrefix + name}} }

// responseHeaders lists the headers of a response in the given mode, plus
// extra ones (already built KV pairs).
func responseHeaders(mode headerMode, extra ...KV) Obj {
	out := Obj{{hdrRequestID, headerRef("RequestId")}}
	switch mode {
	case limited:
		out = append(out,
			KV{hdrLimit, headerRef("RateLimitLimit")},
			KV{hdrRemaining, headerRef("RateLimitRemaining")},
			KV{hdrReset, headerRef("RateLimitReset")})
	case maybeLimited:
		out = append(out,
			KV{hdrLimit, headerRef("RateLimitLimitOptional")},
			KV{hdrRemaining, headerRef("RateLimitRemainingOptional")},
			KV{hdrReset, headerRef("RateLimitResetOptional")})
	}
	return append(out, extra...)
}

// jsonResponse is a response with a JSON body.
func jsonResponse(desc string, schema Obj, headers Obj) Obj {
	return Obj{
		{"description", desc},
		{"headers", headers},
		{"content", Obj{{mediaJSON, Obj{{"schema", schema}}}}},
	}
}

func responseRef(name string) Obj { return Obj{{"$ref", respPrefix + name}} }
func paramRef(name string) Obj    { return Obj{{"$ref", paramPrefix + name}} }

// queryParam is an optional query parameter.
func queryParam(name, desc string, schema Obj) Obj {
	return Obj{{"name", name}, {"in", "query"}, {"description", desc}, {"required", false}, {"schema", schema}}
}

// requiredQuery is a required query parameter.
func requiredQuery(name, desc string, schema Obj) Obj {
	return queryParam(name, desc, schema).with("required", true)
}

// pathParam is a path parameter.
func pathParam(name, desc string, schema Obj) Obj {
	return Obj{{"name", name}, {"in", "path"}, {"description", desc}, {"required", true}, {"schema", schema}}
}

// op describes one operation before it is rendered.
type op struct {
	id      string
	summary string
	// desc is the operation's description: what it does and any caveat.
	desc string
	// tags name the operation's group, one of the document's tags; set
	// for a whole group of routes with tagged.
	tags     []string
	public   bool
	params   []Obj
	body     Obj
	status   int
	respDesc string
	schema   Obj
	success  Obj // a complete success response, overriding schema/respDesc
	more     Obj // further responses by status code, after the success one
	errors   []string
}

// render builds the Operation Object; statusOf maps a component response
// name to its status code.
func (o op) render(statusOf map[string]int) Obj {
	out := Obj{{"operationId", o.id}}
	if len(o.tags) > 0 {
		out = append(out, KV{"tags", o.tags})
	}
	out = append(out, KV{"summary", o.summary})
	if o.desc != "" {
		out = append(out, KV{"description", o.desc})
	}
	if o.public {
		out = append(out, KV{"security", []Obj{}})
	}
	if len(o.params) > 0 {
		out = append(out, KV{"parameters", o.params})
	}
	if o.body != nil {
		out = append(out, KV{"requestBody", Obj{
			{"required", true},
			{"content", Obj{{mediaJSON, Obj{{"schema", o.body}}}}},
		}})
	}
	return append(out, KV{"responses", o.responses(statusOf)})
}

func (o op) responses(statusOf map[string]int) Obj {
	success := o.success
	if success == nil {
		mode := limited
		if o.public {
			mode = public
		}
		success = jsonResponse(o.respDesc, o.schema, responseHeaders(mode))
	}
	out := append(Obj{{strconv.Itoa(o.status), success}}, o.more...)
	names := slices.Clone(o.errors)
	slices.SortStableFunc(names, func(a, b string) int { return statusOf[a] - statusOf[b] })
	for _, name := range names {
		out = append(out, KV{strconv.Itoa(statusOf[name]), responseRef(name)})
	}
	return out
}

// paths renders operations grouped by path, in the order given.
type route struct {
	path   string
	method string
	op     op
}

func renderPaths(routes []route, statusOf map[string]int) Obj {
	var out Obj
	for _, r := range routes {
		item, ok := out.Get(r.path)
		if !ok {
			out = append(out, KV{r.path, Obj{}})
			item = Obj{}
		}
		out = out.with(r.path, item.(Obj).with(r.method, r.op.render(statusOf)))
	}
	return out
}

// openapiDocSchema is the loose shape of the served OpenAPI document.
func openapiDocSchema() Obj {
	return Obj{
		{"type", "object"},
		{"required", []string{"openapi", "info", "paths"}},
		{"properties", Obj{{"openapi", constant("3.1.0")}, {"info", anyObject()}, {"paths", anyObject()}}},
	}
}

func securitySchemes() Obj {
	return Obj{{bearerScheme, Obj{
		{"type", "http"},
		{"scheme", "bearer"},
		{"description", "API key or OAuth access token: `Authorization: Bearer <token>`."},
	}}}
}
