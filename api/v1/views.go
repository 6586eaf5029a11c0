package v1

import (
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/jsonw"
	"github.com/finsync/finsync/storage"
)

// ProviderNames gives providers their names in version 1's capitalised
// form, as the adapters declare them (domain.ProviderProfile.V1Name). It is
// read-only once built and safe for concurrent use.
type ProviderNames map[string]string

// NewProviderNames returns the v1 names of the given providers, plus
// Manual for hand-kept accounts.
func NewProviderNames(profiles []domain.ProviderProfile) ProviderNames {
	n := ProviderNames{domain.ProviderManual: "Manual"}
	for _, p := range profiles {
		if p.V1Name != "" {
			n[p.Name] = p.V1Name
		}
	}
	return n
}

// Of returns p's version 1 name. A provider that declared none is shown
// with its first letter capitalised.
func (n ProviderNames) Of(p string) string {
	if v, ok := n[p]; ok {
		return v
	}
	if p == "" {
		return p
	}
	return strings.ToUpper(p[:1]) + p[1:]
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// balanceView is an account's balance object.
type balanceView struct {
	Current      *domain.Money `json:"current"`
	Available    *domain.Money `json:"available"`
	Limit        *domain.Money `json:"limit"`
	InterestRate *domain.Money `json:"interestRate"`
}

// paymentView is a credit or loan account's payment details.
type paymentView struct {
	LastPaymentAmount    *domain.Money `json:"lastPaymentAmount"`
	LastPaymentDate      *domain.Date  `json:"lastPaymentDate"`
	NextPaymentDueDate   *domain.Date  `json:"nextPaymentDueDate"`
	LastStatementBalance *domain.Money `json:"lastStatementBalance"`
	MinimumPaymentAmount *domain.Money `json:"minimumPaymentAmount"`
	NextMonthlyPayment   *domain.Money `json:"nextMonthlyPayment"`
}

// loanOriginationView is a loan's origination details.
type loanOriginationView struct {
	OriginationDate            *domain.Date  `json:"originationDate"`
	OriginationPrincipalAmount *domain.Money `json:"originationPrincipalAmount"`
}

// accountView is the version 1 Account object.
type accountView struct {
	ID               string               `json:"id"`
	BankConnectionID *uuid.UUID           `json:"bankConnectionId"`
	Name             string               `json:"name"`
	Balance          balanceView          `json:"balance"`
	Currency         string               `json:"currency"`
	Mask             *string              `json:"mask"`
	Type             *string              `json:"type"`
	Subtype          *string              `json:"subtype"`
	Provider         string               `json:"provider"`
	Payment          *paymentView         `json:"payment"`
	LoanOrigination  *loanOriginationView `json:"loanOrigination"`
}

func newAccountView(a storage.AccountWithConnection, names ProviderNames) accountView {
	v := accountView{
		ID:               a.ID.String(),
		BankConnectionID: a.BankConnectionID,
		Name:             a.Name,
		Balance:          balanceView{Current: a.CurrentBalance, Available: a.AvailableBalance, Limit: a.CreditLimit},
		Currency:         a.Currency,
		Mask:             optional(a.Mask),
		Type:             optional(a.Type),
		Subtype:          optional(a.Subtype),
		Provider:         names.Of(a.Provider),
	}
	if l := a.Liability; l != nil {
		v.Balance.InterestRate = l.InterestRate
		v.Payment = &paymentView{
			LastPaymentAmount:    l.LastPaymentAmount,
			LastPaymentDate:      l.LastPaymentDate,
			NextPaymentDueDate:   l.NextPaymentDueDate,
			LastStatementBalance: l.LastStatementBalance,
			MinimumPaymentAmount: l.MinimumPaymentAmount,
			NextMonthlyPayment:   l.NextMonthlyPayment,
		}
		if l.OriginationDate != nil || l.OriginationPrincipalAmount != nil {
			v.LoanOrigination = &loanOriginationView{l.OriginationDate, l.OriginationPrincipalAmount}
		}
	}
	return v
}

// connectionErrorView is a bank connection's error, null when healthy.
type connectionErrorView struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// connectionView is the version 1 Bank connection object.
type connectionView struct {
	ID       uuid.UUID            `json:"id"`
	Name     string               `json:"name"`
	Provider string               `json:"provider"`
	Error    *connectionErrorView `json:"error"`
}

// Defaults of a connection error whose provider gave no code or message.
const (
	defaultConnectionErrorCode    = "CONNECTION_ERROR"
	defaultConnectionErrorMessage = "The connection could not be synced"
)

func newConnectionView(bc domain.BankConnection, names ProviderNames) connectionView {
	v := connectionView{ID: bc.ID, Name: bc.InstitutionName, Provider: names.Of(bc.Provider)}
	if v.Name == "" {
		v.Name = v.Provider
	}
	if bc.Status == domain.ConnectionError {
		e := connectionErrorView{Code: defaultConnectionErrorCode, Message: defaultConnectionErrorMessage}
		if bc.LastProviderErrorCode != nil && *bc.LastProviderErrorCode != "" {
			e.Code = *bc.LastProviderErrorCode
		}
		if bc.LastProviderErrorMessage != nil && *bc.LastProviderErrorMessage != "" {
			e.Message = *bc.LastProviderErrorMessage
		}
		v.Error = &e
	}
	return v
}

// PostedAt is a transaction's posted timestamp: the posted_at column, else
// its posted date at midnight UTC, else nil (not posted).
func PostedAt(t *domain.Transaction) *time.Time {
	if t.PostedAt != nil {
		u := t.PostedAt.UTC()
		return &u
	}
	if t.PostedDate != nil {
		u := t.PostedDate.UTC()
		return &u
	}
	return nil
}

// appendTransaction appends the version 1 Transaction object.
func appendTransaction(b []byte, t *domain.Transaction, names ProviderNames) []byte {
	o := jsonw.Start(b)
	o.UUID("id", t.ID)
	o.String("summary", t.Summary)
	o.Time("createdAt", t.CreatedAt)
	o.TimePtr("postedAt", PostedAt(t))
	o.Money("amount", t.Amount)
	o.String("currency", t.Currency)
	o.Bool("isPending", t.Status == domain.TxPending)
	o.StringPtr("subAccount", t.SubAccount)
	o.StringPtr("merchantName", t.MerchantName)
	o.UUIDPtr("categoryId", t.CategoryID)
	o.MoneyPtr("fees", t.Fees)
	o.StringPtr("feeType", t.FeeType)
	o.MoneyPtr("netAmount", t.NetAmount)
	o.StringPtr("source", t.Source)
	o.StringPtr("type", t.Type)
	o.String("provider", names.Of(t.Provider))
	o.UUID("accountId", t.AccountID)
	return o.End()
}

// appendCategory appends the version 1 Category object.
func appendCategory(b []byte, c *domain.Category) []byte {
	o := jsonw.Start(b)
	o.UUID("id", c.ID)
	o.String("name", c.Name)
	o.String("group", c.Group)
	o.String("description", c.Description)
	return o.End()
}

// holdingView is the version 1 Holding object; its id is
// "<accountId>:<securityId>".
type holdingView struct {
	ID               string        `json:"id"`
	AccountID        string        `json:"accountId"`
	SecurityID       string        `json:"securityId"`
	Quantity         domain.Money  `json:"quantity"`
	CostBasis        *domain.Money `json:"costBasis"`
	InstitutionPrice domain.Money  `json:"institutionPrice"`
	InstitutionValue domain.Money  `json:"institutionValue"`
	Currency         string        `json:"currency"`
	PriceAsOf        *domain.Date  `json:"priceAsOf"`
	Provider         string        `json:"provider"`
}

func newHoldingView(h domain.Holding, names ProviderNames) holdingView {
	acct, sec := h.AccountID.String(), h.SecurityID.String()
	return holdingView{
		ID: acct + ":" + sec, AccountID: acct, SecurityID: sec,
		Quantity: h.Quantity, CostBasis: h.CostBasis,
		InstitutionPrice: h.InstitutionPrice, InstitutionValue: h.InstitutionValue,
		Currency: h.Currency, PriceAsOf: h.PriceAsOf, Provider: names.Of(h.Provider),
	}
}

// securityView is the version 1 Security object.
type securityView struct {
	ID     uuid.UUID `json:"id"`
	Symbol *string   `json:"symbol"`
	Name   string    `json:"name"`
	Type   string    `json:"type"`
}

// investmentTransactionView is the version 1 Investment transaction object.
type investmentTransactionView struct {
	ID          uuid.UUID     `json:"id"`
	AccountID   uuid.UUID     `json:"accountId"`
	SecurityID  *uuid.UUID    `json:"securityId"`
	Type        string        `json:"type"`
	Subtype     string        `json:"subtype"`
	Date        domain.Date   `json:"date"`
	Quantity    domain.Money  `json:"quantity"`
	Price       domain.Money  `json:"price"`
	Amount      domain.Money  `json:"amount"`
	Fees        *domain.Money `json:"fees"`
	Currency    string        `json:"currency"`
	Description string        `json:"description"`
	Provider    string        `json:"provider"`
}

func newInvestmentTransactionView(t domain.InvestmentTransaction, names ProviderNames) investmentTransactionView {
	return investmentTransactionView{
		ID: t.ID, AccountID: t.AccountID, SecurityID: t.SecurityID, Type: t.Type, Subtype: t.Subtype,
		Date: t.Date, Quantity: t.Quantity, Price: t.Price, Amount: t.Amount, Fees: t.Fees,
		Currency: t.Currency, Description: t.Description, Provider: names.Of(t.Provider),
	}
}
