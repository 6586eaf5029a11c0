package spec

import (
	"net/http"

	"github.com/finsync/finsync/domain"
)

// v2Statuses maps v2's reusable error responses to their status codes.
func v2Statuses() map[string]int {
	statuses := map[string]int{
		"BadRequest":           http.StatusBadRequest,
		"Unauthorized":         http.StatusUnauthorized,
		"Forbidden":            http.StatusForbidden,
		"NotFound":             http.StatusNotFound,
		"RateLimited":          http.StatusTooManyRequests,
		"InternalError":        http.StatusInternalServerError,
		"ProviderUnavailable":  http.StatusBadGateway,
		serviceUnavailableName: http.StatusServiceUnavailable,
		publicBadRequestName:   http.StatusBadRequest,
	}
	for name, status := range v2InputStatuses() {
		statuses[name] = status
	}
	for name, status := range v2IdempotencyStatuses() {
		statuses[name] = status
	}
	statuses["WebhookForbidden"] = http.StatusForbidden
	return statuses
}

// V2 builds the OpenAPI document of API v2 for the given providers (the
// registry's profiles, in its order).
func V2(provs []domain.ProviderProfile) Obj {
	return Obj{
		{"openapi", "3.1.0"},
		{"info", Obj{
			{"title", "finsync API"},
			{"version", "2.0.0"},
			{"description", "Version 2 of the finsync API: stored accounts, transactions, balances, " +
				"bank connections, holdings and investment activity, with writes for manual accounts, " +
				"categories, transaction categories and rules." + inputLimitsText +
				" Every POST and PATCH accepts an Idempotency-Key header: " + idempotencyText},
			{"contact", contact()},
		}},
		{"servers", []Obj{{{"url", "/v2"}}}},
		{"security", []Obj{{{bearerScheme, []string{}}}}},
		{"tags", tagList(v2Tags())},
		{"paths", renderPaths(v2Routes(), v2Statuses())},
		{"components", Obj{
			{"securitySchemes", securitySchemes()},
			{"headers", headerComponents(requestIDToken())},
			{"parameters", v2Parameters()},
			{"responses", v2Responses()},
			{"schemas", v2Schemas(provs)},
		}},
		{UnroutedExtension, v2Unrouted()},
	}
}

// authErrors are the errors every authenticated v2 operation may return
// (BadRequest among them: any may be sent a parameter it does not accept),
// and extra.
func authErrors(extra ...string) []string {
	return withoutRepeats([]string{"BadRequest", "Unauthorized", "Forbidden", "RateLimited", "InternalError",
		serviceUnavailableName}, extra)
}

func v2Routes() []route {
	routes := tagged(tagService(), []route{
		{"/health", "get", op{
			id: "getHealth", summary: "Service health",
			desc: "Whether the service can serve stored data: 200 with status ok, or 503 with status degraded " +
				"and Retry-After while the database is unreachable. Needs no credentials.",
			public: true,
			status: http.StatusOK, respDesc: "The service is up (status ok or degraded).", schema: ref("Health"),
			more: Obj{{"503", jsonResponse("The database is down (status degraded).", ref("Health"),
				responseHeaders(public, KV{hdrRetryAfter, headerRef("RetryAfter")}))}},
		}},
		{"/openapi.json", "get", op{
			id: "getOpenAPI", summary: "This document",
			desc:   "This OpenAPI document, from which clients can be generated. Needs no credentials.",
			public: true,
			status: http.StatusOK, respDesc: "The OpenAPI document.", schema: openapiDocSchema(),
			errors: []string{publicBadRequestName},
		}},
	})
	routes = append(routes, tagged(tagUser(), []route{{"/me", "get", op{
		id: "getMe", summary: "The authenticated user",
		desc: "The user the credential belongs to; a way to check that a key works and that Storage Mode is on " +
			"(403 STORAGE_MODE_REQUIRED otherwise).",
		status: http.StatusOK, respDesc: "The user.", schema: ref("User"), errors: authErrors(),
	}}})...)
	routes = append(routes, tagged(tagAccounts(), v2AccountRoutes())...)
	routes = append(routes, tagged(tagTransactions(), v2TransactionRoutes())...)
	routes = append(routes, tagged(tagTransfers(), v2TransferRoutes())...)
	routes = append(routes, tagged(tagCategories(), v2CategoryRoutes())...)
	routes = append(routes, tagged(tagInvestments(), v2InvestmentRoutes())...)
	routes = append(routes, tagged(tagRules(), v2RuleRoutes())...)
	routes = append(routes, tagged(tagRules(), v2RulePreviewRoutes())...)
	routes = append(routes, tagged(tagWebhooks(), v2WebhookRoutes())...)
	return withIdempotency(routes)
}

