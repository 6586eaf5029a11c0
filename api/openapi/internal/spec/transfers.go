package spec

import "net/http"

// tagTransfers groups the transfer operations (our addition to the API
// contract, docs/api-v2.md).
func tagTransfers() tag {
	return tag{"Transfers", "Transfers between the user's own accounts, our addition to " + contractV2 + ": " +
		"an outflow paired with the inflow it became in another account, detected as transactions sync or " +
		"paired by hand; see docs/transfers.md."}
}

// v2TransferRoutes are the operations of /transfers.
func v2TransferRoutes() []route {
	unpaired := Obj{{"description", "The transfer is unpaired; the pair is never detected again."},
		{"headers", responseHeaders(limited)}}
	return []route{
		{"/transfers", "get", op{
			id: "listTransfers", summary: "List transfers",
			desc: "The transfers between the caller's accounts, newest outflow date first; the dates bound the " +
				"outflow's date and bankAccountId keeps transfers out of or into that account. A credential " +
				"limited to some accounts sees a transfer only when both its accounts are in scope.",
			params: []Obj{paramRef("bankAccountId"), paramRef("startDate"), paramRef("endDate"),
				paramRef("cursor"), paramRef("limit")},
			status: http.StatusOK, respDesc: "A page of transfers.",
			schema: object(req("transfers", array(ref("Transfer"))), req("pageInfo", ref("PageInfo"))),
			errors: authErrors("BadRequest", "NotFound"),
		}},
		{"/transfers", "post", op{
			id: "createTransfer", summary: "Pair two transactions as a transfer",
			desc: "Pairs an outflow (negative amount) with an inflow (positive amount) of another of the " +
				"caller's accounts by hand (source user, confidence 1); a rejection of that pair is forgotten. " +
				"400 unless they are a live outflow and a live inflow of two different accounts the credential " +
				"reaches (a transaction outside its scope is unknown); 409 CONFLICT when either is already part " +
				"of a transfer (or a request with the same Idempotency-Key is in flight).",
			body:   object(req("outflowTransactionId", uuidS()), req("inflowTransactionId", uuidS())),
			status: http.StatusCreated, respDesc: "The transfer.", schema: wrap("transfer", ref("Transfer")),
			errors: bodyErrors(),
		}},
		{"/transfers/{id}", "delete", op{
			id: "deleteTransfer", summary: "Unpair a transfer",
			desc: "Unpairs a transfer and remembers it: no later sync, rule run or detection pass pairs " +
				"these two transactions again (a POST may). A transfer the credential does not see answers 404.",
			params: []Obj{pathParam("id", "Transfer id.", uuidS())},
			status: http.StatusNoContent, success: unpaired,
			errors: authErrors("BadRequest", "NotFound"),
		}},
	}
}

// v2TransferSchema is the Transfer object.
func v2TransferSchema() Obj {
	positive := number().with("exclusiveMinimum", 0)
	return describe(object(
		req("id", uuidS()),
		req("outflowTransactionId", uuidS()),
		req("inflowTransactionId", uuidS()),
		req("outflowAccountId", uuidS()),
		req("inflowAccountId", uuidS()),
		req("amount", describe(positive, "The amount moved, positive, in the outflow's currency.")),
		req("currency", currency()),
		req("inflowAmount", describe(positive, "The amount received, positive, in the inflow's currency.")),
		req("inflowCurrency", currency()),
		req("confidence", describe(number().with("minimum", 0).with("maximum", 1),
			"How sure detection is (1 for a pair made by hand).")),
		req("source", enum("detected", "user")),
		req("reasons", describe(array(str()),
			"Short machine-readable reasons, for example same_amount, dates_2_days_apart, description_names_account.")),
		req("createdAt", dateTime()),
	), "An outflow and the inflow it became in another of the user's accounts: one move of money, neither "+
		"spending nor income.")
}
