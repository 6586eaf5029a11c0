package simkit

import (
	"fmt"
	"math/rand/v2"
)

// A TransferScenario is one simulated person's money across several
// accounts and connections, with ground truth: which outflow and inflow
// are one transfer between the person's own accounts. It is what transfer
// detection is measured on (precision and recall), so it holds the cases
// that make detection hard: card payments ("PAYMENT THANK YOU",
// "AUTOPAY"), ACH transfers between banks that land 1 to 3 business days
// later, transfers whose descriptions say nothing, pending outflows that
// post under a new id, a few transfers into an account in another
// currency, and decoys: a rent payment of a transfer's amount on its day,
// two equal transfers on one day (ambiguous: a careful detector leaves
// them unpaired, and they count as misses), refunds (an inflow in the
// account of the purchase), ATM withdrawals and cash deposits of round
// amounts, salary and everyday spending.
//
// The scenario is a pure function of (seed, person): a measurement on one
// seed is independent of the seed a detector was tuned on.
type TransferScenario struct {
	Accounts     []ScenarioAccount
	Transactions []ScenarioTransaction
	// Pairs are the true transfers, by the provider ids of the outflow and
	// the inflow (a pending outflow's posted id).
	Pairs []ScenarioPair
}

// ScenarioAccount is an account of the person, on one of their
// connections (Connection 0, 1, ...).
type ScenarioAccount struct {
	Key        string
	Connection int
	Name, Mask string
	Type       string
	Subtype    string
	Currency   string
}

// ScenarioTransaction is one transaction as the provider reports it.
// Amount is in minor units (cents), negative for money out. A pending
// transaction that posts has PostsAs, the provider id of the posted
// transaction that replaces it on PostDay; the posted one is in the
// scenario too, with Replaces naming the pending one.
type ScenarioTransaction struct {
	ID          string
	Account     string
	Amount      int64
	Currency    string
	Day         int
	Description string
	Pending     bool
	PostsAs     string
	Replaces    string
}

// ScenarioPair is a true transfer.
type ScenarioPair struct{ Outflow, Inflow string }

// scenarioBuilder accumulates a scenario.
type scenarioBuilder struct {
	r    *rand.Rand
	s    TransferScenario
	n    int
	days int
}

// Days is the span of a scenario's history.
const scenarioDays = 120

// NewTransferScenario builds person's scenario for seed.
func NewTransferScenario(seed uint64, person int) TransferScenario {
	b := &scenarioBuilder{r: rand.New(rand.NewPCG(seed, Hash2(seed, uint64(person)))), days: scenarioDays}
	mask := func() string { return fmt.Sprintf("%04d", b.r.IntN(10000)) }
	b.s.Accounts = []ScenarioAccount{
		{Key: "chk", Connection: 0, Name: "Everyday Checking", Mask: mask(), Type: "depository", Subtype: "checking", Currency: "USD"},
		{Key: "sav", Connection: 0, Name: "High Yield Savings", Mask: mask(), Type: "depository", Subtype: "savings", Currency: "USD"},
		{Key: "card", Connection: 0, Name: "Rewards Visa", Mask: mask(), Type: "credit", Subtype: "credit card", Currency: "USD"},
		{Key: "chk2", Connection: 1, Name: "Credit Union Checking", Mask: mask(), Type: "depository", Subtype: "checking", Currency: "USD"},
	}
	foreign := person%3 == 0
	if foreign {
		b.s.Accounts = append(b.s.Accounts, ScenarioAccount{Key: "eur", Connection: 2, Name: "Euro Account", Mask: mask(),
			Type: "depository", Subtype: "savings", Currency: "EUR"})
	}
	b.everyday()
	b.transfers()
	if foreign {
		b.crossCurrency()
	}
	return b.s
}

func (b *scenarioBuilder) account(key string) ScenarioAccount {
	for _, a := range b.s.Accounts {
		if a.Key == key {
			return a
		}
	}
	panic("simkit: no scenario account " + key)
}

// add appends a posted transaction and returns its id.
func (b *scenarioBuilder) add(acct string, amount int64, day int, desc string) string {
	b.n++
	id := fmt.Sprintf("tx-%s-%d", acct, b.n)
	b.s.Transactions = append(b.s.Transactions, ScenarioTransaction{ID: id, Account: acct, Amount: amount,
		Currency: b.account(acct).Currency, Day: day, Description: desc})
	return id
}

// addPending appends a pending transaction and the posted one replacing
// it postLag days later, and returns the posted one's id.
func (b *scenarioBuilder) addPending(acct string, amount int64, day, postLag int, desc string) string {
	b.n++
	pid := fmt.Sprintf("pend-%s-%d", acct, b.n)
	posted := b.add(acct, amount, day+postLag, desc)
	b.s.Transactions = append(b.s.Transactions, ScenarioTransaction{ID: pid, Account: acct, Amount: amount,
		Currency: b.account(acct).Currency, Day: day, Description: desc, Pending: true, PostsAs: posted})
	b.s.Transactions[len(b.s.Transactions)-2].Replaces = pid
	return posted
}

// pair records a true transfer.
func (b *scenarioBuilder) pair(out, in string) {
	b.s.Pairs = append(b.s.Pairs, ScenarioPair{Outflow: out, Inflow: in})
}

var shops = []string{"WHOLEFDS MKT", "SHELL OIL", "AMAZON MKTPLACE", "STARBUCKS", "TARGET", "UBER TRIP", "NETFLIX.COM",
	"TRADER JOE'S", "CVS PHARMACY", "HOME DEPOT", "SPOTIFY", "CHIPOTLE", "COSTCO WHSE", "LYFT RIDE"}