func v2AccountRoutes() []route {
	account := wrap("account", ref("Account"))
	return []route{
		{"/accounts", "get", op{
			id: "listAccounts", summary: "List accounts",
			desc: "The caller's accounts within the credential's scope, bank-synced and manual, active ones " +
				"by default, a page at a time.",
			params: []Obj{paramRef("bankConnectionId"), paramRef("accountStatusFilter"), paramRef("cursor"), paramRef("limit")},
			status: http.StatusOK, respDesc: "A page of accounts.",
			schema: object(req("accounts", array(ref("Account"))), req("pageInfo", ref("PageInfo"))),
			errors: authErrors("BadRequest", "NotFound"),
		}},
		{"/accounts", "post", op{
			id: "createAccount", summary: "Create a manual account",
			desc: "Creates a manual account, one the user maintains by hand; a credential limited to some " +
				"accounts gets the new account added to its scope. A starting balance records that day's " +
				"balance snapshot, and linked destinations receive the change.",
			body:   ref("AccountCreate"),
			status: http.StatusCreated, respDesc: "The created account.", schema: account,
			errors: bodyErrors(),
		}},
		{"/accounts/balance-history", "get", op{
			id: "listBalanceHistory", summary: "Daily balance snapshots",
			desc: "Stored daily balance snapshots of the caller's accounts, optionally of one connection or " +
				"account and between two dates (inclusive), a page at a time.",
			params: []Obj{
				paramRef("bankConnectionId"), paramRef("bankAccountId"), paramRef("startDate"),
				paramRef("endDate"), paramRef("cursor"), paramRef("limit"),
			},
			status: http.StatusOK, respDesc: "A page of balance snapshots.",
			schema: object(req("balanceHistory", array(ref("BalanceHistoryEntry"))), req("pageInfo", ref("PageInfo"))),
			errors: authErrors("BadRequest", "NotFound"),
		}},
		{"/accounts/{accountId}", "get", op{
			id: "getAccount", summary: "One account",
			desc: "One account by its id. An account that is missing, another user's, or outside the " +
				"credential's scope answers 404 alike.", params: []Obj{paramRef("accountId")},
			status: http.StatusOK, respDesc: "The account.", schema: account,
			errors: authErrors("BadRequest", "NotFound"),
		}},
		{"/accounts/{accountId}", "patch", op{
			id: "updateAccount", summary: "Update a manual account",
			desc: "Changes the given fields of a manual account; a changed balance records that day's balance " +
				"snapshot, and linked destinations receive the change. A bank-synced account answers 400.", params: []Obj{paramRef("accountId")},
			body:   ref("AccountUpdate"),
			status: http.StatusOK, respDesc: "The updated account.", schema: account,
			errors: bodyErrors("NotFound"),
		}},
		{"/accounts/{accountId}/not-duplicate", "post", op{
			id: "markAccountNotDuplicate", summary: "Say an account is not a duplicate",
			desc: "finsync's addition. Clears the account's duplicateOfAccountId for good: that pair of accounts " +
				"is never marked again, and the account's transactions are listed again. An account without the " +
				"mark is answered as it is, so a retry is harmless. An account that is missing, another user's, " +
				"or outside the credential's scope answers 404 alike.", params: []Obj{paramRef("accountId")},
			status: http.StatusOK, respDesc: "The account, without the mark.", schema: account,
			errors: authErrors("BadRequest", "NotFound"),
		}},
		{"/accounts/{accountId}", "delete", op{
			id: "closeAccount", summary: "Close a manual account",
			desc: "Closes a manual account (status closed); its transactions and balance history are kept. " +
				"A bank-synced account answers 400.", params: []Obj{paramRef("accountId")},
			status: http.StatusOK, respDesc: "The closed account.", schema: account,
			errors: authErrors("BadRequest", "NotFound"),
		}},
	}
}

