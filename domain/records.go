package domain

import (
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ProviderManual is the provider name of accounts and categories the user
// keeps by hand. The names of real providers are declared by their adapters
// (providers.Description).
const ProviderManual = "manual"

// Plans a user can be on.
const (
	PlanNone     = "none"
	PlanStandard = "standard"
	PlanPro      = "pro"
	PlanTrial    = "trial"
)

// Transaction statuses.
const (
	TxPending = "pending"
	TxPosted  = "posted"
	TxDeleted = "deleted"
)

// Where a transaction's category came from.
const (
	CategoryFromProvider = "provider"
	CategoryFromRule     = "rule"
	CategoryFromUser     = "user"
)

// Connection statuses.
const (
	ConnectionActive   = "active"
	ConnectionError    = "error"
	ConnectionDisabled = "disabled"
)

// Account statuses.
const (
	AccountActive = "active"
	AccountClosed = "closed"
)

// Date is a calendar date (no time, no zone), written YYYY-MM-DD.
type Date struct {
	time.Time
}

// DateLayout is the wire form of a Date.
const DateLayout = "2006-01-02"

// ParseDate reads YYYY-MM-DD.
func ParseDate(s string) (Date, error) {
	t, err := time.Parse(DateLayout, s)
	if err != nil {
		return Date{}, err
	}
	return Date{t}, nil
}

// DateOf returns the UTC calendar date of t.
func DateOf(t time.Time) Date {
	y, m, d := t.UTC().Date()
	return Date{time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
}

// String writes YYYY-MM-DD.
func (d Date) String() string { return string(d.Append(nil)) }

// Append appends d as String writes it: by hand for the years 0 to 9999
// (listings and sync digests write a date per row), through time's
// formatter for any other.
func (d Date) Append(b []byte) []byte {
	y, m, day := d.Date()
	if y < 0 || y > 9999 {
		return d.AppendFormat(b, DateLayout)
	}
	return append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(m)/10), byte('0'+int(m)%10), '-', byte('0'+day/10), byte('0'+day%10))
}

// MarshalJSON writes "YYYY-MM-DD".
func (d Date) MarshalJSON() ([]byte, error) {
	return []byte(`"` + d.Format(DateLayout) + `"`), nil
}

// UnmarshalJSON reads "YYYY-MM-DD".
func (d *Date) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return &time.ParseError{Layout: DateLayout, Value: string(b), Message: ": must be YYYY-MM-DD"}
	}
	p, err := ParseDate(string(b[1 : len(b)-1]))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// User is a person whose financial data finsync keeps.
type User struct {
	ID          uuid.UUID
	Email       string
	Plan        string
	PlanActive  bool
	StorageMode bool
	CreatedAt   time.Time
}

