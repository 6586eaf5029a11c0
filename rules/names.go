package rules

import "math"

// Condition fields.
const (
	// FieldAccount matches the transaction's account id.
	FieldAccount = "Account"
	// FieldSummary matches the transaction's summary (description).
	FieldSummary = "Summary"
	// FieldOriginalDescription matches the provider's original description.
	FieldOriginalDescription = "OriginalDescription"
	// FieldMerchantName matches the provider's merchant name.
	FieldMerchantName = "MerchantName"
	// FieldAmount matches the signed amount (outflow negative).
	FieldAmount = "Amount"
	// FieldTransactionDay matches the day of month (1..31) of the
	// transaction's date.
	FieldTransactionDay = "transactionDay"
)

// Condition operators.
const (
	// OpIs tests equality (case-insensitive for text).
	OpIs = "is"
	// OpIsNot tests inequality (case-insensitive for text).
	OpIsNot = "isNot"
	// OpContains tests that the text contains the value.
	OpContains = "contains"
	// OpDoesNotContain tests that the text does not contain the value.
	OpDoesNotContain = "doesNotContain"
	// OpStartsWith tests that the text starts with the value.
	OpStartsWith = "startsWith"
	// OpEndsWith tests that the text ends with the value.
	OpEndsWith = "endsWith"
	// OpOneOf tests that the text or account equals one of the values.
	OpOneOf = "oneOf"
	// OpMatches tests the text against an RE2 regular expression.
	OpMatches = "matches"
	// OpGt tests that the number is greater than the value.
	OpGt = "gt"
	// OpGte tests that the number is greater than or equal to the value.
	OpGte = "gte"
	// OpLt tests that the number is less than the value.
	OpLt = "lt"
	// OpLte tests that the number is less than or equal to the value.
	OpLte = "lte"
	// OpBetween tests that the number lies in [low, high], bounds included.
	OpBetween = "between"
)

// Outcome actions and the fields updateTransaction sets.
const (
	// ActionUpdateTransaction sets a field of the transaction.
	ActionUpdateTransaction = "updateTransaction"
	// ActionHideTransaction hides the transaction from listings.
	ActionHideTransaction = "hideTransaction"
	// OutcomeCategory is the updateTransaction field that sets the category.
	OutcomeCategory = "Category"
	// OutcomeMerchantName is the updateTransaction field that sets the
	// merchant name.
	OutcomeMerchantName = "MerchantName"
)

// Limits on a rule, checked before any costly work: the document's size
// and its item counts while decoding, then each pattern's text,
// then each pattern's compiled size (estimated from its parse tree, before
// anything is compiled), then the rule's total. A rule over a limit is
// refused with a *ValidationError whose message names the limit. They
// bound the memory and time one rule costs to validate, compile and
// evaluate: a valid rule compiles in well under a millisecond per thousand
// instructions.
const (
	// MaxRuleBytes is the largest rule document accepted, in bytes.
	MaxRuleBytes = 64 << 10
	// MaxConditions is the most conditions one rule may have.
	MaxConditions = 50
	// MaxOutcomes is the most outcomes one rule may have (one per field it
	// sets: category, merchant name, hidden).
	MaxOutcomes = 3
	// MaxListValues is the most values of a oneOf condition.
	MaxListValues = 100
	// MaxPatternBytes is the longest regular expression accepted.
	MaxPatternBytes = 512
	// MaxPatternInsts is the largest compiled program accepted for one
	// regular expression, in instructions (an upper bound computed from
	// the parse tree, so a counted repetition is refused whatever the
	// length of its text).
	MaxPatternInsts = 2000
	// MaxRuleInsts is the largest total of the compiled programs of one
	// rule's regular expressions, in instructions.
	MaxRuleInsts = 5000
	// MaxUserInsts is the largest total of the compiled programs of a
	// user's active rules' regular expressions, in instructions (500
	// rules of 100 instructions each), checked when a rule is created or
	// changed; a change that does not raise the total is accepted, and
	// stored rules over it keep running.
	MaxUserInsts = 50000
	// MaxRulesPerUser is the most active (not archived) rules a user may
	// have; archived rules do not count.
	MaxRulesPerUser = 500
)

// sizeLimits are the count limits a rule is held to: today's for a rule a
// client sends, none for a stored rule (saved under the limits of its
// day, it must keep running; the per-pattern limits, older, hold for both).
type sizeLimits struct {
	bytes, conditions, outcomes, listValues, ruleInsts int
	// exactPatterns checks a pattern's size against its compiled program
	// when the estimate is over the limit (stored rules, see
	// compileMatches).
	exactPatterns bool
}

// clientLimits are the limits on a rule a client sends.
func clientLimits() sizeLimits {
	return sizeLimits{MaxRuleBytes, MaxConditions, MaxOutcomes, MaxListValues, MaxRuleInsts, false}
}

// storedLimits are the (absent) count limits on a stored rule.
func storedLimits() sizeLimits {
	return sizeLimits{math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, true}
}

const (
	fieldList     = "Account, Summary, OriginalDescription, MerchantName, Amount, transactionDay"
	textOpList    = "is, isNot, contains, doesNotContain, startsWith, endsWith, oneOf, matches"
	accountOpList = "is, isNot, oneOf"
	numberOpList  = "is, gt, gte, lt, lte, between"
)