func v2TransactionRoutes() []route {
	return []route{
		{"/transactions", "get", op{
			id: "listTransactions", summary: "List stored transactions",
			desc: "Stored transactions only (no provider is called), newest first, posted ones by default; " +
				"the dates bound postedDate. Transactions hidden by a rule are left out unless includeHidden is true; " +
				"those of an account marked as a duplicate (duplicateOfAccountId) unless includeDuplicates is true.",
			params: []Obj{
				paramRef("bankConnectionId"), paramRef("bankAccountId"), paramRef("categoryId"),
				paramRef("transactionStatusFilter"), paramRef("startDate"), paramRef("endDate"),
				paramRef("cursor"), paramRef("limit"), paramRef("includeHidden"), paramRef("includeDuplicates"),
				paramRef("transfersFilter"),
			},
			status: http.StatusOK, respDesc: "A page of transactions.",
			schema: object(req("transactions", array(ref("Transaction"))), req("pageInfo", ref("PageInfo"))),
			errors: authErrors("BadRequest", "NotFound"),
		}},
		{"/transactions/{id}", "patch", op{
			id: "updateTransaction", summary: "Set or clear a transaction's category",
			desc: "Assigns a category to a transaction (categoryId), or clears it (null); categoryId is the " +
				"only field. Answers the updated transaction, unwrapped.",
			params: []Obj{pathParam("id", "Transaction id.", uuidS())},
			body:   object(req("categoryId", orNull(uuidS()))),
			status: http.StatusOK, respDesc: "The updated transaction.", schema: ref("Transaction"),
			errors: bodyErrors("NotFound"),
		}},
		{"/bank-connections", "get", op{
			id: "listBankConnections", summary: "List stored bank connections", tags: tagConnections().only(),
			desc: "The caller's stored bank connections with their last provider error and sync health; " +
				"no provider is called. Disabled connections are listed only on request.",
			params: []Obj{queryParam("status", "Lifecycle filter: active (non-disabled), all or disabled.",
				enum("active", "all", "disabled").with("default", "active"))},
			status: http.StatusOK, respDesc: "The bank connections.",
			schema: object(req("bankConnections", array(ref("BankConnection")))),
			errors: authErrors("BadRequest"),
		}},
	}
}

func v2CategoryRoutes() []route {
	categoryID := pathParam("id", "Category id.", uuidS())
	return []route{
		{"/categories", "get", op{
			id: "listCategories", summary: "List categories",
			desc:   "Every category the caller can assign: those synced from providers and the manual ones.",
			status: http.StatusOK, respDesc: "The categories.",
			schema: object(req("categories", array(ref("Category")))),
			errors: authErrors(),
		}},
		{"/categories", "post", op{
			id: "createCategory", summary: "Create a manual category",
			desc: "Creates a manual category, optionally in a group (created by name when new).",
			body: object(
				req("name", name()),
				opt("group", orNull(label())),
				opt("description", text()),
			),
			status: http.StatusCreated, respDesc: "The created category.", schema: ref("Category"),
			errors: bodyErrors(),
		}},
		{"/categories/{id}", "patch", op{
			id: "updateCategory", summary: "Edit a category",
			desc: "Edits the name, group or description of a category. Categories of read-only providers " +
				"answer 400; edits to synced categories persist across later syncs.", params: []Obj{categoryID},
			body:   patchObject(opt("name", name()), opt("group", orNull(label())), opt("description", text())),
			status: http.StatusOK, respDesc: "The updated category.", schema: ref("Category"),
			errors: bodyErrors("NotFound"),
		}},
		{"/category-groups", "get", op{
			id: "listCategoryGroups", summary: "List category groups",
			desc:   "The groups the caller's categories belong to.",
			status: http.StatusOK, respDesc: "The category groups.",
			schema: object(req("categoryGroups", array(ref("CategoryGroup")))),
			errors: authErrors(),
		}},
	}
}