// everyday adds spending, salary, interest, refunds, ATM withdrawals and
// cash deposits.
func (b *scenarioBuilder) everyday() {
	salary := int64(180000 + b.r.IntN(250000))
	for d := 0; d < b.days; d++ {
		for k := b.r.IntN(4); k > 0; k-- {
			acct := "card"
			if b.r.IntN(3) == 0 {
				acct = "chk"
			} else if b.r.IntN(6) == 0 {
				acct = "chk2"
			}
			amt := int64(300 + b.r.IntN(15000))
			id := b.r.IntN(len(shops))
			b.add(acct, -amt, d, shops[id]+fmt.Sprintf(" #%d", b.r.IntN(9000)+1000))
			if b.r.IntN(40) == 0 && d+3 < b.days {
				b.add(acct, amt, d+1+b.r.IntN(3), "REFUND "+shops[id])
			}
		}
		if d%14 == 3 {
			b.add("chk", salary, d, "ACME CORP PAYROLL DIR DEP")
		}
		if d%30 == 27 {
			b.add("sav", int64(50+b.r.IntN(2000)), d, "INTEREST PAYMENT")
		}
		if b.r.IntN(12) == 0 {
			acct := []string{"chk", "chk2"}[b.r.IntN(2)]
			b.add(acct, -int64(20*(1+b.r.IntN(15)))*100, d, "ATM WITHDRAWAL")
		}
		if b.r.IntN(20) == 0 {
			acct := []string{"chk", "chk2"}[b.r.IntN(2)]
			b.add(acct, int64(50*(1+b.r.IntN(20)))*100, d, "MOBILE CHECK DEPOSIT")
		}
	}
}

// transfers adds the labelled same-currency transfers and their decoys.
func (b *scenarioBuilder) transfers() {
	chk, sav, card, chk2 := b.account("chk"), b.account("sav"), b.account("card"), b.account("chk2")
	for d := 2; d < b.days-6; d += 6 + b.r.IntN(5) {
		switch kind := b.r.IntN(40); {
		case kind < 12: // checking to savings, same bank
			amt := int64(50*(2+b.r.IntN(40))) * 100
			lag := b.r.IntN(2)
			out := b.add("chk", -amt, d, "ONLINE TRANSFER TO SAV XXXXXX"+sav.Mask)
			in := b.add("sav", amt, d+lag, "ONLINE TRANSFER FROM CHK XXXXXX"+chk.Mask)
			b.pair(out, in)
			if b.r.IntN(4) == 0 { // rent of the same amount that day
				b.add("chk", -amt, d, "RENT PAYMENT ACME PROPERTIES")
			}
		case kind < 24: // card payment
			amt := int64(5000 + b.r.IntN(300000))
			lag := b.r.IntN(4)
			outDesc := []string{"CHASE CREDIT CRD AUTOPAY", "PAYMENT TO VISA ..." + card.Mask, "ONLINE PMT CREDIT CARD"}[b.r.IntN(3)]
			inDesc := []string{"PAYMENT THANK YOU", "AUTOPAY PAYMENT - THANK YOU", "ONLINE PAYMENT"}[b.r.IntN(3)]
			var out string
			if b.r.IntN(4) == 0 { // pending outflow that posts
				out = b.addPending("chk", -amt, d, 1+b.r.IntN(2), outDesc)
			} else {
				out = b.add("chk", -amt, d, outDesc)
			}
			in := b.add("card", amt, d+lag, inDesc)
			b.pair(out, in)
		case kind < 32: // ACH between banks, one to three business days
			amt := int64(100*(5+b.r.IntN(100))) + int64(b.r.IntN(2))*int64(b.r.IntN(100))
			lag := 1 + b.r.IntN(3)
			src, dst := "chk2", "chk"
			outDesc, inDesc := "ACH DEBIT EXTERNAL XFER", "ACH CREDIT CREDIT UNION TRANSFER "+chk2.Mask
			if b.r.IntN(2) == 0 {
				src, dst = "chk", "chk2"
				outDesc, inDesc = "EXT TRNSFR TO ..."+chk2.Mask, "DEPOSIT ACH"
			}
			out := b.add(src, -amt, d, outDesc)
			in := b.add(dst, amt, d+lag, inDesc)
			b.pair(out, in)
		case kind < 39: // a transfer whose descriptions say nothing
			amt := int64(1000 + b.r.IntN(90000))
			lag := b.r.IntN(3)
			out := b.add("sav", -amt, d, "WITHDRAWAL")
			in := b.add("chk", amt, d+lag, "DEPOSIT")
			b.pair(out, in)
		default: // two equal transfers on one day (one event in 40): ambiguous
			amt := int64(100*(1+b.r.IntN(10))) * 100
			for range 2 {
				out := b.add("chk", -amt, d, "ONLINE TRANSFER TO SAV XXXXXX"+sav.Mask)
				in := b.add("sav", amt, d, "ONLINE TRANSFER FROM CHK XXXXXX"+chk.Mask)
				b.pair(out, in)
			}
		}
	}
}

// crossCurrency adds a few transfers into the euro account.
func (b *scenarioBuilder) crossCurrency() {
	eur, chk := b.account("eur"), b.account("chk")
	for range 1 + b.r.IntN(2) {
		d := b.r.IntN(b.days - 3)
		usd := int64(100*(5+b.r.IntN(50))) * 100
		rate := 0.86 + b.r.Float64()*0.08
		out := b.add("chk", -usd, d, "INTL WIRE TRANSFER TO EURO ACCOUNT "+eur.Mask)
		in := b.add("eur", int64(float64(usd)*rate), d+b.r.IntN(3), "INCOMING TRANSFER FROM ..."+chk.Mask)
		b.pair(out, in)
	}
}
