package spec

import (
	"fmt"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/rules"
)

// V2Providers are the values of v2's Provider enum: the lowercase names
// of the given providers, in their order, then manual for hand-maintained
// data.
func V2Providers(provs []domain.ProviderProfile) []string {
	out := make([]string, 0, len(provs)+1)
	for _, p := range provs {
		out = append(out, p.Name)
	}
	return append(out, domain.ProviderManual)
}

func v2Schemas(provs []domain.ProviderProfile) Obj {
	s := Obj{
		{"Provider", enum(V2Providers(provs)...)},
		{"ErrorCode", enum(v2ErrorCodes()...)},
		{"ErrorDetail", object(req("code", ref("ErrorCode")), req("message", str()))},
		{errorSchema, describe(object(
			req("error", ref("ErrorDetail")),
			opt("retryAfter", describe(count(), "Seconds to wait before retrying, as Retry-After says; "+
				"present on 429 RATE_LIMITED only.")),
		), "The error envelope of every error response but 401 (whose body is a plain string). Each "+
			"response's description names the codes error.code takes there.")},
		{"Health", object(req("status", enum("ok", "degraded")), req("timestamp", dateTime()))},
		{"User", object(
			req("userId", uuidS()),
			req("email", strFormat("email")),
			req("storageMode", boolean()),
		)},
		{"PageInfo", object(req("nextCursor", orNull(str())), req("hasMore", boolean()))},
		{"Account", v2Account()},
	}
	s = append(s, v2LiabilitySchemas()...)
	s = append(s,
		KV{"AccountCreate", v2AccountWrite(false)},
		KV{"AccountUpdate", v2AccountWrite(true)},
		KV{"BalanceHistoryEntry", object(
			req("id", uuidS()),
			req("bankAccountId", uuidS()),
			req("accountName", str()),
			req("date", date()),
			req("balance", number()),
			req("currency", currency()),
			req("derived", v2BalanceDerived()),
		)},
		KV{"Transaction", v2Transaction()},
		KV{"Transfer", v2TransferSchema()},
		KV{"BankConnection", v2BankConnection()},
		KV{"BankConnectionHealth", v2BankConnectionHealth()},
		KV{"Category", object(
			req("id", uuidS()),
			req("provider", ref("Provider")),
			req("providerId", orNull(str())),
			req("name", str()),
			req("group", orNull(str())),
			req("categoryGroupId", orNull(uuidS())),
			req("description", str()),
		)},
		KV{"CategoryGroup", object(req("id", uuidS()), req("name", str()), req("provider", ref("Provider")))},
		KV{"Holding", v2Holding()},
		KV{"Security", object(
			req("id", uuidS()),
			req("symbol", orNull(str())),
			req("name", str()),
			req("type", str()),
			req("closePrice", orNull(number())),
			req("currency", orNull(currency())),
		)},
		KV{"InvestmentTransaction", v2InvestmentTransaction()},
	)
	s = append(s, v2WebhookSchemas()...)
	s = append(s, v2RuleSchemas()...)
	return append(s, v2RulePreviewSchemas()...)
}

func v2Account() Obj {
	return object(
		req("id", uuidS()),
		req("providerAccountId", orNull(str())),
		req("bankConnectionId", orNull(uuidS())),
		req("bankConnectionStatus", orNull(str())),
		req("provider", ref("Provider")),
		req("institutionName", orNull(str())),
		req("name", str()),
		req("mask", orNull(str())),
		req("type", orNull(str())),
		req("subtype", orNull(str())),
		req("currency", currency()),
		req("currentBalance", orNull(describe(number(), "For liabilities, the amount owed."))),
		req("availableBalance", orNull(number())),
		req("balanceAsOf", orNull(describe(dateTime(), "When the balances were last fetched from the provider. When a provider cannot give them (a spent daily quota, a failed or partial answer) the last known balances stay, with this time unchanged."))),
		req("status", enum("active", "closed")),
		req("closedAt", orNull(dateTime())),
		req("liability", orNull(ref("Liability"))),
		req("duplicateOfAccountId", orNull(describe(uuidS(), "finsync's addition: set when a newer connection of "+
			"the user reaches the same real account as this one of an older connection; it names the older "+
			"account, and this account's transactions are left out of the transaction listings unless "+
			"includeDuplicates is true. Null otherwise; POST /accounts/{accountId}/not-duplicate clears it for good."))),
	)
}

