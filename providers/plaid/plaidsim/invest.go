package plaidsim

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// plaidSecurity is one simulated security.
type plaidSecurity struct {
	name, ticker, isin, cusip, typ, subtype string
	price                                   int64 // cents
	cash                                    bool
	// sector, industry and cfi (ISO 10962 code) classify the security;
	// empty is null.
	sector, industry, cfi string
	// bond, when set, is the security's fixed_income object.
	bond *plaidFixedIncome
}

// plaidFixedIncome is Plaid's fixed_income object of a bond.
type plaidFixedIncome struct {
	YieldRate    plaidYieldRate `json:"yield_rate"`
	MaturityDate string         `json:"maturity_date"`
	IssueDate    string         `json:"issue_date"`
	FaceValue    float64        `json:"face_value"`
}

// plaidYieldRate is the yield_rate of a fixed_income object.
type plaidYieldRate struct {
	Percentage float64 `json:"percentage"`
	Type       string  `json:"type"`
}

// plaidSecurities are the securities held in every brokerage account
// (read-only).
var plaidSecurities = [...]plaidSecurity{
	{"U.S. Dollar", "CUR:USD", "", "", "cash", "", 100, true, "", "", "", nil},
	{"Apple Inc.", "AAPL", "US0378331005", "037833100", "equity", "common stock", 19012, false, "Electronic Technology", "Telecommunications Equipment", "ESVUFR", nil},
	{"Vanguard Total Stock Market ETF", "VTI", "US9229087690", "922908769", "etf", "etf", 24530, false, "Miscellaneous", "Investment Trusts or Mutual Funds", "CEOGEU", nil},
	{"Vanguard 500 Index Fund Admiral Shares", "VFIAX", "US9229087104", "922908710", "mutual fund", "mutual fund", 45020, false, "Miscellaneous", "Investment Trusts or Mutual Funds", "CIOGEU", nil},
	{"United States Treasury Note 4.25% 2030", "", "US91282CJL61", "91282CJL6", "fixed income", "bond", 9875, false, "Government", "Government", "DBFTFR", &plaidFixedIncome{
		YieldRate: plaidYieldRate{Percentage: 4.25, Type: "coupon"}, MaturityDate: "2030-11-15", IssueDate: "2023-11-15", FaceValue: 1000,
	}},
}

// securityID returns the id of security k (global, like Plaid's).
func securityID(k int) string {
	return string(simkit.AppendAlnum(nil, simkit.HashString(0x5ec, plaidSecurities[k].name), 37))
}

// securityPrice returns the close price of security k on day d in cents.
func securityPrice(k int, d int64) int64 {
	p := plaidSecurities[k].price
	if plaidSecurities[k].cash {
		return p
	}
	return p + p*int64(simkit.Hash2(uint64(k), uint64(d))%41-20)/1000
}

// holdingQuantity returns the quantity of security k held (cash in cents).
func (it *plaidItem) holdingQuantity(k int) int64 {
	h := simkit.Hash2(it.seed^0x401d, uint64(k))
	if plaidSecurities[k].cash {
		return simkit.Between(h, 50000, 2000000)
	}
	return simkit.Between(h, 5, 250)
}

// holdingsCash returns the cash held in the brokerage account (cents).
func (it *plaidItem) holdingsCash() int64 { return it.holdingQuantity(0) }

// holdingsValue returns the value of the brokerage account (cents).
func (it *plaidItem) holdingsValue() int64 {
	var v int64
	for k := range plaidSecurities {
		v += it.holdingValue(k)
	}
	return v
}

// holdingValue returns the value of the holding of security k (cents).
func (it *plaidItem) holdingValue(k int) int64 {
	if plaidSecurities[k].cash {
		return it.holdingQuantity(k)
	}
	return it.holdingQuantity(k) * securityPrice(k, it.clock)
}

