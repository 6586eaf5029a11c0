package spec

// Tags group a document's operations for readers and generated clients.
// Every operation carries exactly one tag, set for a whole group of routes
// by tagged; every tag is listed, with its description, at the top of the
// document (tagList). TestOperationsAreDescribedAndTagged checks both.

// tag is one group of operations.
type tag struct {
	name string
	desc string
}

// Tags shared by both versions.

func tagService() tag {
	return tag{"Service", "Health of the service and this document; no credentials needed."}
}

func tagAccounts() tag { return tag{"Accounts", "Stored accounts and their balances."} }

func tagConnections() tag {
	return tag{"Bank connections", "Stored connections to providers, with how their syncs are going; " +
		"listing them never calls a provider."}
}

func tagTransactions() tag { return tag{"Transactions", "Stored transactions."} }

func tagInvestments() tag {
	return tag{"Investments", "Stored holdings and investment transactions, with the securities they reference."}
}

// only is the tags value of an operation in group t alone.
func (t tag) only() []string { return []string{t.name} }

// tagged sets t on every route of the group that has no tag yet.
func tagged(t tag, routes []route) []route {
	out := make([]route, len(routes))
	for i, r := range routes {
		if len(r.op.tags) == 0 {
			r.op.tags = t.only()
		}
		out[i] = r
	}
	return out
}

// tagList renders the document's tags in the order given.
func tagList(tags []tag) []Obj {
	out := make([]Obj, len(tags))
	for i, t := range tags {
		out[i] = Obj{{"name", t.name}, {"description", t.desc}}
	}
	return out
}

// contact names who answers for the API; the document names no license
// because the project has not chosen one.
func contact() Obj { return Obj{{"name", "finsync maintainers"}} }

// Tags of version 2 only.

func tagUser() tag { return tag{"User", "The user the credential belongs to."} }

func tagCategories() tag {
	return tag{"Categories", "Categories assignable to transactions, synced or manual, and their groups."}
}

func tagRules() tag {
	return tag{"Rules", "Transaction rules that categorize, rename or hide stored transactions as they sync."}
}

// v1Tags are the tags of version 1, in the order its document lists them.
func v1Tags() []tag {
	return []tag{tagService(), tagAccounts(), tagConnections(), tagTransactions(), tagInvestments()}
}

// v2Tags are the tags of version 2, in the order its document lists them.
func v2Tags() []tag {
	return []tag{
		tagService(), tagUser(), tagAccounts(), tagTransactions(), tagTransfers(), tagConnections(),
		tagCategories(), tagInvestments(), tagRules(), tagWebhooks(),
	}
}
