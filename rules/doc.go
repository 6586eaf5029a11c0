// Package rules is finsync's transaction rule engine: it decodes and
// validates the rule JSON that clients send, compiles a rule once, and
// evaluates a user's compiled rules against stored transactions.
//
// The package is pure: no I/O, no database, no HTTP. The API layer calls
// [ValidateJSON] (or [DecodeDefinition] and [Validate]) when a rule is
// created, checks the category ids the rule names ([Rule.CategoryIDs])
// against the user's categories, and stores the [Definition]. The worker
// compiles stored rules with [Compile] or [CompileJSON], groups a user's
// active rules in a [Set], prepares each transaction once with [Prepare] and
// calls [Set.Apply].
//
// For a database, [Rule.Prefilter] is a necessary condition of a rule (what
// a scan may narrow candidates with) and [Rule.Exact] completes it into an
// exact test on rows whose texts are ASCII, where the rule has one; the
// package holds no SQL.
//
// A [Result] is what the rules decide, field by field. Whether a decision is
// written is the caller's business: for instance a category the user set by
// hand is never overwritten by a rule, so the caller ignores
// Result.Category for such a transaction.
//
// Rule JSON:
//
//	{"conditions": [{"field": "Summary", "operator": "contains", "value": "coffee"}],
//	 "outcomes":   [{"action": "updateTransaction", "field": "Category",
//	                 "value": {"id": "<uuid>", "value": "Coffee"}}],
//	 "priority": 10}
//
// Text conditions (Summary, OriginalDescription, MerchantName) compare
// case-insensitively with Unicode simple case folding, except matches, whose
// RE2 expression is case-sensitive as written (users add (?i) themselves). A
// missing text field is the empty string. Amount is signed, outflow negative.
// transactionDay is the day of month of the transaction's date.
package rules
