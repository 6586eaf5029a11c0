package spec

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/finsync/finsync/api/v1"
	"github.com/finsync/finsync/domain"
)

// v1Statuses maps v1's reusable error responses to their status codes.
func v1Statuses() map[string]int {
	return map[string]int{
		"BadRequest":                 http.StatusBadRequest,
		"Unauthorized":               http.StatusUnauthorized,
		"Forbidden":                  http.StatusForbidden,
		"NotFound":                   http.StatusNotFound,
		"RateLimited":                http.StatusTooManyRequests,
		"InternalError":              http.StatusInternalServerError,
		"ProviderServiceUnavailable": http.StatusBadGateway,
		serviceUnavailableName:       http.StatusServiceUnavailable,
		publicBadRequestName:         http.StatusBadRequest,
	}
}

// V1 builds the OpenAPI document of API v1 for the given providers (the
// registry's profiles, in its order).
func V1(provs []domain.ProviderProfile) Obj {
	return Obj{
		{"openapi", "3.1.0"},
		{"info", Obj{
			{"title", "finsync API"},
			{"version", "1.0.0"},
			{"description", "Version 1 of the finsync API: a read-only view of accounts, bank connections, " +
				"transactions, holdings and investment transactions."},
			{"contact", contact()},
		}},
		{"servers", []Obj{{{"url", "/v1"}}}},
		{"security", []Obj{{{bearerScheme, []string{}}}}},
		{"tags", tagList(v1Tags())},
		{"paths", renderPaths(v1Routes(), v1Statuses())},
		{"components", Obj{
			{"securitySchemes", securitySchemes()},
			{"headers", append(headerComponents(requestIDUUID()),
				KV{"RetryAfterOptional", hdr("Seconds to wait before retrying.", false, count())})},
			{"parameters", v1Parameters()},
			{"responses", v1Responses()},
			{"schemas", v1Schemas(provs)},
		}},
		{UnroutedExtension, v1Unrouted()},
	}
}

// v1Errors are the errors every authenticated v1 operation may return
// (BadRequest among them: any may be sent a parameter it does not accept),
// and extra.
func v1Errors(extra ...string) []string {
	return withoutRepeats([]string{"BadRequest", "Unauthorized", "Forbidden", "RateLimited", "InternalError",
		serviceUnavailableName}, extra)
}