func v2InvestmentRoutes() []route {
	return []route{
		{"/holdings", "get", op{
			id: "listHoldings", summary: "List investment holdings",
			desc: "Stored investment holdings and the securities they reference, a page at a time. Answers 502 " +
				"only when holdings were never stored because the provider was unavailable at every attempt.",
			params: []Obj{paramRef("bankConnectionId"), paramRef("bankAccountId"), paramRef("cursor"), paramRef("limit")},
			status: http.StatusOK, respDesc: "A page of holdings and the securities they reference.",
			schema: object(
				req("holdings", array(ref("Holding"))),
				req("securities", array(ref("Security"))),
				req("pageInfo", ref("PageInfo")),
			),
			errors: authErrors("BadRequest", "NotFound", "ProviderUnavailable"),
		}},
		{"/investment-transactions", "get", op{
			id: "listInvestmentTransactions", summary: "List investment transactions",
			desc: "Stored investment transactions between two dates (inclusive) and the securities they " +
				"reference, a page at a time. Answers 502 only when they were never stored because the provider " +
				"was unavailable at every attempt.",
			params: []Obj{
				paramRef("bankConnectionId"), paramRef("bankAccountId"), paramRef("startDate"),
				paramRef("endDate"), paramRef("cursor"), paramRef("limit"),
			},
			status: http.StatusOK, respDesc: "A page of investment transactions and the securities they reference.",
			schema: object(
				req("investmentTransactions", array(ref("InvestmentTransaction"))),
				req("securities", array(ref("Security"))),
				req("pageInfo", ref("PageInfo")),
			),
			errors: authErrors("BadRequest", "NotFound", "ProviderUnavailable"),
		}},
	}
}

func v2RuleRoutes() []route {
	ruleID := pathParam("ruleId", "Rule id.", uuidS())
	return []route{
		{"/rules", "get", op{
			id: "listRules", summary: "List rules",
			desc:   "The caller's transaction rules; archived ones only on request.",
			params: []Obj{queryParam("includeArchived", "Also list archived rules.", boolean().with("default", false))},
			status: http.StatusOK, respDesc: "The rules.",
			schema: object(req("rules", array(ref("Rule")))),
			errors: authErrors("BadRequest"),
		}},
		{"/rules", "post", op{
			id: "createRule", summary: "Create a rule",
			desc: "Creates a rule that categorizes, renames the merchant of, or hides matching stored " +
				"transactions, and applies it to those already stored in the background. With a credential " +
				"limited to some accounts the rule applies to those only and its conditions may name only them.", body: ref("RuleCreate"),
			status: http.StatusCreated, respDesc: "The created rule.", schema: ref("Rule"),
			errors: bodyErrors(),
		}},
		{"/rules/{ruleId}", "patch", op{
			id: "updateRule", summary: "Update a rule",
			desc: "Changes the conditions, outcomes or priority of a rule and applies it again to stored " +
				"transactions in the background.", params: []Obj{ruleID}, body: ref("RuleUpdate"),
			status: http.StatusOK, respDesc: "The updated rule.", schema: ref("Rule"),
			errors: bodyErrors("NotFound"),
		}},
		{"/rules/{ruleId}", "delete", op{
			id: "archiveRule", summary: "Archive a rule",
			desc: "Archives a rule: it no longer runs and stays listed when archived rules are asked for, with " +
				"archivedAt set.", params: []Obj{ruleID},
			status: http.StatusOK, respDesc: "The archived rule.", schema: ref("Rule"),
			errors: authErrors("BadRequest", "NotFound"),
		}},
	}
}

// wrap is an object with a single required property.
func wrap(name string, schema Obj) Obj { return object(req(name, schema)) }

