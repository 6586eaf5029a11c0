package simkit

import (
	"slices"
)

// AccountKind is the kind of a transaction account, shared by all providers.
type AccountKind uint8

// The kinds of transaction account.
const (
	// Checking is a current account.
	Checking AccountKind = iota
	// Savings is a savings account.
	Savings
	// Credit is a credit card account.
	Credit
	// AccountKinds is the number of kinds.
	AccountKinds
)

// Merchant is one counterparty template of the generated transactions, as
// every provider sees it; a provider keeps its own categorisation of each
// (by kind and Name) in its simulator package.
type Merchant struct {
	// ID numbers the catalogue's entries densely from 0 (below
	// MerchantCount), so that a provider can keep its view of them in a
	// slice; a merchant listed twice has two IDs.
	ID       int
	Name     string // merchant / counterparty name
	BankDesc string // raw bank description
	MCC      string // merchant category code ("" for a non-card payment)
	lo, hi   int64  // amount range in cents
	inflow   bool   // money in
}

// catalog lists the merchants each account kind draws from; repeated
// entries weigh a merchant more. It is a read-only table.
var catalog = [...][]Merchant{
	Checking: {
		{0, "ACME Corp", "ACME CORP PAYROLL PPD ID: 1234567890", "", 250000, 450000, true},
		{1, "Whole Foods Market", "WHOLEFDS MKT #10234 SAN FRANCISCO CA", "5411", 1500, 22000, false},
		{2, "Whole Foods Market", "WHOLEFDS MKT #10234 SAN FRANCISCO CA", "5411", 1500, 22000, false},
		{3, "Greenpoint Properties", "GREENPOINT PROP RENT WEB PMT", "", 180000, 260000, false},
		{4, "PG&E", "PGANDE WEB ONLINE", "4900", 6000, 21000, false},
		{5, "Comcast", "COMCAST CABLE COMM 800-COMCAST", "4899", 5999, 12999, false},
		{6, "Transfer to Savings", "ONLINE TRANSFER TO SAV XXXXXX4321", "", 10000, 100000, false},
		{7, "Credit Card Payment", "PAYMENT TO CREDIT CARD ENDING 9876", "", 20000, 150000, false},
		{8, "Starbucks", "STARBUCKS STORE 05523 SEATTLE WA", "5814", 350, 1200, false},
		{9, "Starbucks", "STARBUCKS STORE 05523 SEATTLE WA", "5814", 350, 1200, false},
		{10, "Shell", "SHELL OIL 57444132 OAKLAND CA", "5541", 2500, 9000, false},
		{11, "Overdraft Fee", "OVERDRAFT ITEM FEE", "", 3500, 3500, false},
		{12, "Check Deposit", "MOBILE DEPOSIT REF 00492", "", 5000, 120000, true},
		{13, "CVS Pharmacy", "CVS/PHARMACY #04412 BERKELEY CA", "5912", 800, 9000, false},
	},
	Savings: {
		{14, "Interest Payment", "INTEREST PAYMENT", "", 5, 2500, true},
		{15, "Transfer from Checking", "ONLINE TRANSFER FROM CHK XXXXXX1234", "", 10000, 100000, true},
		{16, "Transfer from Checking", "ONLINE TRANSFER FROM CHK XXXXXX1234", "", 10000, 100000, true},
		{17, "Withdrawal to Checking", "ONLINE TRANSFER TO CHK XXXXXX1234", "", 5000, 50000, false},
	},
	Credit: {
		{18, "Starbucks", "STARBUCKS STORE 05523 SEATTLE WA", "5814", 350, 1200, false},
		{19, "Uber", "UBER 063015 SF**POOL**", "4121", 800, 6500, false},
		{20, "Amazon", "AMAZON MKTPL*2K4L91 AMZN.COM/BILL WA", "5942", 1200, 30000, false},
		{21, "Netflix", "NETFLIX.COM 866-579-7172 CA", "4899", 1549, 2299, false},
		{22, "Delta Air Lines", "DELTA AIR 0062345678901 ATLANTA GA", "3058", 15000, 90000, false},
		{23, "Chipotle", "CHIPOTLE 1249 SAN FRANCISCO CA", "5812", 900, 3500, false},
		{24, "Chipotle", "CHIPOTLE 1249 SAN FRANCISCO CA", "5812", 900, 3500, false},
		{25, "Amazon Web Services", "AWS EMEA AWS.AMAZON.CO WA", "7372", 2000, 80000, false},
		{26, "Marriott", "MARRIOTT DOWNTOWN CHICAGO IL", "3509", 18000, 60000, false},
		{27, "Office Depot", "OFFICE DEPOT #2211 AUSTIN TX", "5943", 1500, 25000, false},
		{28, "Payment Thank You", "PAYMENT THANK YOU - WEB", "", 20000, 150000, true},
	},
}

// MerchantCount is the number of catalogue entries, every kind together.
const MerchantCount = 29

// Catalog returns a copy of the merchants account kind k draws from, each
// once per weight.
func Catalog(k AccountKind) []Merchant { return slices.Clone(catalog[k]) }

// Content is the provider-independent content of one generated transaction.
type Content struct {
	// M is the counterparty (read-only: it points into the catalog).
	M *Merchant
	// Amount is in minor units, negative for money out.
	Amount int64
	// H is a hash of the content, for a provider's further choices.
	H uint64
}

// ContentOf returns the content of transaction i of timeline t on an account
// of the given kind.
func (t *Timeline) ContentOf(i int64, kind AccountKind) Content {
	cs := t.Content(i)
	h := Hash2(t.Seed^0xc0ffee, uint64(cs))
	list := catalog[kind]
	m := &list[Pick(h, len(list))]
	amt := Between(Mix(h), m.lo, m.hi)
	if !m.inflow {
		amt = -amt
	}
	return Content{M: m, Amount: amt, H: h}
}