func v1Routes() []route {
	return []route{
		{"/health", "get", op{
			id: "getHealth", tags: tagService().only(), summary: "Service health",
			desc: "Whether the service is up: status ok, or degraded when no background worker is running; " +
				"503 while the database is unreachable. Needs no credentials.",
			public: true,
			status: http.StatusOK, respDesc: "The service is up (status ok or degraded).",
			schema: wrap("data", ref("Health")),
			errors: []string{serviceUnavailableName},
		}},
		{"/openapi.json", "get", op{
			id: "getOpenAPI", tags: tagService().only(), summary: "This document",
			desc:   "This OpenAPI document, from which clients can be generated. Needs no credentials.",
			public: true,
			status: http.StatusOK, respDesc: "The OpenAPI document.", schema: openapiDocSchema(),
			errors: []string{publicBadRequestName},
		}},
		{"/accounts", "get", op{
			id: "listAccounts", tags: tagAccounts().only(), summary: "List accounts",
			desc:   "The caller's accounts within the key's scope, optionally those of one bank connection.",
			params: []Obj{queryParam("connectionId", "Only accounts of this bank connection.", uuidS())},
			status: http.StatusOK, respDesc: "The accounts.",
			schema: object(req("data", array(ref("Account"))), req("meta", ref("ListMeta"))),
			errors: v1Errors("BadRequest", "NotFound"),
		}},
		{"/bank-connections", "get", op{
			id: "listBankConnections", tags: tagConnections().only(), summary: "List bank connections",
			desc:   "The caller's stored bank connections with their last error, if any.",
			status: http.StatusOK, respDesc: "The bank connections.",
			schema: object(req("bank_connections", array(ref("BankConnection"))), req("meta", ref("ListMeta"))),
			errors: v1Errors(),
		}},
		{"/transactions", "get", op{
			id: "listTransactions", tags: tagTransactions().only(), summary: "List transactions of a bank connection",
			desc: "Stored transactions of one bank connection between two dates (inclusive), optionally of " +
				"some of its accounts, with the categories they reference; meta.nextPage links the next page.",
			params: []Obj{
				paramRef("bankConnectionId"), paramRef("accountIds"),
				requiredQuery("startDate", "Inclusive lower bound (YYYY-MM-DD).", date()),
				requiredQuery("endDate", "Inclusive upper bound (YYYY-MM-DD).", date()),
				queryParam("limit", "Page size.", intRange(1, 250).with("default", 50)),
				paramRef("cursor"),
			},
			status: http.StatusOK, respDesc: "A page of transactions with the categories they reference.",
			schema: object(
				req("data", object(
					req("transactions", array(ref("Transaction"))),
					req("categories", array(ref("Category"))),
				)),
				req("meta", ref("PageMeta")),
			),
			errors: v1Errors("BadRequest", "NotFound"),
		}},
		{"/holdings", "get", op{
			id: "listHoldings", tags: tagInvestments().only(), summary: "List investment holdings of a bank connection",
			desc: "Stored investment holdings of one bank connection, optionally of some of its accounts, " +
				"with the securities they reference; meta.nextPage links the next page.",
			params: []Obj{paramRef("bankConnectionId"), paramRef("accountIds"), paramRef("investmentLimit"), paramRef("cursor")},
			status: http.StatusOK, respDesc: "A page of holdings with the securities they reference.",
			schema: object(
				req("data", object(
					req("holdings", array(ref("Holding"))),
					req("securities", array(ref("Security"))),
				)),
				req("meta", ref("ListPageMeta")),
			),
			errors: v1Errors("BadRequest", "NotFound", "ProviderServiceUnavailable"),
		}},
		{"/investment-transactions", "get", op{
			id: "listInvestmentTransactions", tags: tagInvestments().only(), summary: "List investment transactions of a bank connection",
			desc: "Stored investment transactions of one bank connection between two dates (inclusive, " +
				"the last 30 days by default), with the securities they reference; meta.nextPage links the next page.",
			params: []Obj{
				paramRef("bankConnectionId"), paramRef("accountIds"),
				queryParam("startDate", "Inclusive lower bound (YYYY-MM-DD); default 30 days ago.", date()),
				queryParam("endDate", "Inclusive upper bound (YYYY-MM-DD); default today.", date()),
				paramRef("investmentLimit"), paramRef("cursor"),
			},
			status: http.StatusOK, respDesc: "A page of investment transactions with the securities they reference.",
			schema: object(
				req("data", object(
					req("investmentTransactions", array(ref("InvestmentTransaction"))),
					req("securities", array(ref("Security"))),
				)),
				req("meta", ref("ListPageMeta")),
			),
			errors: v1Errors("BadRequest", "NotFound", "ProviderServiceUnavailable"),
		}},
	}
}

func v1Parameters() Obj {
	return Obj{
		{"bankConnectionId", requiredQuery("bankConnectionId", "The bank connection.", uuidS())},
		{"accountIds", queryParam("accountIds", "Comma-separated account ids; all accounts when omitted.", str())},
		{"cursor", queryParam("cursor", "Cursor taken from the previous response's meta.nextPage.", str())},
		{"investmentLimit", queryParam("limit", "Page size.", intRange(1, 250).with("default", 100))},
	}
}

// v1ErrorCodes are the codes of v1's endpoint error body.
func v1ErrorCodes() []string {
	return []string{
		"BAD_REQUEST", "NOT_FOUND", "METHOD_NOT_ALLOWED", "INTERNAL_ERROR",
		"PROVIDER_SERVICE_UNAVAILABLE", "SERVICE_UNAVAILABLE",
	}
}

// v1Middleware is the error body of authentication, plan and rate-limit
// checks: {error, requestId} with error one of messages.
func v1Middleware(messages []string, extra ...field) Obj {
	fields := []field{req("error", enum(messages...)), req("requestId", str())}
	return object(append(fields, extra...)...)
}

