package v2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/api/params"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/storage"
)

// accountWriteFields are the body fields of POST and PATCH /accounts.
var accountWriteFields = []string{
	"name", "institutionName", "type", "subtype", "mask", "currency",
	"currentBalance", "availableBalance", "liability",
}

// liabilityTypes are the liability kinds a manual account may carry.
var liabilityTypes = []string{"credit", "student", "mortgage"}

func (s *Server) createAccount(c *gin.Context) {
	m, err := readObject(c, accountWriteFields...)
	if err != nil {
		s.handle(c, err)
		return
	}
	ma, err := manualAccountFrom(m)
	if err != nil {
		s.handle(c, err)
		return
	}
	p := middleware.GetPrincipal(c)
	credential := uuid.Nil
	if p.AccountIDs != nil {
		credential = p.CredentialID
	}
	ctx := c.Request.Context()
	var a storage.AccountWithConnection
	err = s.cfg.Store.Atomic(ctx, func(tx *storage.Tx) error {
		var err error
		if a, err = tx.CreateManualAccount(ctx, p.UserID, credential, ma); err != nil {
			return err
		}
		return s.propagate(ctx, tx, storage.EventAccountCreated, a)
	})
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"account": newAccountView(a)})
}

// manualAccountFrom reads the body of POST /accounts.
func manualAccountFrom(m members) (storage.ManualAccount, error) {
	var ma storage.ManualAccount
	var err error
	if ma.Name, err = required(m, "name", m.name); err != nil {
		return ma, err
	}
	if ma.Type, err = required(m, "type", m.name); err != nil {
		return ma, err
	}
	if ma.Currency, err = required(m, "currency", m.currencyCode); err != nil {
		return ma, err
	}
	var p storage.AccountPatch
	if err := readOptionalAccountFields(m, &p); err != nil {
		return ma, err
	}
	ma.InstitutionName, ma.Subtype, ma.Mask = deref(p.InstitutionName), deref(p.Subtype), deref(p.Mask)
	ma.CurrentBalance, ma.AvailableBalance, ma.Liability = p.CurrentBalance, p.AvailableBalance, p.Liability
	return ma, nil
}

