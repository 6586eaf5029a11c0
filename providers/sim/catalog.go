package sim

// acctKind is the kind of a transaction account, shared by all providers.
type acctKind uint8

const (
	kindChecking acctKind = iota
	kindSavings
	kindCredit
)

// merchant is one counterparty template of the generated transactions, with
// every provider's categorisation of it.
type merchant struct {
	name        string // merchant / counterparty name
	bankDesc    string // raw bank description
	pfcPrimary  string // Plaid personal_finance_category.primary
	pfcDetailed string // Plaid v1 detailed
	pfcV2       string // Plaid v2 detailed ("" = same as v1)
	mercury     string // Mercury mercuryCategory
	mercuryKind string // Mercury transaction kind
	mcc         string // merchant category code
	channel     string // Plaid payment_channel
	lo, hi      int64  // amount range in cents
	inflow      bool   // money in
	hasMerchant bool   // whether Plaid knows a merchant_name
}

// catalog lists the merchants each account kind draws from; repeated
// entries weigh a merchant more. It is a read-only table.
var catalog = [...][]merchant{
	kindChecking: {
		{"ACME Corp", "ACME CORP PAYROLL PPD ID: 1234567890", "INCOME", "INCOME_WAGES", "INCOME_SALARY", "Other", "externalTransfer", "", "other", 250000, 450000, true, false},
		{"Whole Foods Market", "WHOLEFDS MKT #10234 SAN FRANCISCO CA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_GROCERIES", "", "Grocery", "debitCardTransaction", "5411", "in store", 1500, 22000, false, true},
		{"Whole Foods Market", "WHOLEFDS MKT #10234 SAN FRANCISCO CA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_GROCERIES", "", "Grocery", "debitCardTransaction", "5411", "in store", 1500, 22000, false, true},
		{"Greenpoint Properties", "GREENPOINT PROP RENT WEB PMT", "RENT_AND_UTILITIES", "RENT_AND_UTILITIES_RENT", "", "FacilitiesExpenses", "outgoingPayment", "", "other", 180000, 260000, false, false},
		{"PG&E", "PGANDE WEB ONLINE", "RENT_AND_UTILITIES", "RENT_AND_UTILITIES_GAS_AND_ELECTRICITY", "", "Utilities", "outgoingPayment", "4900", "online", 6000, 21000, false, true},
		{"Comcast", "COMCAST CABLE COMM 800-COMCAST", "RENT_AND_UTILITIES", "RENT_AND_UTILITIES_INTERNET_AND_CABLE", "", "InternetAndTelephone", "outgoingPayment", "4899", "online", 5999, 12999, false, true},
		{"Transfer to Savings", "ONLINE TRANSFER TO SAV XXXXXX4321", "TRANSFER_OUT", "TRANSFER_OUT_SAVINGS", "TRANSFER_OUT_SAVINGS", "Other", "internalTransfer", "", "other", 10000, 100000, false, false},
		{"Credit Card Payment", "PAYMENT TO CREDIT CARD ENDING 9876", "LOAN_PAYMENTS", "LOAN_PAYMENTS_CREDIT_CARD_PAYMENT", "", "Other", "outgoingPayment", "", "other", 20000, 150000, false, false},
		{"Starbucks", "STARBUCKS STORE 05523 SEATTLE WA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_COFFEE", "", "Restaurants", "debitCardTransaction", "5814", "in store", 350, 1200, false, true},
		{"Starbucks", "STARBUCKS STORE 05523 SEATTLE WA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_COFFEE", "", "Restaurants", "debitCardTransaction", "5814", "in store", 350, 1200, false, true},
		{"Shell", "SHELL OIL 57444132 OAKLAND CA", "TRANSPORTATION", "TRANSPORTATION_GAS", "", "FuelAndGas", "debitCardTransaction", "5541", "in store", 2500, 9000, false, true},
		{"Overdraft Fee", "OVERDRAFT ITEM FEE", "BANK_FEES", "BANK_FEES_OVERDRAFT_FEES", "", "Fees", "other", "", "other", 3500, 3500, false, false},
		{"Check Deposit", "MOBILE DEPOSIT REF 00492", "TRANSFER_IN", "TRANSFER_IN_DEPOSIT", "", "Other", "checkDeposit", "", "other", 5000, 120000, true, false},
		{"CVS Pharmacy", "CVS/PHARMACY #04412 BERKELEY CA", "MEDICAL", "MEDICAL_PHARMACIES_AND_SUPPLEMENTS", "", "Medical", "debitCardTransaction", "5912", "in store", 800, 9000, false, true},
	},
	kindSavings: {
		{"Interest Payment", "INTEREST PAYMENT", "INCOME", "INCOME_INTEREST_EARNED", "", "Other", "interestPayment", "", "other", 5, 2500, true, false},
		{"Transfer from Checking", "ONLINE TRANSFER FROM CHK XXXXXX1234", "TRANSFER_IN", "TRANSFER_IN_ACCOUNT_TRANSFER", "", "Other", "internalTransfer", "", "other", 10000, 100000, true, false},
		{"Transfer from Checking", "ONLINE TRANSFER FROM CHK XXXXXX1234", "TRANSFER_IN", "TRANSFER_IN_ACCOUNT_TRANSFER", "", "Other", "internalTransfer", "", "other", 10000, 100000, true, false},
		{"Withdrawal to Checking", "ONLINE TRANSFER TO CHK XXXXXX1234", "TRANSFER_OUT", "TRANSFER_OUT_ACCOUNT_TRANSFER", "", "Other", "internalTransfer", "", "other", 5000, 50000, false, false},
	},
	kindCredit: {
		{"Starbucks", "STARBUCKS STORE 05523 SEATTLE WA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_COFFEE", "", "Restaurants", "creditCardTransaction", "5814", "in store", 350, 1200, false, true},
		{"Uber", "UBER 063015 SF**POOL**", "TRANSPORTATION", "TRANSPORTATION_TAXIS_AND_RIDE_SHARES", "", "RideshareAndTaxis", "creditCardTransaction", "4121", "online", 800, 6500, false, true},
		{"Amazon", "AMAZON MKTPL*2K4L91 AMZN.COM/BILL WA", "GENERAL_MERCHANDISE", "GENERAL_MERCHANDISE_ONLINE_MARKETPLACES", "", "Retail", "creditCardTransaction", "5942", "online", 1200, 30000, false, true},
		{"Netflix", "NETFLIX.COM 866-579-7172 CA", "ENTERTAINMENT", "ENTERTAINMENT_TV_AND_MOVIES", "", "Entertainment", "creditCardTransaction", "4899", "online", 1549, 2299, false, true},
		{"Delta Air Lines", "DELTA AIR 0062345678901 ATLANTA GA", "TRAVEL", "TRAVEL_FLIGHTS", "", "Airlines", "creditCardTransaction", "3058", "online", 15000, 90000, false, true},
		{"Chipotle", "CHIPOTLE 1249 SAN FRANCISCO CA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_RESTAURANT", "", "Restaurants", "creditCardTransaction", "5812", "in store", 900, 3500, false, true},
		{"Chipotle", "CHIPOTLE 1249 SAN FRANCISCO CA", "FOOD_AND_DRINK", "FOOD_AND_DRINK_RESTAURANT", "", "Restaurants", "creditCardTransaction", "5812", "in store", 900, 3500, false, true},
		{"Amazon Web Services", "AWS EMEA AWS.AMAZON.CO WA", "GENERAL_SERVICES", "GENERAL_SERVICES_OTHER_GENERAL_SERVICES", "", "Software", "creditCardTransaction", "7372", "online", 2000, 80000, false, true},
		{"Marriott", "MARRIOTT DOWNTOWN CHICAGO IL", "TRAVEL", "TRAVEL_LODGING", "", "Lodging", "creditCardTransaction", "3509", "in store", 18000, 60000, false, true},
		{"Office Depot", "OFFICE DEPOT #2211 AUSTIN TX", "GENERAL_MERCHANDISE", "GENERAL_MERCHANDISE_OFFICE_SUPPLIES", "", "OfficeSupplies", "creditCardTransaction", "5943", "in store", 1500, 25000, false, true},
		{"Payment Thank You", "PAYMENT THANK YOU - WEB", "LOAN_PAYMENTS", "LOAN_PAYMENTS_CREDIT_CARD_PAYMENT", "", "Other", "creditCardTransaction", "", "other", 20000, 150000, true, false},
	},
}

