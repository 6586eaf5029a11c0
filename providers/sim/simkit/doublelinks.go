package simkit

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A LinkScenario is one simulated person who links banks to finsync,
// sometimes the same bank twice, with ground truth: which linked accounts
// reach the same real account as an account of an earlier link. It is
// what double-link detection is measured on, so it holds the cases that
// make it hard: the same bank linked twice through one provider (new
// account and transaction ids, the same history), through another
// provider (the institution spelled differently, posting dates a day
// apart, a shorter history, a few rows missing, descriptions written
// otherwise), a third link of one bank, and look-alikes that are other
// real accounts: one at the same institution and of the same type without
// a mask, one with the same mask but its own transactions, and a second
// account with the same name; look-alikes share the person's recurring
// payments (salary, rent, subscriptions) with the accounts they resemble.
//
// The scenario is a pure function of (seed, person).
type LinkScenario struct {
	// Connections are the person's links in the order they were made
	// (Connections[0] first).
	Connections []LinkConnection
	Accounts    []LinkedAccount
	// Transactions are as each link's provider reports them, posted.
	Transactions []LinkedTransaction
	// Duplicates maps the key of every account that reaches the same real
	// account as an account of an earlier link to the key of the earliest
	// such account.
	Duplicates map[string]string
}

// LinkConnection is one link of a bank.
type LinkConnection struct {
	Provider    string
	Institution string
}

// LinkedAccount is an account as a link reports it.
type LinkedAccount struct {
	Key        string
	Connection int
	// Real names the real account it reaches.
	Real                                string
	Name, Mask, Type, Subtype, Currency string
}

// LinkedTransaction is one posted transaction as a link reports it;
// Amount is in minor units, negative for money out, and Day counts from
// the scenario's first day.
type LinkedTransaction struct {
	ID, Account string
	Amount      int64
	Day         int
	Description string
}

// LinkScenarioDays is the span of a scenario's history, in days.
const LinkScenarioDays = 150

// LinkScenarioKinds is how many kinds of scenario there are; person p
// gets kind p % LinkScenarioKinds.
const LinkScenarioKinds = 6

// realTx is one movement of a real account.
type realTx struct {
	amount int64
	day    int
	desc   string
}

// realAccount is an account at a bank, with its whole history.
type realAccount struct {
	name, mask, typ, subtype, currency string
	txs                                []realTx
}

// view is how a link shows a real account's history.
type view struct {
	from     int     // first day the link reports
	drop     float64 // share of rows the link never reports
	shift    float64 // share of rows reported a day later (booking vs posting)
	upper    bool    // descriptions in upper case, as a bank feed
	idPrefix string
}

// linkBuilder accumulates a scenario.
type linkBuilder struct {
	r    *rand.Rand
	s    LinkScenario
	real map[string]*realAccount
	// recurring are the person's regular payments, shared by look-alikes.
	recurring []realTx
	n         int
}

// NewLinkScenario builds person's scenario for seed.
func NewLinkScenario(seed uint64, person int) LinkScenario {
	b := &linkBuilder{r: rand.New(rand.NewPCG(seed, Hash2(seed^0xd0b1e, uint64(person)))),
		real: map[string]*realAccount{}, s: LinkScenario{Duplicates: map[string]string{}}}
	b.recurringPayments()
	b.newReal("chk", "Everyday Checking", "depository", "checking", true)
	b.newReal("sav", "Savings", "depository", "savings", false)
	b.newReal("card", "Sapphire Visa", "credit", "credit card", false)
	b.newReal("cu", "Share Checking", "depository", "checking", true)
	plain := view{idPrefix: "a"}
	c0 := b.link("provider-a", "Chase")
	b.reach(c0, "chk", plain)
	b.reach(c0, "sav", plain)
	b.reach(c0, "card", plain)
	c1 := b.link("provider-b", "First Gingham Credit Union")
	b.reach(c1, "cu", plain)
	other := view{from: 60, drop: 0.04, shift: 0.3, upper: true, idPrefix: "b"}
	switch person % LinkScenarioKinds {
	case 0: // the same bank again through the same provider
		c := b.link("provider-a", "Chase")
		for _, k := range []string{"chk", "sav", "card"} {
			b.reach(c, k, view{idPrefix: "b"})
		}
	case 1: // the same bank through another provider, spelled otherwise
		c := b.link("provider-c", "JPMorgan Chase Bank, N.A.")
		b.reach(c, "chk", other)
		b.reach(c, "card", other)
	case 2: // another checking account at the bank, without a mask
		b.newReal("chk3", "Everyday Checking", "depository", "checking", true)
		b.real["chk3"].mask = ""
		c := b.link("provider-b", "Chase Bank")
		b.reach(c, "chk3", plain)
	case 3: // another account whose mask is the same, with its own history
		b.newReal("joint", "Joint Checking", "depository", "checking", true)
		b.real["joint"].mask = b.real["chk"].mask
		c := b.link("provider-a", "Chase")
		b.reach(c, "joint", plain)
	case 4: // a business account of the same name, and the credit union again
		b.newReal("biz", "Everyday Checking", "depository", "checking", true)
		c := b.link("provider-d", "Chase")
		b.reach(c, "biz", plain)
		c2 := b.link("provider-e", "Gingham CU")
		b.reach(c2, "cu", other)
	case 5: // the bank linked a second and a third time
		c := b.link("provider-e", "CHASE BANK")
		b.reach(c, "chk", other)
		b.reach(c, "sav", other)
		c2 := b.link("provider-a", "Chase")
		b.reach(c2, "chk", view{from: 100, idPrefix: "c"})
	}
	return b.s
}

