package spec

import "net/http"

// v2CategorySource documents Transaction.categorySource.
func v2CategorySource() Obj {
	return describe(enum("provider", "rule", "user"),
		"Where the category (or its absence) comes from: provider (as synced; also when there is no category), "+
			"rule (categoryRuleId names the rule) or user (set with PATCH /transactions/{id}). "+
			"Precedence: user > rule > provider. A sync never replaces a rule's or the user's category; "+
			"rules never replace the user's; archiving a rule gives back what only it decided; "+
			"the user's choice on a pending transaction carries over to the posted one that replaces it.")
}

// v2CategoryRuleID documents Transaction.categoryRuleId.
func v2CategoryRuleID() Obj {
	return describe(orNull(uuidS()), "The rule that set the category when categorySource is rule; null otherwise.")
}

// v2RulePreviewRoutes is POST /rules/preview. It changes nothing; like
// every v2 POST it accepts an Idempotency-Key (a retry replays the page).
func v2RulePreviewRoutes() []route {
	return []route{
		{"/rules/preview", "post", op{
			id: "previewRule", summary: "Preview what a rule would change",
			desc: "Validates a rule body exactly as POST /rules does and returns, without saving or changing " +
				"anything, how many of the caller's stored transactions (within the credential's scope) creating " +
				"it would change now, and the first page of them with their current and new category and " +
				"visibility, newest first. Pass nextCursor with the same body for the next page. A rule so broad " +
				"that the preview cannot finish within its time budget answers 400 asking for narrower conditions.",
			params: []Obj{paramRef("cursor"), paramRef("limit")},
			body:   ref("RuleCreate"),
			status: http.StatusOK, respDesc: "How many stored transactions the rule would change, and a page of them.",
			schema: ref("RulePreview"),
			errors: bodyErrors(),
		}},
	}
}

// v2RulePreviewSchemas are the schemas of POST /rules/preview.
func v2RulePreviewSchemas() Obj {
	return Obj{
		{"RulePreview", describe(object(
			req("count", describe(count(), "How many of the caller's stored transactions creating the rule would change.")),
			req("data", array(ref("RulePreviewChange"))),
			req("hasMore", boolean()),
			req("nextCursor", describe(orNull(str()), "Pass as cursor, with the same body, for the next page.")),
		), "What creating the rule would change now, within the caller's scope; nothing is saved. "+
			"The changes are listed newest first, as transactions are.")},
		{"RulePreviewChange", describe(object(
			req("transaction", ref("Transaction")),
			req("current", ref("RulePreviewState")),
			req("new", ref("RulePreviewState")),
		), "One transaction the rule would change: the transaction as stored, its rule-dependent state now and after.")},
		{"RulePreviewState", describe(object(
			req("categoryId", orNull(uuidS())),
			req("categorySource", v2CategorySource()),
			req("categoryRuleId", orNull(uuidS())),
			req("merchantName", orNull(str())),
			req("hidden", boolean()),
		), "The rule-dependent state of a transaction. categoryRuleId of a change's new state is null when "+
			"the rule being previewed would set the category (it has no id yet).")},
	}
}