// v1ErrorSchemas are the error bodies, shared by every response that
// carries them so that generated clients get one type for each.
func v1ErrorSchemas() Obj {
	return Obj{
		{"ErrorCode", enum(v1ErrorCodes()...)},
		{"ErrorDetail", object(req("code", ref("ErrorCode")), req("message", str()))},
		{errorSchema, describe(object(req("error", ref("ErrorDetail"))),
			"The error envelope of every endpoint error response. Each response's description names the codes "+
				"error.code takes there.")},
		{middlewareErrorSchema, describe(v1Middleware(slices.Concat(v1AuthMessages(), v1PlanMessages(), v1RateMessages(), v1InternalMessages()),
			opt("retryAfter", describe(count(), "Epoch milliseconds after which to retry (rate-limited answers only)."))),
			"The body of the errors authentication, the plan check and the rate limit answer before an endpoint runs "+
				"(and of an internal error among them). Each response's description names the messages error takes there.")},
	}
}

// middlewareErrorSchema names v1's one schema of the middleware's
// {error, requestId} errors.
const middlewareErrorSchema = "MiddlewareError"

// The messages of v1's middleware errors, by response.
func v1AuthMessages() []string {
	return []string{"Missing or invalid Authorization header", "Invalid API key", "API key has been disabled", "API key has expired"}
}

func v1PlanMessages() []string {
	return []string{"API access requires active pro subscription or trial"}
}

func v1RateMessages() []string { return []string{"Rate limit exceeded"} }

func v1InternalMessages() []string { return []string{"Internal error"} }

// middlewareResponse is a v1 response carrying the middleware's error
// body, its description and ErrorMessagesExtension naming the messages it
// may hold.
func middlewareResponse(desc string, headers Obj, messages []string) Obj {
	return append(jsonResponse(desc+" error: "+strings.Join(quoted(messages), " or ")+".", ref(middlewareErrorSchema), headers),
		KV{ErrorMessagesExtension, messages})
}

// quoted quotes each message.
func quoted(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = strconv.Quote(m)
	}
	return out
}

// v1Unrouted are the responses to requests that match no operation.
func v1Unrouted() Obj {
	return unrouted(
		errorResponse("No such path.", responseHeaders(maybeLimited), "NOT_FOUND"),
		errorResponse("The path exists but not with this method.", responseHeaders(maybeLimited), "METHOD_NOT_ALLOWED"),
	)
}

func v1Responses() Obj {
	endpoint := func(desc string, mode headerMode, code string) Obj {
		return errorResponse(desc, responseHeaders(mode), code)
	}
	return Obj{
		{"BadRequest", endpoint("Invalid query: an invalid or missing parameter (the message is `<parameter>: <text>`), "+
			"a query string that does not decode (a malformed percent-escape: `query: <text>`), or "+unknownQueryText+
			".", limited, "BAD_REQUEST")},
		{publicBadRequestName, publicBadRequest()},
		{"Unauthorized", middlewareResponse("Authentication failed.", responseHeaders(public), v1AuthMessages())},
		{"Forbidden", middlewareResponse("No active pro subscription or trial.", responseHeaders(maybeLimited), v1PlanMessages())},
		{"NotFound", endpoint("Bank connection not found.", limited, "NOT_FOUND")},
		{"RateLimited", middlewareResponse("Rate limit exceeded; the body always carries retryAfter.",
			responseHeaders(limited, KV{hdrRetryAfter, headerRef("RetryAfterOptional")}), v1RateMessages()).
			with(ErrorFieldsExtension, []string{"retryAfter"})},
		{"InternalError", jsonResponse("Internal error, from authentication (the MiddlewareError body, whose error is "+
			"\"Internal error\") or the endpoint (the Error envelope, whose error.code is INTERNAL_ERROR).",
			Obj{{"oneOf", []Obj{ref(errorSchema), ref(middlewareErrorSchema)}}},
			responseHeaders(maybeLimited)).with(ErrorCodesExtension, []string{"INTERNAL_ERROR"}).
			with(ErrorMessagesExtension, v1InternalMessages())},
		{"ProviderServiceUnavailable", endpoint("The provider is unavailable.", limited, "PROVIDER_SERVICE_UNAVAILABLE")},
		{serviceUnavailableName, serviceUnavailable(contractV1)},
	}
}