// required reads a required member with the given reader.
func required(m members, name string, read func(string) (string, error)) (string, error) {
	if !m.has(name) {
		return "", badf("%s: is required", name)
	}
	return read(name)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readOptionalAccountFields reads the nullable fields of an account body
// into the patch, setting the flag of each field present.
func readOptionalAccountFields(m members, p *storage.AccountPatch) error {
	var err error
	texts := []struct {
		name string
		set  *bool
		dst  **string
	}{
		{"institutionName", &p.SetInstitutionName, &p.InstitutionName},
		{"subtype", &p.SetSubtype, &p.Subtype},
		{"mask", &p.SetMask, &p.Mask},
	}
	for _, f := range texts {
		if !m.has(f.name) {
			continue
		}
		*f.set = true
		if *f.dst, err = m.label(f.name, true); err != nil {
			return err
		}
	}
	if m.has("currentBalance") {
		p.SetCurrentBalance = true
		if p.CurrentBalance, err = m.money("currentBalance"); err != nil {
			return err
		}
	}
	if m.has("availableBalance") {
		p.SetAvailableBalance = true
		if p.AvailableBalance, err = m.money("availableBalance"); err != nil {
			return err
		}
	}
	if m.has("liability") {
		p.SetLiability = true
		if p.Liability, err = readLiability(m["liability"]); err != nil {
			return err
		}
	}
	return nil
}

// readLiability decodes a liability object of a request (null yields nil).
func readLiability(raw json.RawMessage) (*domain.Liability, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	fields, err := parseObject(raw, "liability", append(liabilityInputFields, "interestRateType")...)
	if err == nil && fields.has("interestRateType") {
		err = badf("liability.interestRateType: is response-only and cannot be set")
	}
	if err != nil {
		return nil, err
	}
	if !fields.has("type") {
		return nil, badf("liability.type: is required")
	}
	var l domain.Liability
	if err := strictDecode(raw, "liability", &l); err != nil {
		return nil, err
	}
	if !contains(liabilityTypes, l.Type) {
		return nil, badf("liability.type: must be one of credit, student, mortgage")
	}
	return &l, nil
}

// liabilityInputFields are the Liability fields a request may send
// (interestRateType is response-only).
var liabilityInputFields = []string{
	"type", "minimumPaymentAmount", "nextPaymentDueDate", "lastPaymentAmount", "lastPaymentDate",
	"interestRate", "isOverdue", "lastStatementBalance", "aprs", "loanName", "loanStatus",
	"repaymentPlan", "pslfStatus", "originationDate", "originationPrincipalAmount",
	"expectedPayoffDate", "outstandingInterestAmount", "ytdInterestPaid", "ytdPrincipalPaid",
	"nextMonthlyPayment", "escrowBalance", "hasPmi", "hasPrepaymentPenalty", "propertyAddress",
	"loanTypeDescription", "maturityDate", "pastDueAmount",
}

func (s *Server) updateAccount(c *gin.Context) {
	id, ok := s.pathID(c, "accountId")
	if !ok {
		return
	}
	m, err := readObject(c, accountWriteFields...)
	if err != nil {
		s.handle(c, err)
		return
	}
	p, err := accountPatchFrom(m)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx := c.Request.Context()
	var a storage.AccountWithConnection
	err = s.cfg.Store.Atomic(ctx, func(tx *storage.Tx) error {
		var err error
		if a, err = tx.UpdateManualAccount(ctx, scope(c), id, p); err != nil {
			return err
		}
		return s.propagate(ctx, tx, storage.EventAccountUpdated, a)
	})
	if err != nil {
		s.handle(c, accountWriteError(err))
		return
	}
	c.JSON(http.StatusOK, gin.H{"account": newAccountView(a)})
}

// accountPatchFrom reads the body of PATCH /accounts/{accountId}.
func accountPatchFrom(m members) (storage.AccountPatch, error) {
	var p storage.AccountPatch
	if len(m) == 0 {
		return p, badf("body: name at least one field to change")
	}
	for _, name := range []string{"name", "type"} {
		if !m.has(name) {
			continue
		}
		v, err := m.name(name)
		if err != nil {
			return p, err
		}
		if name == "name" {
			p.Name = &v
		} else {
			p.Type = &v
		}
	}
	if m.has("currency") {
		cur, err := m.currencyCode("currency")
		if err != nil {
			return p, err
		}
		p.Currency = &cur
	}
	return p, readOptionalAccountFields(m, &p)
}

func (s *Server) closeAccount(c *gin.Context) {
	id, ok := s.pathID(c, "accountId")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	var a storage.AccountWithConnection
	err := s.cfg.Store.Atomic(ctx, func(tx *storage.Tx) error {
		var changed bool
		var err error
		if a, changed, err = tx.CloseManualAccount(ctx, scope(c), id); err != nil || !changed {
			return err
		}
		return s.propagate(ctx, tx, storage.EventAccountClosed, a)
	})
	if err != nil {
		s.handle(c, accountWriteError(err))
		return
	}
	c.JSON(http.StatusOK, gin.H{"account": newAccountView(a)})
}

// propagate enqueues the account's change for every destination the
// account is linked to, in the transaction of the change: one outbox event
// per destination carrying the account as it now is, and the job that
// drains each destination's outbox.
func (s *Server) propagate(ctx context.Context, tx *storage.Tx, eventType string, a storage.AccountWithConnection) error {
	payload, err := json.Marshal(newAccountView(a))
	if err != nil {
		return fmt.Errorf("encode account %s for destinations: %w", a.ID, err)
	}
	ev := storage.AccountEvent{ID: uuid.New(), AccountID: a.ID, Type: eventType, Account: payload,
		OccurredAt: time.Now().UTC().Truncate(time.Microsecond)}
	dests, err := tx.EnqueueAccountEvent(ctx, ev)
	if err != nil || s.cfg.Jobs == nil {
		return err
	}
	for _, d := range dests {
		if err := tx.Enqueue(ctx, s.cfg.Jobs, jobargs.DeliverDestination{DestinationID: d}); err != nil {
			return fmt.Errorf("enqueue delivery to destination %s: %w", d, err)
		}
	}
	return nil
}

// accountWriteError maps storage refusals of account writes to 400s.
func accountWriteError(err error) error {
	switch {
	case errors.Is(err, storage.ErrNotManual):
		return badf("account: bank-synced accounts are read-only; only manual accounts can be changed")
	case errors.Is(err, storage.ErrClosed):
		return badf("account: the account is closed")
	}
	return err
}

// pathID parses a UUID path parameter (canonical 36-character form); a
// malformed one answers 400 BAD_REQUEST "<name>: must be a UUID". An empty
// value, or one holding a slash (sent escaped, %2F), makes the decoded path
// match no operation of the document (/v2/rules//), so it answers 404 like
// an unknown path. A well-formed id that is missing or out of scope is
// left to the handler (404).
func (s *Server) pathID(c *gin.Context, name string) (uuid.UUID, bool) {
	raw := c.Param(name)
	if raw == "" || strings.Contains(raw, "/") {
		Fail(c, http.StatusNotFound, CodeNotFound, "No such endpoint")
		return uuid.Nil, false
	}
	id, ok := params.ParseUUID(raw)
	if !ok {
		s.handle(c, badf("%s: must be a UUID", name))
		return uuid.Nil, false
	}
	return id, true
}
