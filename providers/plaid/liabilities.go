package plaid

import (
	"context"
	"fmt"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/resilience"
)

type apr struct {
	AprPercentage        *domain.Money `json:"apr_percentage"`
	AprType              string        `json:"apr_type"`
	BalanceSubjectToApr  *domain.Money `json:"balance_subject_to_apr"`
	InterestChargeAmount *domain.Money `json:"interest_charge_amount"`
}

type creditLiability struct {
	AccountID            *string       `json:"account_id"`
	Aprs                 []apr         `json:"aprs"`
	IsOverdue            *bool         `json:"is_overdue"`
	LastPaymentAmount    *domain.Money `json:"last_payment_amount"`
	LastPaymentDate      *domain.Date  `json:"last_payment_date"`
	LastStatementBalance *domain.Money `json:"last_statement_balance"`
	MinimumPaymentAmount *domain.Money `json:"minimum_payment_amount"`
	NextPaymentDueDate   *domain.Date  `json:"next_payment_due_date"`
}

type studentLiability struct {
	AccountID  *string `json:"account_id"`
	LoanName   *string `json:"loan_name"`
	LoanStatus *struct {
		Type    *string      `json:"type"`
		EndDate *domain.Date `json:"end_date"`
	} `json:"loan_status"`
	InterestRatePercentage     *domain.Money `json:"interest_rate_percentage"`
	IsOverdue                  *bool         `json:"is_overdue"`
	LastPaymentAmount          *domain.Money `json:"last_payment_amount"`
	LastPaymentDate            *domain.Date  `json:"last_payment_date"`
	MinimumPaymentAmount       *domain.Money `json:"minimum_payment_amount"`
	NextPaymentDueDate         *domain.Date  `json:"next_payment_due_date"`
	OriginationDate            *domain.Date  `json:"origination_date"`
	OriginationPrincipalAmount *domain.Money `json:"origination_principal_amount"`
	OutstandingInterestAmount  *domain.Money `json:"outstanding_interest_amount"`
	ExpectedPayoffDate         *domain.Date  `json:"expected_payoff_date"`
	RepaymentPlan              *struct {
		Type        *string `json:"type"`
		Description *string `json:"description"`
	} `json:"repayment_plan"`
	PslfStatus *struct {
		EstimatedEligibilityDate *domain.Date  `json:"estimated_eligibility_date"`
		PaymentsMade             *domain.Money `json:"payments_made"`
		PaymentsRemaining        *domain.Money `json:"payments_remaining"`
	} `json:"pslf_status"`
	YtdInterestPaid  *domain.Money `json:"ytd_interest_paid"`
	YtdPrincipalPaid *domain.Money `json:"ytd_principal_paid"`
}

type mortgageLiability struct {
	AccountID    string `json:"account_id"`
	InterestRate struct {
		Percentage *domain.Money `json:"percentage"`
		Type       *string       `json:"type"`
	} `json:"interest_rate"`
	LoanTypeDescription        *string       `json:"loan_type_description"`
	MaturityDate               *domain.Date  `json:"maturity_date"`
	NextMonthlyPayment         *domain.Money `json:"next_monthly_payment"`
	NextPaymentDueDate         *domain.Date  `json:"next_payment_due_date"`
	LastPaymentAmount          *domain.Money `json:"last_payment_amount"`
	LastPaymentDate            *domain.Date  `json:"last_payment_date"`
	OriginationDate            *domain.Date  `json:"origination_date"`
	OriginationPrincipalAmount *domain.Money `json:"origination_principal_amount"`
	PastDueAmount              *domain.Money `json:"past_due_amount"`
	EscrowBalance              *domain.Money `json:"escrow_balance"`
	HasPmi                     *bool         `json:"has_pmi"`
	HasPrepaymentPenalty       *bool         `json:"has_prepayment_penalty"`
	YtdInterestPaid            *domain.Money `json:"ytd_interest_paid"`
	YtdPrincipalPaid           *domain.Money `json:"ytd_principal_paid"`
	PropertyAddress            *struct {
		City       *string `json:"city"`
		Country    *string `json:"country"`
		PostalCode *string `json:"postal_code"`
		Region     *string `json:"region"`
		Street     *string `json:"street"`
	} `json:"property_address"`
}

type liabilitiesResponse struct {
	Liabilities struct {
		Credit   []creditLiability   `json:"credit"`
		Student  []studentLiability  `json:"student"`
		Mortgage []mortgageLiability `json:"mortgage"`
	} `json:"liabilities"`
}

// ignorableLiabilityCodes are answers meaning "this item has no liability
// data", which leaves the accounts without details rather than failing.
var ignorableLiabilityCodes = map[string]bool{
	"PRODUCTS_NOT_SUPPORTED": true,
	"NO_LIABILITY_ACCOUNTS":  true,
	"PRODUCT_NOT_READY":      true,
	"INVALID_PRODUCT":        true,
}