// content is the provider-independent content of one generated transaction.
type content struct {
	m      *merchant
	amount int64 // minor units, negative = money out
	h      uint64
}

// contentOf returns the content of transaction i of timeline t on an account
// of the given kind.
func (t *timeline) contentOf(i int64, kind acctKind) content {
	cs := t.content(i)
	h := hash2(t.seed^0xc0ffee, uint64(cs))
	list := catalog[kind]
	m := &list[pick(h, len(list))]
	amt := between(mix(h), m.lo, m.hi)
	if !m.inflow {
		amt = -amt
	}
	return content{m: m, amount: amt, h: h}
}

// pfcDetailed returns the Plaid detailed category in the given taxonomy
// version ("v1" or "v2").
func (m *merchant) pfcDetailedFor(version string) string {
	if version == "v2" && m.pfcV2 != "" {
		return m.pfcV2
	}
	return m.pfcDetailed
}

// mercuryCategories lists Mercury's built-in mercuryCategory values
// (read-only).
var mercuryCategories = [...]string{"Other", "Advertising", "Airlines", "AlcoholAndBars", "BooksAndNewspaper", "CarRental", "Charity", "Clothing", "Conferences", "Education", "Electronics", "Entertainment", "FacilitiesExpenses", "Fees", "FoodDelivery", "FuelAndGas", "Gambling", "GovernmentServices", "Grocery", "GroundTransportation", "Insurance", "InternetAndTelephone", "Legal", "Lodging", "Medical", "Memberships", "OfficeSupplies", "OtherTravel", "Parking", "Political", "ProfessionalServices", "Restaurants", "Retail", "RideshareAndTaxis", "Shipping", "Software", "Taxes", "Utilities", "VehicleExpenses"}