// Account is a bank-synced or manual account.
type Account struct {
	ID                uuid.UUID
	UserID            uuid.UUID
	BankConnectionID  *uuid.UUID
	ProviderAccountID string
	Provider          string
	InstitutionName   string
	Name              string
	Mask              string
	Type              string
	Subtype           string
	Currency          string
	CurrentBalance    *Money
	AvailableBalance  *Money
	CreditLimit       *Money
	BalanceAsOf       *time.Time
	Manual            bool
	Status            string
	ClosedAt          *time.Time
	Liability         *Liability
	// DuplicateOfAccountID is set when a newer connection of the user
	// reaches the same real account as this older account of another
	// connection (docs/accounts.md); nil otherwise.
	DuplicateOfAccountID *uuid.UUID
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

// Liability holds the debt details of credit, student-loan and mortgage accounts.
type Liability struct {
	Type                       string           `json:"type"`
	MinimumPaymentAmount       *Money           `json:"minimumPaymentAmount,omitempty"`
	NextPaymentDueDate         *Date            `json:"nextPaymentDueDate,omitempty"`
	LastPaymentAmount          *Money           `json:"lastPaymentAmount,omitempty"`
	LastPaymentDate            *Date            `json:"lastPaymentDate,omitempty"`
	InterestRate               *Money           `json:"interestRate,omitempty"`
	IsOverdue                  *bool            `json:"isOverdue,omitempty"`
	LastStatementBalance       *Money           `json:"lastStatementBalance,omitempty"`
	Aprs                       []APR            `json:"aprs,omitempty"`
	LoanName                   *string          `json:"loanName,omitempty"`
	LoanStatus                 *LoanStatus      `json:"loanStatus,omitempty"`
	RepaymentPlan              *RepaymentPlan   `json:"repaymentPlan,omitempty"`
	PslfStatus                 *PslfStatus      `json:"pslfStatus,omitempty"`
	OriginationDate            *Date            `json:"originationDate,omitempty"`
	OriginationPrincipalAmount *Money           `json:"originationPrincipalAmount,omitempty"`
	ExpectedPayoffDate         *Date            `json:"expectedPayoffDate,omitempty"`
	OutstandingInterestAmount  *Money           `json:"outstandingInterestAmount,omitempty"`
	YtdInterestPaid            *Money           `json:"ytdInterestPaid,omitempty"`
	YtdPrincipalPaid           *Money           `json:"ytdPrincipalPaid,omitempty"`
	InterestRateType           *string          `json:"interestRateType,omitempty"`
	NextMonthlyPayment         *Money           `json:"nextMonthlyPayment,omitempty"`
	EscrowBalance              *Money           `json:"escrowBalance,omitempty"`
	HasPmi                     *bool            `json:"hasPmi,omitempty"`
	HasPrepaymentPenalty       *bool            `json:"hasPrepaymentPenalty,omitempty"`
	PropertyAddress            *PropertyAddress `json:"propertyAddress,omitempty"`
	LoanTypeDescription        *string          `json:"loanTypeDescription,omitempty"`
	MaturityDate               *Date            `json:"maturityDate,omitempty"`
	PastDueAmount              *Money           `json:"pastDueAmount,omitempty"`
}

// APR is one annual percentage rate of a credit account.
type APR struct {
	AprType              string `json:"aprType"`
	AprPercentage        *Money `json:"aprPercentage,omitempty"`
	BalanceSubjectToApr  *Money `json:"balanceSubjectToApr,omitempty"`
	InterestChargeAmount *Money `json:"interestChargeAmount,omitempty"`
}

// LoanStatus is a student loan's status.
type LoanStatus struct {
	Type    string `json:"type"`
	EndDate *Date  `json:"endDate,omitempty"`
}

// RepaymentPlan is a student loan's repayment plan.
type RepaymentPlan struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// PslfStatus is a student loan's public-service forgiveness status.
type PslfStatus struct {
	PaymentsRemaining        *Money `json:"paymentsRemaining,omitempty"`
	PaymentsMade             *Money `json:"paymentsMade,omitempty"`
	EstimatedEligibilityDate *Date  `json:"estimatedEligibilityDate,omitempty"`
}

// PropertyAddress is a mortgage's property address.
type PropertyAddress struct {
	Street     string `json:"street"`
	City       string `json:"city"`
	Region     string `json:"region"`
	PostalCode string `json:"postalCode"`
	Country    string `json:"country"`
}

// Transaction is one stored transaction.
type Transaction struct {
	ID               uuid.UUID
	UserID           uuid.UUID
	BankConnectionID *uuid.UUID
	AccountID        uuid.UUID
	Provider         string
	ProviderID       string
	Status           string
	Summary          string
	Amount           Money
	Currency         string
	AuthorizedDate   *Date
	PostedDate       *Date
	MerchantName     *string
	CategoryID       *uuid.UUID
	CategorySource   *string
	// CategoryRuleID is the rule that set the category (CategorySource
	// CategoryFromRule); nil otherwise.
	CategoryRuleID      *uuid.UUID
	Hidden              bool
	Fees                *Money
	FeeType             *string
	NetAmount           *Money
	SubAccount          *string
	PaymentChannel      *string
	CheckNumber         *string
	OriginalDescription *string
	Source              *string
	Type                *string
	CreatedAt           time.Time
	PostedAt            *time.Time
	// PendingProviderID names the pending transaction a posted one replaces.
	PendingProviderID *string
	// TransferID is the transfer the transaction is a side of, when the
	// reading scope sees it (listings fill it; nil otherwise).
	TransferID *uuid.UUID
}

// Day returns the transaction's date for ordering and filters: the posted
// date, or the authorized date for pending transactions.
func (t *Transaction) Day() *Date {
	if t.PostedDate != nil {
		return t.PostedDate
	}
	return t.AuthorizedDate
}

// Category is a user's transaction category, manual or copied from a provider.
type Category struct {
	ID              uuid.UUID
	UserID          uuid.UUID
	Provider        string
	ProviderID      string
	Name            string
	Group           string
	CategoryGroupID *uuid.UUID
	Description     string
	ReadOnly        bool
	UserEdited      bool
}

// CategoryGroup groups categories.
type CategoryGroup struct {
	ID       uuid.UUID
	UserID   uuid.UUID
	Name     string
	Provider string
}

// BalanceEntry is one account's stored balance on one day.
type BalanceEntry struct {
	ID          uuid.UUID
	AccountID   uuid.UUID
	AccountName string
	Date        Date
	Balance     Money
	Currency    string
	// Derived is set when the balance was computed backwards from a later
	// recorded balance and the transactions between (docs/balances.md),
	// not recorded from the provider or the user.
	Derived bool
}

// BankConnection is a user's link to a provider.
type BankConnection struct {
	ID                       uuid.UUID
	UserID                   uuid.UUID
	Provider                 string
	InstitutionID            string
	InstitutionName          string
	InstitutionLogoURL       string
	Status                   string
	BaseURL                  string
	LastSyncedAt             *time.Time
	LastProviderErrorCode    *string
	LastProviderErrorMessage *string
	ReconnectURL             *string
	NextSyncAt               *time.Time
	SyncInterval             time.Duration
	CreatedAt                time.Time
	// ConsentExpiresAt is when the user's consent to the provider ends, as
	// the provider last reported it; nil when it reports none. Caveat: it
	// is as of the last successful sync (a re-auth clears it).
	ConsentExpiresAt *time.Time
}

// Security is a tradable instrument held in an investment account.
type Security struct {
	ID                 uuid.UUID
	ProviderSecurityID string
	Symbol             *string
	Name               string
	Type               string
	ClosePrice         *Money
	Currency           string
}

// Holding is a position in one security in one account.
type Holding struct {
	ID               uuid.UUID
	AccountID        uuid.UUID
	SecurityID       uuid.UUID
	Provider         string
	Quantity         Money
	CostBasis        *Money
	InstitutionPrice Money
	InstitutionValue Money
	Currency         string
	PriceAsOf        *Date
}

// InvestmentTransaction is a buy, sell, dividend or other investment event.
type InvestmentTransaction struct {
	ID          uuid.UUID
	AccountID   uuid.UUID
	SecurityID  *uuid.UUID
	ProviderID  string
	Provider    string
	Date        Date
	Type        string
	Subtype     string
	Quantity    Money
	Price       Money
	Amount      Money
	Fees        *Money
	Currency    string
	Description string
}

// Scan reads a PostgreSQL date.
func (d *Date) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*d = DateOf(v)
		return nil
	case string:
		p, err := ParseDate(v)
		if err != nil {
			return err
		}
		*d = p
		return nil
	}
	return fmt.Errorf("scan date: unsupported %T", src)
}

// Value writes the date for PostgreSQL.
func (d Date) Value() (driver.Value, error) { return d.Format(DateLayout), nil }
