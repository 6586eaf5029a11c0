package mercurysim

import (
	"github.com/finsync/finsync/providers/sim/simkit"
)

// mercuryCat is Mercury's view of a catalogue merchant.
type mercuryCat struct {
	category string // mercuryCategory
	kind     string // transaction kind
}

// mercuryMerchantKey names a catalogue merchant: its account kind and name.
type mercuryMerchantKey struct {
	kind simkit.AccountKind
	name string
}

// mercuryCats holds Mercury's view of every catalogue merchant (read-only).
var mercuryCats = map[mercuryMerchantKey]mercuryCat{
	{simkit.Checking, "ACME Corp"}:             {"Other", "externalTransfer"},
	{simkit.Checking, "Whole Foods Market"}:    {"Grocery", "debitCardTransaction"},
	{simkit.Checking, "Greenpoint Properties"}: {"FacilitiesExpenses", "outgoingPayment"},
	{simkit.Checking, "PG&E"}:                  {"Utilities", "outgoingPayment"},
	{simkit.Checking, "Comcast"}:               {"InternetAndTelephone", "outgoingPayment"},
	{simkit.Checking, "Transfer to Savings"}:   {"Other", "internalTransfer"},
	{simkit.Checking, "Credit Card Payment"}:   {"Other", "outgoingPayment"},
	{simkit.Checking, "Starbucks"}:             {"Restaurants", "debitCardTransaction"},
	{simkit.Checking, "Shell"}:                 {"FuelAndGas", "debitCardTransaction"},
	{simkit.Checking, "Overdraft Fee"}:         {"Fees", "other"},
	{simkit.Checking, "Check Deposit"}:         {"Other", "checkDeposit"},
	{simkit.Checking, "CVS Pharmacy"}:          {"Medical", "debitCardTransaction"},
	{simkit.Savings, "Interest Payment"}:       {"Other", "interestPayment"},
	{simkit.Savings, "Transfer from Checking"}: {"Other", "internalTransfer"},
	{simkit.Savings, "Withdrawal to Checking"}: {"Other", "internalTransfer"},
	{simkit.Credit, "Starbucks"}:               {"Restaurants", "creditCardTransaction"},
	{simkit.Credit, "Uber"}:                    {"RideshareAndTaxis", "creditCardTransaction"},
	{simkit.Credit, "Amazon"}:                  {"Retail", "creditCardTransaction"},
	{simkit.Credit, "Netflix"}:                 {"Entertainment", "creditCardTransaction"},
	{simkit.Credit, "Delta Air Lines"}:         {"Airlines", "creditCardTransaction"},
	{simkit.Credit, "Chipotle"}:                {"Restaurants", "creditCardTransaction"},
	{simkit.Credit, "Amazon Web Services"}:     {"Software", "creditCardTransaction"},
	{simkit.Credit, "Marriott"}:                {"Lodging", "creditCardTransaction"},
	{simkit.Credit, "Office Depot"}:            {"OfficeSupplies", "creditCardTransaction"},
	{simkit.Credit, "Payment Thank You"}:       {"Other", "creditCardTransaction"},
}

// mercuryCatsByID holds mercuryCats by merchant ID, so that a row's lookup is an
// index, not a hash (read-only once built).
var mercuryCatsByID = func() []mercuryCat {
	out := make([]mercuryCat, simkit.MerchantCount)
	for k := simkit.Checking; k < simkit.AccountKinds; k++ {
		for _, m := range simkit.Catalog(k) {
			out[m.ID] = mercuryCats[mercuryMerchantKey{k, m.Name}]
		}
	}
	return out
}()

// mercuryCatOf returns this provider's view of merchant m of account kind k.
func mercuryCatOf(_ simkit.AccountKind, m *simkit.Merchant) mercuryCat {
	return mercuryCatsByID[m.ID]
}

// mercuryCategories lists Mercury's built-in mercuryCategory values
// (read-only).
var mercuryCategories = [...]string{"Other", "Advertising", "Airlines", "AlcoholAndBars", "BooksAndNewspaper", "CarRental", "Charity", "Clothing", "Conferences", "Education", "Electronics", "Entertainment", "FacilitiesExpenses", "Fees", "FoodDelivery", "FuelAndGas", "Gambling", "GovernmentServices", "Grocery", "GroundTransportation", "Insurance", "InternetAndTelephone", "Legal", "Lodging", "Medical", "Memberships", "OfficeSupplies", "OtherTravel", "Parking", "Political", "ProfessionalServices", "Restaurants", "Retail", "RideshareAndTaxis", "Shipping", "Software", "Taxes", "Utilities", "VehicleExpenses"}

// isMercuryCategory reports whether c is one of Mercury's categories.
func isMercuryCategory(c string) bool {
	for _, m := range mercuryCategories {
		if m == c {
			return true
		}
	}
	return false
}
