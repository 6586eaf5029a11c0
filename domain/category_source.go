package domain

// categorySourceRank orders the sources of a transaction's category: the
// user's choice outranks a rule's, which outranks the provider's. An empty
// or unknown source is the provider's (a row stored without a category).
func categorySourceRank(source string) int {
	switch source {
	case CategoryFromUser:
		return 3
	case CategoryFromRule:
		return 2
	default:
		return 1
	}
}

// CategoryKept reports whether a writer of source writer (the sync writes
// as CategoryFromProvider, the rule job as CategoryFromRule, the user as
// CategoryFromUser) must leave alone a category whose source is current.
// A writer may always replace a category of its own source or a lower one.
// Caveat: it mirrors the SQL function category_kept (migration 00016),
// which the database statements use; the two must change together.
func CategoryKept(current, writer string) bool {
	return categorySourceRank(current) > categorySourceRank(writer)
}