func v2Parameters() Obj {
	limit := intRange(1, 250).with("default", 50)
	return Obj{
		{"accountId", pathParam("accountId", "The account's id.", uuidS())},
		{"bankConnectionId", queryParam("bankConnectionId", "Only items of this bank connection.", uuidS())},
		{"bankAccountId", queryParam("bankAccountId", "Only items of this account.", uuidS())},
		{"categoryId", queryParam("categoryId", "Only transactions with this category.", uuidS())},
		{"startDate", queryParam("startDate", "Inclusive lower bound on the date.", date())},
		{"endDate", queryParam("endDate", "Inclusive upper bound on the date.", date())},
		{"cursor", queryParam("cursor", "Opaque cursor from a previous pageInfo.nextCursor.", str())},
		{"limit", queryParam("limit", "Page size.", limit)},
		{"accountStatusFilter", queryParam("status", "Account status filter.",
			enum("active", "closed", "all").with("default", "active"))},
		{"transactionStatusFilter", queryParam("status", "Transaction status filter.",
			enum("pending", "posted", "deleted", "all").with("default", "posted"))},
		{"includeHidden", queryParam("includeHidden", "Include transactions hidden by a rule.",
			boolean().with("default", false))},
		{"includeDuplicates", queryParam("includeDuplicates", "finsync's addition: also list the transactions "+
			"of accounts marked as duplicates of another account of the user (duplicateOfAccountId). A key "+
			"whose scope lacks the original account always sees the duplicate's.", boolean().with("default", false))},
		{"transfersFilter", queryParam("transfers", "Sides of transfers the credential sees: include them, "+
			"exclude them (spending and income only), or list only them.",
			enum("include", "exclude", "only").with("default", "include"))},
	}
}

// v2ErrorCodes are the codes of the v2 error envelope.
func v2ErrorCodes() []string {
	codes := []string{
		"BAD_REQUEST", "STORAGE_MODE_REQUIRED", "SUBSCRIPTION_REQUIRED", "NOT_FOUND",
		"METHOD_NOT_ALLOWED", "RATE_LIMITED", "PROVIDER_UNAVAILABLE", "INTERNAL_ERROR",
		"SERVICE_UNAVAILABLE",
	}
	codes = append(codes, v2IdempotencyErrorCodes()...)
	codes = append(codes, codeScopedKeyNotAllowed)
	return append(codes, v2InputErrorCodes()...)
}

// v2Unrouted are the responses to requests that match no operation.
func v2Unrouted() Obj {
	return unrouted(
		errorResponse("No such path.", responseHeaders(maybeLimited), "NOT_FOUND"),
		errorResponse("The path exists but not with this method.", responseHeaders(maybeLimited), "METHOD_NOT_ALLOWED"),
	)
}

func v2Responses() Obj {
	errResp := func(desc string, mode headerMode, codes ...string) Obj {
		return errorResponse(desc, responseHeaders(mode), codes...)
	}
	responses := Obj{
		{"BadRequest", errResp("Invalid parameters or body (see the limits in the description above), "+
			"a path id that is not a UUID, a query string that does not decode, "+unknownQueryText+
			", or a write to a bank-synced account.", limited, "BAD_REQUEST")},
		{publicBadRequestName, publicBadRequest()},
		{"Unauthorized", jsonResponse("Missing or invalid Authorization header.",
			object(req("error", constant("Missing or invalid Authorization header"))),
			responseHeaders(public))},
		{"Forbidden", errResp("Storage Mode is off, or the subscription is not active.",
			maybeLimited, "STORAGE_MODE_REQUIRED", "SUBSCRIPTION_REQUIRED")},
		{"NotFound", errResp("The resource is missing, not the caller's, or outside the key's scope.",
			limited, "NOT_FOUND")},
		{"RateLimited", append(errorResponse("Rate limit exceeded; retryAfter holds the seconds to wait, as Retry-After does.",
			responseHeaders(limited, KV{hdrRetryAfter, headerRef("RetryAfter")}), "RATE_LIMITED"),
			KV{ErrorFieldsExtension, []string{"retryAfter"}})},
		{"InternalError", errResp("Unexpected server error.", maybeLimited, "INTERNAL_ERROR")},
		{"ProviderUnavailable", errResp("The data was never stored and the provider is unavailable.",
			limited, "PROVIDER_UNAVAILABLE")},
		{serviceUnavailableName, serviceUnavailable(contractV2)},
	}
	responses = append(responses, v2IdempotencyResponses()...)
	responses = append(responses, KV{"WebhookForbidden", errResp("Storage Mode is off, the subscription is not active, "+
		"or the key is limited to some accounts: webhooks receive events of all the user's accounts, so only a key "+
		"without an account scope manages them; "+codeScopedKeyNotAllowed+" is our addition to "+contractV2+".",
		maybeLimited, "STORAGE_MODE_REQUIRED", "SUBSCRIPTION_REQUIRED", codeScopedKeyNotAllowed)})
	return append(responses, v2InputResponses()...)
}
