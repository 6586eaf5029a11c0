package spec

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