// v2AccountWrite is the body of POST /accounts, or of PATCH when update.
func v2AccountWrite(update bool) Obj {
	fields := []field{
		req("name", name()),
		req("type", name()),
		req("currency", currency()),
		opt("institutionName", orNull(label())),
		opt("subtype", orNull(label())),
		opt("mask", orNull(label())),
		opt("currentBalance", orNull(amount())),
		opt("availableBalance", orNull(amount())),
		opt("liability", orNull(ref("LiabilityInput"))),
	}
	if update {
		return patchObject(fields...)
	}
	return object(fields...)
}

// liabilityFields are the Liability fields; interestRateType is added to
// the response form only, and the request form documents the input limits.
func liabilityFields(response bool) []field {
	number, str := number, str
	if !response {
		number, str = amount, text
	}
	f := []field{
		req("type", enum("credit", "student", "mortgage")),
		opt("minimumPaymentAmount", number()),
		opt("nextPaymentDueDate", date()),
		opt("lastPaymentAmount", number()),
		opt("lastPaymentDate", date()),
		opt("interestRate", number()),
		opt("isOverdue", boolean()),
		opt("lastStatementBalance", number()),
		opt("aprs", array(ref(aprSchema(response)))),
		opt("loanName", str()),
		opt("loanStatus", object(req("type", str()), opt("endDate", date()))),
		opt("repaymentPlan", object(req("type", str()), req("description", str()))),
		opt("pslfStatus", object(
			opt("paymentsRemaining", number()),
			opt("paymentsMade", number()),
			opt("estimatedEligibilityDate", date()),
		)),
		opt("originationDate", date()),
		opt("originationPrincipalAmount", number()),
		opt("expectedPayoffDate", date()),
		opt("outstandingInterestAmount", number()),
		opt("ytdInterestPaid", number()),
		opt("ytdPrincipalPaid", number()),
	}
	if response {
		f = append(f, opt("interestRateType", describe(str(), "For example fixed.")))
	}
	return append(f,
		opt("nextMonthlyPayment", number()),
		opt("escrowBalance", number()),
		opt("hasPmi", boolean()),
		opt("hasPrepaymentPenalty", boolean()),
		opt("propertyAddress", object(
			req("street", str()), req("city", str()), req("region", str()),
			req("postalCode", str()), req("country", str()),
		)),
		opt("loanTypeDescription", str()),
		opt("maturityDate", date()),
		opt("pastDueAmount", number()),
	)
}

func v2LiabilitySchemas() Obj {
	return Obj{
		{"Liability", describe(object(liabilityFields(true)...),
			"Debt details; only type is always present, unknown fields are omitted.")},
		{"LiabilityInput", describe(object(liabilityFields(false)...),
			"Liability details of a manual account (interestRateType is response-only).")},
		{"Apr", aprObject(true)},
		{"AprInput", aprObject(false)},
	}
}

// aprSchema names the Apr schema of the response or request form.
func aprSchema(response bool) string {
	if response {
		return "Apr"
	}
	return "AprInput"
}

// aprObject is an annual percentage rate; the request form documents the
// input limits.
func aprObject(response bool) Obj {
	number, str := number, str
	if !response {
		number, str = amount, text
	}
	return object(
		req("aprType", str()),
		opt("aprPercentage", number()),
		opt("balanceSubjectToApr", number()),
		opt("interestChargeAmount", number()),
	)
}

