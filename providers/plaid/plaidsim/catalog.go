package plaidsim

import (
	"github.com/finsync/finsync/providers/sim/simkit"
)

// plaidCat is Plaid's view of a catalogue merchant.
type plaidCat struct {
	pfcPrimary  string // personal_finance_category.primary
	pfcDetailed string // personal_finance_category.detailed, taxonomy v1
	pfcV2       string // detailed in taxonomy v2 ("" = same as v1)
	channel     string // payment_channel
	hasMerchant bool   // whether Plaid knows a merchant_name
}

// plaidMerchantKey names a catalogue merchant: its account kind and name.
type plaidMerchantKey struct {
	kind simkit.AccountKind
	name string
}

// plaidCats holds Plaid's view of every catalogue merchant (read-only).
var plaidCats = map[plaidMerchantKey]plaidCat{
	{simkit.Checking, "ACME Corp"}:             {"INCOME", "INCOME_WAGES", "INCOME_SALARY", "other", false},
	{simkit.Checking, "Whole Foods Market"}:    {"FOOD_AND_DRINK", "FOOD_AND_DRINK_GROCERIES", "", "in store", true},
	{simkit.Checking, "Greenpoint Properties"}: {"RENT_AND_UTILITIES", "RENT_AND_UTILITIES_RENT", "", "other", false},
	{simkit.Checking, "PG&E"}:                  {"RENT_AND_UTILITIES", "RENT_AND_UTILITIES_GAS_AND_ELECTRICITY", "", "online", true},
	{simkit.Checking, "Comcast"}:               {"RENT_AND_UTILITIES", "RENT_AND_UTILITIES_INTERNET_AND_CABLE", "", "online", true},
	{simkit.Checking, "Transfer to Savings"}:   {"TRANSFER_OUT", "TRANSFER_OUT_SAVINGS", "TRANSFER_OUT_SAVINGS", "other", false},
	{simkit.Checking, "Credit Card Payment"}:   {"LOAN_PAYMENTS", "LOAN_PAYMENTS_CREDIT_CARD_PAYMENT", "", "other", false},
	{simkit.Checking, "Starbucks"}:             {"FOOD_AND_DRINK", "FOOD_AND_DRINK_COFFEE", "", "in store", true},
	{simkit.Checking, "Shell"}:                 {"TRANSPORTATION", "TRANSPORTATION_GAS", "", "in store", true},
	{simkit.Checking, "Overdraft Fee"}:         {"BANK_FEES", "BANK_FEES_OVERDRAFT_FEES", "", "other", false},
	{simkit.Checking, "Check Deposit"}:         {"TRANSFER_IN", "TRANSFER_IN_DEPOSIT", "", "other", false},
	{simkit.Checking, "CVS Pharmacy"}:          {"MEDICAL", "MEDICAL_PHARMACIES_AND_SUPPLEMENTS", "", "in store", true},
	{simkit.Savings, "Interest Payment"}:       {"INCOME", "INCOME_INTEREST_EARNED", "", "other", false},
	{simkit.Savings, "Transfer from Checking"}: {"TRANSFER_IN", "TRANSFER_IN_ACCOUNT_TRANSFER", "", "other", false},
	{simkit.Savings, "Withdrawal to Checking"}: {"TRANSFER_OUT", "TRANSFER_OUT_ACCOUNT_TRANSFER", "", "other", false},
	{simkit.Credit, "Starbucks"}:               {"FOOD_AND_DRINK", "FOOD_AND_DRINK_COFFEE", "", "in store", true},
	{simkit.Credit, "Uber"}:                    {"TRANSPORTATION", "TRANSPORTATION_TAXIS_AND_RIDE_SHARES", "", "online", true},
	{simkit.Credit, "Amazon"}:                  {"GENERAL_MERCHANDISE", "GENERAL_MERCHANDISE_ONLINE_MARKETPLACES", "", "online", true},
	{simkit.Credit, "Netflix"}:                 {"ENTERTAINMENT", "ENTERTAINMENT_TV_AND_MOVIES", "", "online", true},
	{simkit.Credit, "Delta Air Lines"}:         {"TRAVEL", "TRAVEL_FLIGHTS", "", "online", true},
	{simkit.Credit, "Chipotle"}:                {"FOOD_AND_DRINK", "FOOD_AND_DRINK_RESTAURANT", "", "in store", true},
	{simkit.Credit, "Amazon Web Services"}:     {"GENERAL_SERVICES", "GENERAL_SERVICES_OTHER_GENERAL_SERVICES", "", "online", true},
	{simkit.Credit, "Marriott"}:                {"TRAVEL", "TRAVEL_LODGING", "", "in store", true},
	{simkit.Credit, "Office Depot"}:            {"GENERAL_MERCHANDISE", "GENERAL_MERCHANDISE_OFFICE_SUPPLIES", "", "in store", true},
	{simkit.Credit, "Payment Thank You"}:       {"LOAN_PAYMENTS", "LOAN_PAYMENTS_CREDIT_CARD_PAYMENT", "", "other", false},
}

// plaidCatsByID holds plaidCats by merchant ID, so that a row's lookup is an
// index, not a hash (read-only once built).
var plaidCatsByID = func() []plaidCat {
	out := make([]plaidCat, simkit.MerchantCount)
	for k := simkit.Checking; k < simkit.AccountKinds; k++ {
		for _, m := range simkit.Catalog(k) {
			out[m.ID] = plaidCats[plaidMerchantKey{k, m.Name}]
		}
	}
	return out
}()

// plaidCatOf returns this provider's view of merchant m of account kind k.
func plaidCatOf(_ simkit.AccountKind, m *simkit.Merchant) plaidCat {
	return plaidCatsByID[m.ID]
}

// pfcDetailedFor returns the Plaid detailed category in the given taxonomy
// version ("v1" or "v2").
func (c plaidCat) pfcDetailedFor(version string) string {
	if version == "v2" && c.pfcV2 != "" {
		return c.pfcV2
	}
	return c.pfcDetailed
}