// securitiesJSON returns the securities array.
func (it *plaidItem) securitiesJSON(date string) []map[string]any {
	out := make([]map[string]any, 0, len(plaidSecurities))
	for k, sec := range plaidSecurities {
		out = append(out, map[string]any{
			"security_id": securityID(k), "name": sec.name, "ticker_symbol": nullable(sec.ticker),
			"isin": nullable(sec.isin), "cusip": nullable(sec.cusip), "type": sec.typ, "subtype": nullable(sec.subtype),
			"close_price": simkit.Money(securityPrice(k, it.clock)), "close_price_as_of": date,
			"is_cash_equivalent": sec.cash, "iso_currency_code": "USD", "unofficial_currency_code": nil,
			"institution_id": nil, "institution_security_id": nil, "proxy_security_id": nil, "sedol": nil,
			"market_identifier_code": nil, "update_datetime": nil,
			"sector": nullable(sec.sector), "industry": nullable(sec.industry), "cfi_code": nullable(sec.cfi),
			"option_contract": nil, "fixed_income": sec.bond,
		})
	}
	return out
}

// nullable returns nil for an empty string.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// accountsJSON returns the accounts of the given slots as raw JSON, as the
// investments endpoints write them (with margin_loan_amount).
func (it *plaidItem) accountsJSON(slots []int, now time.Time) json.RawMessage {
	var b simkit.JW
	it.writeAccounts(&b, slots, now, true)
	return b.B
}

// itemJSON returns the item object as raw JSON, with the consent's end
// (zero: none).
func (it *plaidItem) itemJSON(consentEnds time.Time) json.RawMessage {
	var b simkit.JW
	it.writeItem(&b, consentEnds)
	return b.B
}

// plaidHoldings serves /investments/holdings/get.
func (s *server) plaidHoldings(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
	if !it.wantsInvestment(req.Options.AccountIDs) {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_ACCOUNT_ID", "one or more of the account IDs is invalid", "")
		return
	}
	date := s.h.DateOf(it.clock).Format(time.DateOnly)
	acct := it.accounts[plaidInvestment]
	holdings := make([]map[string]any, 0, len(plaidSecurities))
	for k, sec := range plaidSecurities {
		qty := float64(it.holdingQuantity(k))
		if sec.cash {
			qty = simkit.Money(it.holdingQuantity(k))
		}
		v := it.holdingValue(k)
		holdings = append(holdings, map[string]any{
			"account_id": acct.id, "security_id": securityID(k), "quantity": qty,
			"institution_price": simkit.Money(securityPrice(k, it.clock)), "institution_price_as_of": date,
			"institution_price_datetime": nil, "institution_value": simkit.Money(v), "cost_basis": simkit.Money(v * 9 / 10),
			"iso_currency_code": "USD", "unofficial_currency_code": nil, "vested_quantity": nil, "vested_value": nil,
		})
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"accounts": it.accountsJSON([]int{plaidInvestment}, s.h.WallNow()), "holdings": holdings,
		"securities": it.securitiesJSON(date), "item": it.itemJSON(s.consentEnds(it)), "request_id": plaidRequestID(),
	})
}

// wantsInvestment reports whether account_ids is empty or only names the
// brokerage account.
func (it *plaidItem) wantsInvestment(ids []string) bool {
	for _, id := range ids {
		if it.accountIndex(id) != plaidInvestment {
			return false
		}
	}
	return true
}

// investmentTx is one generated investment transaction.
type investmentTx struct {
	day      int64
	fields   map[string]any
	sortKey  int64
	security int
}