// liabilities fetches /liabilities/get and returns the details by account id.
func (a *Adapter) liabilities(ctx context.Context, conn providers.Connection) (map[string]*domain.Liability, error) {
	var resp liabilitiesResponse
	if err := a.post(ctx, conn, "/liabilities/get", nil, &resp); err != nil {
		if pe := resilience.AsError(err); pe != nil && ignorableLiabilityCodes[pe.Code] {
			return nil, nil
		}
		return nil, fmt.Errorf("plaid liabilities: %w", err)
	}
	return mapLiabilities(resp), nil
}

func mapLiabilities(resp liabilitiesResponse) map[string]*domain.Liability {
	out := map[string]*domain.Liability{}
	for _, c := range resp.Liabilities.Credit {
		if c.AccountID != nil {
			out[*c.AccountID] = creditToDomain(c)
		}
	}
	for _, s := range resp.Liabilities.Student {
		if s.AccountID != nil {
			out[*s.AccountID] = studentToDomain(s)
		}
	}
	for _, m := range resp.Liabilities.Mortgage {
		out[m.AccountID] = mortgageToDomain(m)
	}
	return out
}

func creditToDomain(c creditLiability) *domain.Liability {
	l := &domain.Liability{
		Type:                 "credit",
		IsOverdue:            c.IsOverdue,
		LastPaymentAmount:    c.LastPaymentAmount,
		LastPaymentDate:      c.LastPaymentDate,
		LastStatementBalance: c.LastStatementBalance,
		MinimumPaymentAmount: c.MinimumPaymentAmount,
		NextPaymentDueDate:   c.NextPaymentDueDate,
	}
	for _, a := range c.Aprs {
		l.Aprs = append(l.Aprs, domain.APR{
			AprType: a.AprType, AprPercentage: a.AprPercentage,
			BalanceSubjectToApr: a.BalanceSubjectToApr, InterestChargeAmount: a.InterestChargeAmount,
		})
	}
	return l
}

func studentToDomain(s studentLiability) *domain.Liability {
	l := &domain.Liability{
		Type:                       "student",
		LoanName:                   s.LoanName,
		InterestRate:               s.InterestRatePercentage,
		IsOverdue:                  s.IsOverdue,
		LastPaymentAmount:          s.LastPaymentAmount,
		LastPaymentDate:            s.LastPaymentDate,
		MinimumPaymentAmount:       s.MinimumPaymentAmount,
		NextPaymentDueDate:         s.NextPaymentDueDate,
		OriginationDate:            s.OriginationDate,
		OriginationPrincipalAmount: s.OriginationPrincipalAmount,
		OutstandingInterestAmount:  s.OutstandingInterestAmount,
		ExpectedPayoffDate:         s.ExpectedPayoffDate,
		YtdInterestPaid:            s.YtdInterestPaid,
		YtdPrincipalPaid:           s.YtdPrincipalPaid,
	}
	if s.LoanStatus != nil && s.LoanStatus.Type != nil {
		l.LoanStatus = &domain.LoanStatus{Type: *s.LoanStatus.Type, EndDate: s.LoanStatus.EndDate}
	}
	if s.RepaymentPlan != nil && s.RepaymentPlan.Type != nil {
		l.RepaymentPlan = &domain.RepaymentPlan{Type: *s.RepaymentPlan.Type, Description: deref(s.RepaymentPlan.Description)}
	}
	if p := s.PslfStatus; p != nil {
		l.PslfStatus = &domain.PslfStatus{
			EstimatedEligibilityDate: p.EstimatedEligibilityDate,
			PaymentsMade:             p.PaymentsMade,
			PaymentsRemaining:        p.PaymentsRemaining,
		}
	}
	return l
}

func mortgageToDomain(m mortgageLiability) *domain.Liability {
	l := &domain.Liability{
		Type:                       "mortgage",
		InterestRate:               m.InterestRate.Percentage,
		InterestRateType:           m.InterestRate.Type,
		LoanTypeDescription:        m.LoanTypeDescription,
		MaturityDate:               m.MaturityDate,
		NextMonthlyPayment:         m.NextMonthlyPayment,
		NextPaymentDueDate:         m.NextPaymentDueDate,
		LastPaymentAmount:          m.LastPaymentAmount,
		LastPaymentDate:            m.LastPaymentDate,
		OriginationDate:            m.OriginationDate,
		OriginationPrincipalAmount: m.OriginationPrincipalAmount,
		PastDueAmount:              m.PastDueAmount,
		EscrowBalance:              m.EscrowBalance,
		HasPmi:                     m.HasPmi,
		HasPrepaymentPenalty:       m.HasPrepaymentPenalty,
		YtdInterestPaid:            m.YtdInterestPaid,
		YtdPrincipalPaid:           m.YtdPrincipalPaid,
	}
	if p := m.PropertyAddress; p != nil {
		l.PropertyAddress = &domain.PropertyAddress{
			Street: deref(p.Street), City: deref(p.City), Region: deref(p.Region),
			PostalCode: deref(p.PostalCode), Country: deref(p.Country),
		}
	}
	return l
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
