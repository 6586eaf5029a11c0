package v2

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/jsonw"
	"github.com/finsync/finsync/storage"
)

var transactionStatuses = map[string][]string{
	"pending": {domain.TxPending},
	"posted":  {domain.TxPosted},
	"deleted": {domain.TxDeleted},
	"all":     nil,
}

func (s *Server) listTransactions(c *gin.Context) {
	q := newQuery(c)
	f := storage.TransactionFilter{
		BankConnectionID: q.UUID("bankConnectionId"),
		AccountID:        q.UUID("bankAccountId"),
		CategoryID:       q.UUID("categoryId"),
		IncludeHidden:    q.Bool("includeHidden"),
	}
	f.Statuses = transactionStatuses[q.Enum("status", "posted", "pending", "posted", "deleted", "all")]
	f.Transfers = q.Enum("transfers", storage.TransfersInclude, storage.TransfersInclude, storage.TransfersExclude, storage.TransfersOnly)
	f.StartDate, f.EndDate = q.dateRange()
	f.IncludeDuplicates = q.Bool("includeDuplicates")
	pg := s.newPager(c, "transactions", q)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	checked, err := s.versionBeforeChecks(c, f)
	if err != nil {
		s.handle(c, err)
		return
	}
	if err := s.checkFilters(c, f.BankConnectionID, f.AccountID, f.CategoryID); err != nil {
		s.handle(c, err)
		return
	}
	rows, version, err := s.cfg.Store.ListTransactions(ctx, sc, f, pg.after, pg.fetch())
	if err != nil {
		s.handle(c, err)
		return
	}
	hasMore := pg.more(len(rows))
	if hasMore {
		rows = rows[:pg.limit]
	}
	buf := make([]byte, 0, 64+len(rows)*640)
	o := jsonw.Start(buf)
	o.Array("transactions", len(rows), func(b []byte, i int) []byte { return appendTransaction(b, &rows[i]) })
	var last storage.Keyset
	if len(rows) > 0 {
		t := &rows[len(rows)-1]
		last = storage.Keyset{Date: t.Day().Time, ID: t.ID}
	}
	pg.appendInfo(&o, hasMore, last)
	body := o.End()
	if checked < 0 || checked == version {
		s.keepPage(c, version, body)
	}
	writeJSON(c, http.StatusOK, body)
}

// appendTransaction appends the version 2 Transaction object.
func appendTransaction(b []byte, t *domain.Transaction) []byte {
	o := jsonw.Start(b)
	o.UUID("id", t.ID)
	o.UUIDPtr("bankConnectionId", t.BankConnectionID)
	o.UUID("bankAccountId", t.AccountID)
	o.String("provider", t.Provider)
	o.String("providerId", t.ProviderID)
	o.String("status", t.Status)
	o.String("summary", t.Summary)
	o.Money("amount", t.Amount)
	o.String("currency", t.Currency)
	o.DatePtr("authorizedDate", t.AuthorizedDate)
	o.DatePtr("postedDate", t.PostedDate)
	o.StringPtr("merchantName", t.MerchantName)
	o.UUIDPtr("categoryId", t.CategoryID)
	o.String("categorySource", categorySource(t))
	o.UUIDPtr("categoryRuleId", categoryRuleID(t))
	o.MoneyPtr("fees", t.Fees)
	o.StringPtr("feeType", t.FeeType)
	o.MoneyPtr("netAmount", t.NetAmount)
	o.StringPtr("subAccount", t.SubAccount)
	o.StringPtr("paymentChannel", t.PaymentChannel)
	o.StringPtr("checkNumber", t.CheckNumber)
	o.StringPtr("originalDescription", t.OriginalDescription)
	o.StringPtr("source", t.Source)
	o.UUIDPtr("transferId", t.TransferID)
	return o.End()
}

// categorySource is where the transaction's category (or its absence) came
// from: provider, rule or user. Rows stored without a category carry no
// source in the database; their (absent) category is the provider's.
func categorySource(t *domain.Transaction) string {
	if t.CategorySource == nil {
		return domain.CategoryFromProvider
	}
	return *t.CategorySource
}

// categoryRuleID is the rule that set the category, only while a rule's
// decision is the category shown.
func categoryRuleID(t *domain.Transaction) *uuid.UUID {
	if categorySource(t) != domain.CategoryFromRule {
		return nil
	}
	return t.CategoryRuleID
}