// investmentTransactions generates the brokerage account's transactions
// from the start of its history to the current clock.
func (s *server) investmentTransactions(it *plaidItem) []investmentTx {
	days := int64(s.h.Options().HistoryDays)
	acct := it.accounts[plaidInvestment].id
	var out []investmentTx
	for k := int64(0); ; k++ {
		d := -(days - 1) + 3*k
		if d > it.clock {
			break
		}
		h := simkit.Hash2(it.seed^0x1b7, uint64(k))
		sec := 1 + simkit.Pick(h, len(plaidSecurities)-1)
		price := securityPrice(sec, d)
		qty := simkit.Between(simkit.Mix(h), 1, 10)
		f := map[string]any{
			"investment_transaction_id": string(simkit.AppendAlnum(nil, h, 37)), "cancel_transaction_id": nil,
			"account_id": acct, "date": s.h.DateOf(d).Format(time.DateOnly), "iso_currency_code": "USD",
			"unofficial_currency_code": nil, "fees": 0.0, "security_id": securityID(sec),
		}
		switch h % 5 {
		case 0, 1:
			f["type"], f["subtype"], f["quantity"], f["price"], f["amount"] = "buy", "buy", float64(qty), simkit.Money(price), simkit.Money(qty*price)
			f["name"] = "BUY " + plaidSecurities[sec].name
		case 2:
			f["type"], f["subtype"], f["quantity"], f["price"], f["amount"] = "sell", "sell", -float64(qty), simkit.Money(price), simkit.Money(-qty*price)
			f["name"] = "SELL " + plaidSecurities[sec].name
		case 3:
			amt := simkit.Between(h>>20, 500, 9000)
			f["type"], f["subtype"], f["quantity"], f["price"], f["amount"] = "cash", "dividend", 0.0, 0.0, simkit.Money(-amt)
			f["name"] = "DIVIDEND " + plaidSecurities[sec].name
		default:
			f["security_id"] = securityID(0)
			amt := simkit.Between(h>>20, 10000, 100000)
			f["type"], f["subtype"], f["quantity"], f["price"], f["amount"] = "cash", "contribution", simkit.Money(amt), 1.0, simkit.Money(-amt)
			f["name"] = "CONTRIBUTION"
		}
		out = append(out, investmentTx{day: d, fields: f, sortKey: k, security: sec})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].sortKey > out[b].sortKey })
	return out
}

// plaidInvestmentTransactions serves /investments/transactions/get.
func (s *server) plaidInvestmentTransactions(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
	from, err1 := time.Parse(time.DateOnly, req.StartDate)
	to, err2 := time.Parse(time.DateOnly, req.EndDate)
	if req.StartDate == "" || req.EndDate == "" {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "MISSING_FIELDS", "the following required fields are missing: start_date, end_date", "")
		return
	}
	if err1 != nil || err2 != nil || to.Before(from) {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_FIELD", "start_date and end_date must be dates in YYYY-MM-DD format, with start_date <= end_date", "")
		return
	}
	count, offset := 100, 0
	if req.Options.Count != nil {
		count = *req.Options.Count
	}
	if req.Options.Offset != nil {
		offset = *req.Options.Offset
	}
	if count < 1 || count > 500 || offset < 0 {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_FIELD", "count must be between 1 and 500 and offset must be >= 0", "")
		return
	}
	if !it.wantsInvestment(req.Options.AccountIDs) {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_ACCOUNT_ID", "one or more of the account IDs is invalid", "")
		return
	}
	lo, hi := s.h.DayOf(from), s.h.DayOf(to)
	var match []map[string]any
	for _, tx := range s.investmentTransactions(it) {
		if tx.day >= lo && tx.day <= hi {
			match = append(match, tx.fields)
		}
	}
	page := []map[string]any{}
	if offset < len(match) {
		page = match[offset:min(len(match), offset+count)]
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"accounts": it.accountsJSON([]int{plaidInvestment}, s.h.WallNow()), "investment_transactions": page,
		"securities": it.securitiesJSON(s.h.DateOf(it.clock).Format(time.DateOnly)), "item": it.itemJSON(s.consentEnds(it)),
		"total_investment_transactions": len(match), "request_id": plaidRequestID(),
	})
}

// plaidLiabilities serves /liabilities/get.
func (s *server) plaidLiabilities(w http.ResponseWriter, r *http.Request, req *plaidRequest, it *plaidItem) {
	slots, ok := it.filterAccounts(req.Options.AccountIDs)
	if !ok {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_ACCOUNT_ID", "one or more of the account IDs is invalid", "")
		return
	}
	var keep []int
	liab := map[string]any{"credit": nil, "student": nil, "mortgage": nil}
	for _, k := range slots {
		switch k {
		case plaidCredit:
			liab["credit"] = []any{s.creditLiability(it)}
		case plaidStudent:
			liab["student"] = []any{s.studentLiability(it)}
		case plaidMortgage:
			liab["mortgage"] = []any{s.mortgageLiability(it)}
		default:
			continue
		}
		keep = append(keep, k)
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]any{
		"accounts": it.accountsJSON(keep, s.h.WallNow()), "item": it.itemJSON(s.consentEnds(it)),
		"liabilities": liab, "request_id": plaidRequestID(),
	})
}

