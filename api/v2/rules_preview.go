package v2

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/api/cursor"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/internal/jsonw"
	"github.com/finsync/finsync/storage"
)

// previewRule answers POST /rules/preview: what creating the rule in the
// body would change now among the caller's stored transactions (count and
// one keyset page), without saving or changing anything. The body is
// validated exactly as createRule validates it.
func (s *Server) previewRule(c *gin.Context) {
	sc, in, compiled, err := s.readRule(c)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx := c.Request.Context()
	ok, err := s.cfg.Store.AreCategoriesOwned(ctx, sc.UserID, compiled.CategoryIDs())
	if err == nil && !ok {
		err = badf("outcomes: the category to set does not exist")
	}
	if err != nil {
		s.handle(c, err)
		return
	}
	def := (&storage.Rule{Conditions: in.Conditions, Outcomes: in.Outcomes, Priority: in.Priority}).DefinitionJSON()
	q := newQuery(c)
	pg := s.previewPager(c, q, def)
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	pctx, cancel := context.WithTimeout(ctx, previewBudget)
	defer cancel()
	pv, err := s.cfg.Store.PreviewRule(pctx, sc, compiled, s.ruleCache, sc.AccountIDs, pg.after, pg.limit)
	if err != nil {
		s.handle(c, previewError(ctx, err))
		return
	}
	body, err := s.previewBody(c, sc, pg, pv)
	if err != nil {
		s.handle(c, err)
		return
	}
	writeJSON(c, http.StatusOK, body)
}

// previewBudget bounds one preview's work, below the request deadline and
// the statement timeout: a rule that matches more transactions than can be
// evaluated in that time gets a 400 asking for narrower conditions.
const previewBudget = 8 * time.Second

// previewError turns a preview that ran out of its budget (the context's
// deadline, or the database's statement timeout) into a 400; ctx is the
// request's own context, whose end is not the preview's fault.
func previewError(ctx context.Context, err error) error {
	timedOut := errors.Is(err, storage.ErrStatementTimeout)
	if (errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) || timedOut {
		return badf("conditions: the rule matches too many transactions to preview in time; add conditions that narrow it")
	}
	return err
}

// previewPager is newPager for the preview: its cursors are bound to the
// rule's definition as well as to the user and the query.
func (s *Server) previewPager(c *gin.Context, q *query, def []byte) *pager {
	sum := sha256.Sum256(def)
	p := &pager{
		codec:   s.cfg.Cursors,
		binding: cursor.Binding{Listing: "rules/preview", UserID: scope(c).UserID, Filters: q.filters() + "&rule=" + hex.EncodeToString(sum[:])},
		limit:   q.limit(),
	}
	if raw, ok := q.Get("cursor"); ok {
		k, err := p.codec.Decode(p.binding, raw)
		if err != nil {
			q.Fail("cursor", "is not a cursor issued for this preview (the same rule and parameters)")
		}
		p.after = k
	}
	return p
}

// previewBody writes the RulePreview object: count, data, hasMore,
// nextCursor.
func (s *Server) previewBody(c *gin.Context, sc storage.Scope, pg *pager, pv storage.Preview) ([]byte, error) {
	ids := make([]uuid.UUID, len(pv.Changes))
	for i := range pv.Changes {
		ids[i] = pv.Changes[i].ID
	}
	txs, err := s.cfg.Store.ListTransactionsByID(c.Request.Context(), sc, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*domain.Transaction, len(txs))
	for i := range txs {
		byID[txs[i].ID] = &txs[i]
	}
	// A transaction deleted since the preview read it is left out.
	changes := make([]storage.PreviewChange, 0, len(pv.Changes))
	for _, ch := range pv.Changes {
		if byID[ch.ID] != nil {
			changes = append(changes, ch)
		}
	}
	o := jsonw.Start(make([]byte, 0, 128+len(changes)*900))
	o.Raw("count", strconv.AppendInt(nil, int64(pv.Count), 10))
	o.Array("data", len(changes), func(b []byte, i int) []byte {
		ch := &changes[i]
		item := jsonw.Start(b)
		item.Raw("transaction", appendTransaction(nil, byID[ch.ID]))
		item.Raw("current", appendPreviewState(nil, &ch.Current))
		item.Raw("new", appendPreviewState(nil, &ch.New))
		return item.End()
	})
	o.Bool("hasMore", pv.HasMore)
	if pv.HasMore && len(pv.Changes) > 0 {
		o.String("nextCursor", pg.codec.Encode(pg.binding, pv.Changes[len(pv.Changes)-1].Key))
	} else {
		o.Raw("nextCursor", []byte("null"))
	}
	return o.End(), nil
}

// appendPreviewState appends a RulePreviewState object.
func appendPreviewState(b []byte, st *storage.PreviewState) []byte {
	o := jsonw.Start(b)
	o.UUIDPtr("categoryId", st.CategoryID)
	t := domain.Transaction{CategorySource: st.CategorySource, CategoryRuleID: st.CategoryRuleID}
	o.String("categorySource", categorySource(&t))
	o.UUIDPtr("categoryRuleId", categoryRuleID(&t))
	o.StringPtr("merchantName", st.MerchantName)
	o.Bool("hidden", st.Hidden)
	return o.End()
}