// recurringPayments draws the person's regular payments.
func (b *linkBuilder) recurringPayments() {
	salary := -b.cents(250000, 450000)
	rent := b.cents(150000, 260000)
	for day := 3; day < LinkScenarioDays; day += 14 {
		b.recurring = append(b.recurring, realTx{-salary, day, "ACME CORP PAYROLL"})
	}
	for day := 1; day < LinkScenarioDays; day += 30 {
		b.recurring = append(b.recurring, realTx{-rent, day, "GREENPOINT PROP RENT"},
			realTx{-1549, day + 5, "NETFLIX.COM"}, realTx{-8999, day + 9, "COMCAST CABLE"})
	}
}

// cents draws an amount in [lo, hi] cents.
func (b *linkBuilder) cents(lo, hi int64) int64 { return lo + b.r.Int64N(hi-lo+1) }

// everyday are the merchants of a real account's own spending.
var everyday = [...]string{"Whole Foods Market", "Starbucks", "Shell", "Amazon", "Uber", "CVS Pharmacy",
	"Chipotle", "Trader Joe's", "Target", "Lyft", "Walgreens", "Costco"}

// newReal makes a real account with its own history (about one movement a
// day), and the person's recurring payments when withRecurring.
func (b *linkBuilder) newReal(key, name, typ, subtype string, withRecurring bool) {
	a := &realAccount{name: name, mask: fmt.Sprintf("%04d", b.r.IntN(10000)), typ: typ, subtype: subtype, currency: "USD"}
	for day := 0; day < LinkScenarioDays; day++ {
		for k := b.r.IntN(3); k > 0; k-- {
			m := everyday[b.r.IntN(len(everyday))]
			amt := -b.cents(300, 25000)
			if typ == "credit" && b.r.IntN(40) == 0 {
				m, amt = "Payment Thank You", b.cents(20000, 150000)
			}
			a.txs = append(a.txs, realTx{amt, day, m})
		}
	}
	if withRecurring {
		a.txs = append(a.txs, b.recurring...)
	}
	b.real[key] = a
}

// link adds a connection and returns its index.
func (b *linkBuilder) link(provider, institution string) int {
	b.s.Connections = append(b.s.Connections, LinkConnection{Provider: provider, Institution: institution})
	return len(b.s.Connections) - 1
}

// reach adds connection c's account of real account key, as v shows it,
// and records the ground truth: a duplicate of the first earlier account
// of the same real account.
func (b *linkBuilder) reach(c int, key string, v view) {
	ra := b.real[key]
	acct := LinkedAccount{Key: fmt.Sprintf("%s@%d", key, c), Connection: c, Real: key, Name: ra.name, Mask: ra.mask,
		Type: ra.typ, Subtype: ra.subtype, Currency: ra.currency}
	for _, a := range b.s.Accounts {
		if a.Real == key {
			b.s.Duplicates[acct.Key] = a.Key
			break
		}
	}
	b.s.Accounts = append(b.s.Accounts, acct)
	for _, x := range ra.txs {
		if x.day < v.from || b.r.Float64() < v.drop {
			continue
		}
		day, desc := x.day, x.desc
		if b.r.Float64() < v.shift {
			day++
		}
		if v.upper {
			desc = strings.ToUpper(desc) + " POS"
		}
		b.n++
		b.s.Transactions = append(b.s.Transactions, LinkedTransaction{ID: fmt.Sprintf("%s-%d", v.idPrefix, b.n),
			Account: acct.Key, Amount: x.amount, Day: day, Description: desc})
	}
}