func v2Transaction() Obj {
	return object(
		req("id", uuidS()),
		req("bankConnectionId", orNull(uuidS())),
		req("bankAccountId", uuidS()),
		req("provider", ref("Provider")),
		req("providerId", str()),
		req("status", enum("pending", "posted", "deleted")),
		req("summary", str()),
		req("amount", describe(number(), "Negative for outflows.")),
		req("currency", currency()),
		req("authorizedDate", orNull(date())),
		req("postedDate", orNull(date())),
		req("merchantName", orNull(str())),
		req("categoryId", orNull(uuidS())),
		req("categorySource", v2CategorySource()),
		req("categoryRuleId", v2CategoryRuleID()),
		req("fees", orNull(number())),
		req("feeType", orNull(str())),
		req("netAmount", orNull(number())),
		req("subAccount", orNull(str())),
		req("paymentChannel", orNull(str())),
		req("checkNumber", orNull(str())),
		req("originalDescription", orNull(str())),
		req("source", orNull(str())),
		req("transferId", describe(orNull(uuidS()), "The transfer this transaction is a side of (our addition); "+
			"null when it is none, or when the credential does not see both its accounts.")),
	)
}

func v2BankConnection() Obj {
	return object(
		req("id", uuidS()),
		req("provider", ref("Provider")),
		req("institutionName", orNull(str())),
		req("institutionLogoUrl", orNull(str())),
		req("status", enum("active", "error", "disabled")),
		req("lastSyncedAt", orNull(dateTime())),
		req("lastProviderErrorCode", orNull(describe(str(), "For example ITEM_LOGIN_REQUIRED."))),
		req("lastProviderErrorMessage", orNull(str())),
		req("reconnectUrl", orNull(str())),
		req("nextSyncAt", orNull(dateTime())),
		req("health", describe(ref("BankConnectionHealth"),
			"Our addition: how the connection's syncs are going, shared by every process of the service.")),
	)
}

func v2BankConnectionHealth() Obj {
	return object(
		req("lastSuccessfulSyncAt", orNull(dateTime())),
		req("nextSyncAt", orNull(describe(dateTime(), "When the next periodic sync is due; null while disabled."))),
		req("breaker", describe(enum("closed", "open", "half_open"),
			"The worse of the provider's circuit breaker and the connection's institution's, as the workers last "+
				"reported them: open while syncs are held back after repeated provider failures, half_open once "+
				"a probe may go through.")),
		req("quotaRemaining", orNull(describe(count(),
			"Where the provider grants a quota of calls per account (a daily one, for some), the fewest calls left on "+
				"any account and endpoint of the connection in the current window, as the provider last reported "+
				"it; null for a provider without one, or when no window is current."))),
		req("consecutiveFailures", describe(count(), "Failed sync attempts since the last successful sync.")),
		req("heldBackUntil", orNull(describe(dateTime(),
			"While a worker holds the connection's sync back, when it tries again; null when the sync is not held back "+
				"(that time has passed, or a sync ran since)."))),
		req("heldBackReason", orNull(describe(enum("provider_quota", "rate_limit", "breaker_open"),
			"Why the sync is held back: provider_quota when the provider's request quota for the connection is spent "+
				"(a daily quota of calls, for example), rate_limit when a rate limit asks it to wait (the "+
				"service's own or the provider's 429), breaker_open while the provider's or the institution's circuit "+
				"breaker is open; null with heldBackUntil."))),
		req("consentExpiresAt", orNull(describe(dateTime(),
			"When the user's consent to the provider ends, as the provider reported it at the last successful sync "+
				"(an end user agreement's or a session's end, where the provider states one); null when the "+
				"provider reports none, or no sync has succeeded since a re-auth. After it, the connection's syncs fail "+
				"without calling the provider until the bank is linked again."))),
		req("action", describe(enum("none", "reauth", "wait", "contact_support"),
			"What the operator's app should do about the connection now: reauth when its consent has ended or the "+
				"provider needs the user (link the bank again, then `finsync connections reauth`); contact_support when "+
				"the provider refuses the connection for a reason no wait or re-link mends (bad credentials, a bad "+
				"request); wait while its sync is held back or failing for a while (it resumes by itself); none "+
				"otherwise, and for a disabled connection.")),
	)
}

