package plaidsim

import (
	"net/http"
	"time"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// plaidInstitutions are Plaid sandbox institutions the items are spread
// over (read-only).
var plaidInstitutions = [...][2]string{
	{"ins_109508", "First Platypus Bank"},
	{"ins_109509", "First Gingham Credit Union"},
	{"ins_109510", "Tattersall Federal Credit Union"},
	{"ins_109511", "Tartan Bank"},
	{"ins_109512", "Houndstooth Bank"},
}

// Plaid account slots of every item; the first three carry transactions.
const (
	plaidChecking = iota
	plaidSavings
	plaidCredit
	plaidInvestment
	plaidStudent
	plaidMortgage
	plaidAccountCount
	plaidTxAccounts = 3
)

// plaidAccount is one generated Plaid account.
type plaidAccount struct {
	id, name, official, mask, typ, subtype string
	// persistent is persistent_account_id: the same for every Item that
	// reaches the account; empty (left out) but for depository accounts,
	// as Plaid reports it.
	persistent                string
	current, available, limit int64 // cents; limit/available < 0 = null
}

// plaidItem is one generated Plaid item at a clock.
type plaidItem struct {
	token string
	// key is the first-link token the item's data is generated from (the
	// token itself but for a re-linked item).
	key  string
	seed uint64
	// idSeed generates the item's ids: seed for the first link, another
	// for each re-link (new item, account and transaction ids).
	idSeed          uint64
	clock           int64
	itemID          string
	institutionID   string
	institutionName string
	accounts        [plaidAccountCount]plaidAccount
}

// plaidItemFor builds the item behind an access token at the current clock.
func (s *server) plaidItemFor(token string) *plaidItem {
	key, gen := splitAccessToken(token)
	seed := s.h.ConnSeed(Name, key)
	idSeed := simkit.RelinkSeed(seed, gen)
	inst := plaidInstitutions[simkit.Pick(simkit.Hash2(seed, 1), len(plaidInstitutions))]
	it := &plaidItem{
		token: token, key: key, seed: seed, idSeed: idSeed, clock: s.h.Clock(),
		itemID:        string(simkit.AppendAlnum(nil, simkit.Hash2(idSeed, 2), 37)),
		institutionID: inst[0], institutionName: inst[1],
	}
	it.buildAccounts(s.moves(key))
	return it
}

// buildAccounts generates the item's accounts and balances. The current
// balance of a transaction account is an opening balance moved by every
// transaction posted so far (m), so that it reconciles with the history
// (DailyBalances).
func (it *plaidItem) buildAccounts(m *plaidMoves) {
	h := func(k uint64) uint64 { return simkit.Hash2(it.seed^0xacc7, k) }
	defs := [plaidAccountCount]plaidAccount{
		plaidChecking:   {name: "Plaid Checking", official: "Plaid Gold Standard 0% Interest Checking", typ: "depository", subtype: "checking", current: simkit.Between(h(10), 200000, 1500000), limit: -1},
		plaidSavings:    {name: "Plaid Saving", official: "Plaid Silver Standard 0.1% Interest Saving", typ: "depository", subtype: "savings", current: simkit.Between(h(11), 1000000, 6000000), limit: -1},
		plaidCredit:     {name: "Plaid Credit Card", official: "Plaid Diamond 12.5% APR Interest Credit Card", typ: "credit", subtype: "credit card", current: simkit.Between(h(12), 30000, 400000), limit: 1000000},
		plaidInvestment: {name: "Plaid Brokerage", official: "Plaid Brokerage Account", typ: "investment", subtype: "brokerage", limit: -1},
		plaidStudent:    {name: "Plaid Student Loan", official: "Plaid Student Loan", typ: "loan", subtype: "student", current: simkit.Between(h(14), 2000000, 6000000), available: -1, limit: -1},
		plaidMortgage:   {name: "Plaid Mortgage", official: "Plaid Mortgage", typ: "loan", subtype: "mortgage", current: simkit.Between(h(15), 15000000, 45000000), available: -1, limit: -1},
	}
	for k := 0; k < plaidTxAccounts; k++ {
		defs[k].current += runningSign(k) * m.total(k)
	}
	for k := range defs {
		a := &defs[k]
		a.id = string(simkit.AppendAlnum(nil, simkit.Hash2(it.idSeed^0xacc7, uint64(k)), 37))
		if a.typ == "depository" {
			a.persistent = string(simkit.AppendHex(nil, h(uint64(200+k)), 64))
		}
		a.mask = string(simkit.AppendDigits(nil, h(uint64(100+k)), 4))
		switch k {
		case plaidChecking, plaidSavings:
			a.available = a.current - simkit.Between(h(uint64(20+k)), 0, 10000)
		case plaidCredit:
			a.available = a.limit - a.current
		case plaidInvestment:
			a.current = it.holdingsValue()
			a.available = it.holdingsCash()
		}
	}
	it.accounts = defs
}

// accountIndex returns the slot of an account id, or -1.
func (it *plaidItem) accountIndex(id string) int {
	for k := range it.accounts {
		if it.accounts[k].id == id {
			return k
		}
	}
	return -1
}

// filterAccounts returns the slots selected by options.account_ids (all
// when empty), or ok=false when an id is unknown.
func (it *plaidItem) filterAccounts(ids []string) (slots []int, ok bool) {
	if len(ids) == 0 {
		for k := range it.accounts {
			slots = append(slots, k)
		}
		return slots, true
	}
	for _, id := range ids {
		k := it.accountIndex(id)
		if k < 0 {
			return nil, false
		}
		slots = append(slots, k)
	}
	return slots, true
}

// writeAccount encodes one account; invest adds the balance field only the
// investments endpoints carry (margin_loan_amount, null: no margin loan).
func (it *plaidItem) writeAccount(b *simkit.JW, k int, now time.Time, invest bool) {
	a := &it.accounts[k]
	b.Raw(`{"account_id":`)
	b.Str(a.id)
	b.Raw(`,"balances":{"available":`)
	if a.available < 0 && k != plaidCredit {
		b.Null()
	} else {
		b.Cents(a.available)
	}
	b.Raw(`,"current":`)
	b.Cents(a.current)
	b.Raw(`,"iso_currency_code":"USD","last_updated_datetime":`)
	b.Datetime(now)
	b.Raw(`,"limit":`)
	if a.limit < 0 {
		b.Null()
	} else {
		b.Cents(a.limit)
	}
	if invest {
		b.Raw(`,"margin_loan_amount":null`)
	}
	b.Raw(`,"unofficial_currency_code":null},"holder_category":"personal","mask":`)
	b.Str(a.mask)
	b.Field("name")
	b.Str(a.name)
	b.Field("official_name")
	b.Str(a.official)
	if a.persistent != "" {
		b.Field("persistent_account_id")
		b.Str(a.persistent)
	}
	b.Field("subtype")
	b.Str(a.subtype)
	b.Field("type")
	b.Str(a.typ)
	b.Byte('}')
}

// writeAccounts encodes the accounts of the given slots as a JSON array
// (invest: as writeAccount says).
func (it *plaidItem) writeAccounts(b *simkit.JW, slots []int, now time.Time, invest bool) {
	b.Byte('[')
	for n, k := range slots {
		if n > 0 {
			b.Comma()
		}
		it.writeAccount(b, k, now, invest)
	}
	b.Byte(']')
}

// writeItem encodes the item object, with the consent's end (zero: none).
func (it *plaidItem) writeItem(b *simkit.JW, consentEnds time.Time) {
	b.Raw(`{"available_products":["assets","auth","balance","identity"],"billed_products":["investments","liabilities","transactions"],"consent_expiration_time":`)
	if consentEnds.IsZero() {
		b.Null()
	} else {
		b.Datetime(consentEnds)
	}
	b.Raw(`,"error":null,"institution_id":`)
	b.Str(it.institutionID)
	b.Field("institution_name")
	b.Str(it.institutionName)
	b.Field("item_id")
	b.Str(it.itemID)
	b.Raw(`,"products":["investments","liabilities","transactions"],"consented_products":["investments","liabilities","transactions"],"update_type":"background","webhook":""}`)
}

// plaidAccounts serves /accounts/get and /accounts/balance/get.
func (s *server) plaidAccounts(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
	slots, ok := it.filterAccounts(req.Options.AccountIDs)
	if !ok {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_ACCOUNT_ID", "one or more of the account IDs is invalid", "")
		return
	}
	var b simkit.JW
	b.Raw(`{"accounts":`)
	it.writeAccounts(&b, slots, s.h.WallNow(), false)
	b.Raw(`,"item":`)
	it.writeItem(&b, s.consentEnds(it))
	b.Field("request_id")
	b.Str(plaidRequestID())
	b.Byte('}')
	simkit.WriteRaw(w, http.StatusOK, b.B)
}

// plaidItemGet serves /item/get.
func (s *server) plaidItemGet(w http.ResponseWriter, _ *http.Request, _ *plaidRequest, it *plaidItem) {
	var b simkit.JW
	b.Raw(`{"item":`)
	it.writeItem(&b, s.consentEnds(it))
	b.Raw(`,"status":{"investments":null,"transactions":{"last_successful_update":`)
	b.Datetime(s.h.WallNow())
	b.Raw(`,"last_failed_update":null},"last_webhook":null},"request_id":`)
	b.Str(plaidRequestID())
	b.Byte('}')
	simkit.WriteRaw(w, http.StatusOK, b.B)
}

// consentEnds is when the item's consent ends (sim.Simulator.SetConsent on
// its access token; a re-link is a new consent), zero when none is set.
func (s *server) consentEnds(it *plaidItem) time.Time {
	ends, _, _ := s.h.ConsentEnds(Name, it.token)
	return ends
}