// V1Providers are the values of v1's Provider enum: the capitalised
// names of the given providers, in their order, then Manual.
func V1Providers(provs []domain.ProviderProfile) []string {
	names := v1.NewProviderNames(provs)
	out := make([]string, 0, len(provs)+1)
	for _, p := range provs {
		out = append(out, names.Of(p.Name))
	}
	return append(out, names.Of(domain.ProviderManual))
}

func v1Schemas(provs []domain.ProviderProfile) Obj {
	s := Obj{
		{"Provider", enum(V1Providers(provs)...)},
		{"Health", object(
			req("status", describe(enum("ok", "degraded"), "degraded: non-critical services are unavailable.")),
			req("timestamp", dateTime()),
		)},
		{"ListMeta", object(req("count", count()), req("totalCount", count()), req("hasMore", boolean()))},
		{"PageMeta", object(req("count", count()), req("nextPage", orNull(strFormat("uri"))))},
		{"ListPageMeta", object(
			req("count", count()), req("totalCount", count()), req("hasMore", boolean()),
			req("nextPage", orNull(strFormat("uri"))),
		)},
		{"Account", v1Account()},
		{"BankConnection", object(
			req("id", uuidS()),
			req("name", str()),
			req("provider", ref("Provider")),
			req("error", orNull(object(req("code", str()), req("message", str())))),
		)},
		{"Transaction", v1Transaction()},
		{"Category", object(req("id", str()), req("name", str()), req("group", str()), req("description", str()))},
		{"Holding", object(
			req("id", describe(str().with("pattern", "^[^:]+:[^:]+$"), "<accountId>:<securityId>")),
			req("accountId", str()),
			req("securityId", str()),
			req("quantity", number()),
			req("costBasis", orNull(number())),
			req("institutionPrice", number()),
			req("institutionValue", number()),
			req("currency", currency()),
			req("priceAsOf", orNull(date())),
			req("provider", ref("Provider")),
		)},
		{"Security", object(req("id", str()), req("symbol", orNull(str())), req("name", str()), req("type", str()))},
		{"InvestmentTransaction", object(
			req("id", str()),
			req("accountId", str()),
			req("securityId", orNull(str())),
			req("type", str()),
			req("subtype", str()),
			req("date", date()),
			req("quantity", number()),
			req("price", number()),
			req("amount", number()),
			req("fees", orNull(number())),
			req("currency", currency()),
			req("description", str()),
			req("provider", ref("Provider")),
		)},
	}
	return append(s, v1ErrorSchemas()...)
}

func v1Account() Obj {
	nullNum := orNull(number())
	return object(
		req("id", str()),
		req("bankConnectionId", orNull(uuidS())),
		req("name", str()),
		req("balance", object(
			req("current", nullNum), req("available", nullNum),
			req("limit", nullNum), req("interestRate", nullNum),
		)),
		req("currency", currency()),
		req("mask", orNull(str())),
		req("type", orNull(str())),
		req("subtype", orNull(str())),
		req("provider", ref("Provider")),
		req("payment", orNull(object(
			req("lastPaymentAmount", nullNum),
			req("lastPaymentDate", orNull(date())),
			req("nextPaymentDueDate", orNull(date())),
			req("lastStatementBalance", nullNum),
			req("minimumPaymentAmount", nullNum),
			req("nextMonthlyPayment", nullNum),
		))),
		req("loanOrigination", orNull(object(
			req("originationDate", orNull(date())),
			req("originationPrincipalAmount", nullNum),
		))),
	)
}

func v1Transaction() Obj {
	nullStr := orNull(str())
	return object(
		req("id", str()),
		req("summary", str()),
		req("createdAt", dateTime()),
		req("postedAt", orNull(dateTime())),
		req("amount", describe(number(), "Negative for outflows.")),
		req("currency", currency()),
		req("isPending", boolean()),
		req("subAccount", nullStr),
		req("merchantName", nullStr),
		req("categoryId", nullStr),
		req("fees", orNull(number())),
		req("feeType", nullStr),
		req("netAmount", orNull(number())),
		req("source", nullStr),
		req("type", nullStr),
		req("provider", ref("Provider")),
		req("accountId", str()),
	)
}