func v2Holding() Obj {
	return object(
		req("id", uuidS()),
		req("accountId", uuidS()),
		req("securityId", uuidS()),
		req("quantity", number()),
		req("costBasis", orNull(number())),
		req("institutionPrice", number()),
		req("institutionValue", number()),
		req("currency", currency()),
		req("priceAsOf", orNull(date())),
		req("provider", ref("Provider")),
	)
}

func v2InvestmentTransaction() Obj {
	return object(
		req("id", uuidS()),
		req("accountId", uuidS()),
		req("securityId", orNull(uuidS())),
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
	)
}

// ruleLimitsText states the limits on a rule body; each answers 400
// BAD_REQUEST naming it.
func ruleLimitsText() string {
	return fmt.Sprintf("A rule body is at most %d bytes, with at most %d conditions and %d outcomes; "+
		"a oneOf condition has at most %d values; a matches expression is at most %d bytes and compiles to at most %d "+
		"instructions, and a rule's expressions together to at most %d. A user has at most %d active rules. "+
		"Past a limit the request answers 400 BAD_REQUEST naming it, before the rule is compiled or saved.",
		rules.MaxRuleBytes, rules.MaxConditions, rules.MaxOutcomes, rules.MaxListValues, rules.MaxPatternBytes,
		rules.MaxPatternInsts, rules.MaxRuleInsts, rules.MaxRulesPerUser)
}

func v2RuleSchemas() Obj {
	// Stored rules are listed as they were saved (before a limit existed,
	// perhaps); a body obeys today's limits.
	conditions := array(ref("RuleCondition")).with("minItems", 1)
	outcomes := array(ref("RuleOutcome")).with("minItems", 1)
	inConditions := conditions.with("maxItems", rules.MaxConditions)
	inOutcomes := outcomes.with("maxItems", rules.MaxOutcomes)
	priority := intRange(1, 100)
	scalar := []Obj{text(), amount()}
	return Obj{
		{"RuleCondition", object(
			req("field", enum("Account", "Summary", "OriginalDescription", "MerchantName", "Amount", "transactionDay")),
			req("operator", enum("is", "isNot", "contains", "doesNotContain", "startsWith", "endsWith",
				"oneOf", "matches", "gt", "gte", "lt", "lte", "between")),
			req("value", describe(Obj{{"anyOf", []Obj{text(), amount(),
				array(Obj{{"anyOf", scalar}}).with("maxItems", rules.MaxListValues)}}},
				fmt.Sprintf("A string, a number, or an array: the values of oneOf (at most %d) or the [low, high] of "+
					"between. The expression of matches is RE2 syntax of at most %d bytes, whose compiled program "+
					"is at most %d instructions (a counted repetition counts each copy); those of one rule together "+
					"at most %d.", rules.MaxListValues, rules.MaxPatternBytes, rules.MaxPatternInsts, rules.MaxRuleInsts))),
		)},
		{"RuleOutcome", Obj{{"oneOf", []Obj{
			describe(object(
				req("action", constant("updateTransaction")),
				req("field", constant("Category")),
				req("value", object(req("id", uuidS()), opt("value", text()))),
			), "Set the category."),
			describe(object(
				req("action", constant("updateTransaction")),
				req("field", constant("MerchantName")),
				req("value", text()),
			), "Set the merchant name."),
			describe(object(
				req("action", constant("hideTransaction")),
				req("value", constant(true)),
			), "Hide the transaction."),
		}}}},
		{"Rule", object(
			req("id", uuidS()),
			req("conditions", conditions),
			req("outcomes", outcomes),
			req("priority", priority),
			req("allowedAccountIds", orNull(array(uuidS()))),
			req("createdAt", dateTime()),
			req("updatedAt", dateTime()),
			req("archivedAt", orNull(dateTime())),
		)},
		{"RuleCreate", describe(object(req("conditions", inConditions), req("outcomes", inOutcomes), req("priority", priority)), ruleLimitsText())},
		{"RuleUpdate", describe(patchObject(opt("conditions", inConditions), opt("outcomes", inOutcomes), opt("priority", priority)), ruleLimitsText())},
	}
}