// relDate formats the sim date d days from the item's clock.
func (s *server) relDate(it *plaidItem, d int64) string {
	return s.h.DateOf(it.clock + d).Format(time.DateOnly)
}

// creditLiability returns the credit card's liability object.
func (s *server) creditLiability(it *plaidItem) map[string]any {
	a := it.accounts[plaidCredit]
	return map[string]any{
		"account_id": a.id,
		"aprs": []map[string]any{
			{"apr_percentage": 22.24, "apr_type": "purchase_apr", "balance_subject_to_apr": simkit.Money(a.current), "interest_charge_amount": simkit.Money(a.current * 2224 / 120000)},
			{"apr_percentage": 28.99, "apr_type": "cash_apr", "balance_subject_to_apr": 0.0, "interest_charge_amount": 0.0},
		},
		"is_overdue": false, "last_payment_amount": simkit.Money(a.current / 3), "last_payment_date": s.relDate(it, -12),
		"last_statement_issue_date": s.relDate(it, -15), "last_statement_balance": simkit.Money(a.current * 9 / 10),
		"minimum_payment_amount": simkit.Money(max(2500, a.current/50)), "next_payment_due_date": s.relDate(it, 10),
	}
}

// studentLiability returns the student loan's liability object.
func (s *server) studentLiability(it *plaidItem) map[string]any {
	a := it.accounts[plaidStudent]
	return map[string]any{
		"account_id": a.id, "account_number": "4277075694", "disbursement_dates": []string{s.relDate(it, -3000)},
		"expected_payoff_date": s.relDate(it, 3650), "guarantor": "DEPT OF ED", "interest_rate_percentage": 5.25,
		"is_overdue": false, "last_payment_amount": simkit.Money(a.current / 120), "last_payment_date": s.relDate(it, -20),
		"last_statement_balance": simkit.Money(a.current), "last_statement_issue_date": s.relDate(it, -25),
		"loan_name": "Consolidation", "loan_status": map[string]any{"end_date": s.relDate(it, 3650), "type": "repayment"},
		"minimum_payment_amount": simkit.Money(a.current / 120), "next_payment_due_date": s.relDate(it, 10),
		"origination_date": s.relDate(it, -3000), "origination_principal_amount": simkit.Money(a.current * 3 / 2),
		"outstanding_interest_amount": simkit.Money(a.current / 100), "payment_reference_number": "4277075694",
		"pslf_status":       map[string]any{"estimated_eligibility_date": nil, "payments_made": nil, "payments_remaining": nil},
		"repayment_plan":    map[string]any{"description": "Standard Repayment", "type": "standard"},
		"sequence_number":   "1",
		"servicer_address":  map[string]any{"city": "San Matias", "country": "US", "postal_code": "99415", "region": "CA", "street": "123 Relaxation Road"},
		"ytd_interest_paid": simkit.Money(a.current / 40), "ytd_principal_paid": simkit.Money(a.current / 20),
	}
}

// mortgageLiability returns the mortgage's liability object.
func (s *server) mortgageLiability(it *plaidItem) map[string]any {
	a := it.accounts[plaidMortgage]
	return map[string]any{
		"account_id": a.id, "account_number": "3120194154", "current_late_fee": 0.0, "escrow_balance": simkit.Money(a.current / 100),
		"has_pmi": true, "has_prepayment_penalty": false,
		"interest_rate":       map[string]any{"percentage": 3.99, "type": "fixed"},
		"last_payment_amount": simkit.Money(a.current / 200), "last_payment_date": s.relDate(it, -18),
		"loan_term": "30 year", "loan_type_description": "conventional", "maturity_date": s.relDate(it, 9000),
		"next_monthly_payment": simkit.Money(a.current / 200), "next_payment_due_date": s.relDate(it, 12),
		"origination_date": s.relDate(it, -1950), "origination_principal_amount": simkit.Money(a.current * 6 / 5),
		"past_due_amount":   0.0,
		"property_address":  map[string]any{"city": "Malakoff", "country": "US", "postal_code": "14236", "region": "NY", "street": "2992 Cameron Road"},
		"ytd_interest_paid": simkit.Money(a.current / 30), "ytd_principal_paid": simkit.Money(a.current / 60),
	}
}
