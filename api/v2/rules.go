package v2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/api/middleware"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/jobargs"
	"github.com/finsync/finsync/rules"
	"github.com/finsync/finsync/storage"
)

// JobInserter enqueues River jobs inside a database transaction; an
// insert-only *storage.JobClient is one.
type JobInserter = storage.JobInserter

// ruleView is the version 2 Rule object.
type ruleView struct {
	ID                uuid.UUID       `json:"id"`
	Conditions        json.RawMessage `json:"conditions"`
	Outcomes          json.RawMessage `json:"outcomes"`
	Priority          int             `json:"priority"`
	AllowedAccountIDs []uuid.UUID     `json:"allowedAccountIds"`
	CreatedAt         time.Time       `json:"createdAt"`
	UpdatedAt         time.Time       `json:"updatedAt"`
	ArchivedAt        *time.Time      `json:"archivedAt"`
}

func newRuleView(r storage.Rule) ruleView {
	return ruleView{
		ID:                r.ID,
		Conditions:        r.Conditions,
		Outcomes:          r.Outcomes,
		Priority:          r.Priority,
		AllowedAccountIDs: r.AllowedAccountIDs,
		CreatedAt:         r.CreatedAt.UTC(),
		UpdatedAt:         r.UpdatedAt.UTC(),
		ArchivedAt:        utc(r.ArchivedAt),
	}
}

// createRuleLimit is the create-rule budget of standard-plan users.
func (s *Server) createRuleLimit(c *gin.Context) (middleware.LimitInfo, bool) {
	p := middleware.GetPrincipal(c)
	if p == nil || p.Plan != domain.PlanStandard {
		return middleware.LimitInfo{}, false
	}
	return middleware.LimitInfo{Name: "create-rule", Count: CreateRulePerMinute, Period: time.Minute, Plan: p.Plan}, true
}

func (s *Server) listRules(c *gin.Context) {
	q := newQuery(c)
	includeArchived := q.Bool("includeArchived")
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	rows, err := s.cfg.Store.ListRules(c.Request.Context(), scope(c), includeArchived)
	if err != nil {
		s.handle(c, err)
		return
	}
	out := make([]ruleView, len(rows))
	for i, r := range rows {
		out[i] = newRuleView(r)
	}
	c.JSON(http.StatusOK, gin.H{"rules": out})
}

func (s *Server) createRule(c *gin.Context) {
	sc, in, compiled, err := s.readRule(c)
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx := c.Request.Context()
	var out storage.Rule
	err = s.cfg.Store.Atomic(ctx, func(tx *storage.Tx) error {
		if err := checkUserRules(ctx, tx, sc.UserID, uuid.Nil, compiled); err != nil {
			return err
		}
		if err := checkRuleCategories(ctx, tx, sc.UserID, compiled); err != nil {
			return err
		}
		if out, err = tx.CreateRule(ctx, sc.UserID, in, sc.AccountIDs); err != nil {
			return err
		}
		return s.enqueueApply(ctx, tx, out)
	})
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusCreated, newRuleView(out))
}

// readRule reads and validates the rule body of POST /rules and POST
// /rules/preview, within the credential's scope as it is now, not as
// cached with the credential: an account this key created a moment ago (on
// any process) is in it. The returned scope carries those accounts. The
// rule is compiled once, here; the body is read only up to
// rules.MaxRuleBytes.
func (s *Server) readRule(c *gin.Context) (storage.Scope, storage.RuleInput, *rules.Rule, error) {
	sc := scope(c)
	raw, err := readRuleBody(c)
	if err != nil {
		return sc, storage.RuleInput{}, nil, err
	}
	// The document's shape and counts first, before any database work.
	def, err := rules.DecodeDefinition(raw)
	if err != nil {
		return sc, storage.RuleInput{}, nil, ruleError(err)
	}
	if sc.AccountIDs, err = s.cfg.Store.ListScopeAccounts(c.Request.Context(), sc); err != nil {
		return sc, storage.RuleInput{}, nil, err
	}
	in, compiled, err := validateRule(c.Request.Context(), def, sc.AccountIDs)
	return sc, in, compiled, err
}

// errRuleTooLarge answers 400: a rule body longer than the rule engine
// accepts, refused before it is read whole.
var errRuleTooLarge = badf("body: a rule is at most %d bytes (the limit on a rule document's size)", rules.MaxRuleBytes)

// generalBodyLimit is the router's limit on every body (api.MaxBodyBytes),
// past which a body answers 413 whatever the endpoint.
const generalBodyLimit = 1 << 20

// readRuleBody is readBody for a rule document: a body longer than
// rules.MaxRuleBytes is refused with a 400 naming the limit, keeping at
// most that many bytes (the rest of a streamed body is read and
// discarded, so that one past the router's 1 MiB answers 413 as on every
// endpoint); a Content-Length past either limit is refused unread.
func readRuleBody(c *gin.Context) ([]byte, error) {
	switch {
	case c.Request.ContentLength > generalBodyLimit:
		return nil, errTooLarge
	case c.Request.ContentLength > rules.MaxRuleBytes:
		return nil, errRuleTooLarge
	}
	if c.Request.Body != nil {
		c.Request.Body = &cappedBody{ReadCloser: c.Request.Body, left: rules.MaxRuleBytes}
	}
	raw, err := readBody(c)
	if errors.Is(err, errRuleTooLarge) {
		return nil, errRuleTooLarge
	}
	return raw, err
}

// cappedBody passes on at most left bytes of a body; past them it reads
// the rest into io.Discard and fails with errRuleTooLarge, or with the
// body's own error (the router's *http.MaxBytesError past 1 MiB).
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left > 0 {
		n, err := b.ReadCloser.Read(p[:min(int64(len(p)), b.left)])
		b.left -= int64(n)
		return n, err
	}
	var one [1]byte
	n, err := io.ReadFull(b.ReadCloser, one[:])
	if n == 0 {
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		return 0, err
	}
	if _, err := io.Copy(io.Discard, b.ReadCloser); err != nil {
		return 0, err
	}
	return 0, errRuleTooLarge
}

// ruleError turns the rule engine's *ValidationError into a 400.
func ruleError(err error) error {
	var ve *rules.ValidationError
	if errors.As(err, &ve) {
		return badf("%s", ve.Error())
	}
	return err
}

// checkUserRules refuses a rule past the per-user limits: a new rule
// (creating) past rules.MaxRulesPerUser active rules, and a new or
// changed rule that raises the total size of the user's active rules'
// regular expressions past rules.MaxUserInsts (a change that does not
// raise it is accepted, so a user already over it can still lighten a
// rule). except is the rule being changed (uuid.Nil when creating). It
// holds the user's rule-creation lock for the rest of the transaction, so
// that concurrent creations and changes on any process cannot pass the
// limits together.
func checkUserRules(ctx context.Context, tx *storage.Tx, userID, except uuid.UUID, compiled *rules.Rule) error {
	active, err := tx.LockActiveRules(ctx, userID)
	if err != nil {
		return err
	}
	if except == uuid.Nil && len(active) >= rules.MaxRulesPerUser {
		return badf("rules: a user has at most %d active rules; archive one before creating another", rules.MaxRulesPerUser)
	}
	added := compiled.Insts()
	if added == 0 {
		return nil
	}
	total := added
	for _, r := range active {
		n := rules.StoredInsts(r.Conditions)
		if r.ID == except {
			if added <= n {
				return nil // the change does not raise the total
			}
			continue
		}
		total += n
	}
	if total > rules.MaxUserInsts {
		return badf("conditions: a user's active rules' regular expressions together compile to at most %d "+
			"instructions (the limit per user); this rule would bring them to %d", rules.MaxUserInsts, total)
	}
	return nil
}

// validateRule validates a decoded rule document with the rule engine
// (compiling it once), limited to the account scope, and returns its
// stored form and compiled rule.
func validateRule(ctx context.Context, def rules.Definition, accountScope []uuid.UUID) (storage.RuleInput, *rules.Rule, error) {
	compiled, err := rules.ValidateContext(ctx, def, rules.Options{Scope: accountScope})
	var ve *rules.ValidationError
	if errors.As(err, &ve) {
		return storage.RuleInput{}, nil, badf("%s", ve.Error())
	}
	if err != nil {
		return storage.RuleInput{}, nil, fmt.Errorf("validate rule: %w", err)
	}
	def = compiled.Definition()
	in := storage.RuleInput{Priority: def.Priority}
	if in.Conditions, err = json.Marshal(def.Conditions); err != nil {
		return in, nil, fmt.Errorf("encode rule conditions: %w", err)
	}
	if in.Outcomes, err = json.Marshal(def.Outcomes); err != nil {
		return in, nil, fmt.Errorf("encode rule outcomes: %w", err)
	}
	return in, compiled, nil
}

// checkRuleCategories refuses a rule that sets a category the user does
// not have (another user's category is unknown too).
func checkRuleCategories(ctx context.Context, tx *storage.Tx, userID uuid.UUID, r *rules.Rule) error {
	ids := r.CategoryIDs()
	ok, err := tx.AreCategoriesOwned(ctx, userID, ids)
	if err != nil {
		return err
	}
	if !ok {
		return badf("outcomes: the category to set does not exist")
	}
	return nil
}

// enqueueApply enqueues the job that re-applies the user's rules to their
// stored transactions, in the transaction of the rule change.
func (s *Server) enqueueApply(ctx context.Context, tx *storage.Tx, r storage.Rule) error {
	if s.cfg.Jobs == nil {
		return nil
	}
	if err := tx.Enqueue(ctx, s.cfg.Jobs, jobargs.ApplyRules{UserID: r.UserID, RuleID: r.ID}); err != nil {
		return fmt.Errorf("enqueue rule application: %w", err)
	}
	return nil
}

var ruleFields = []string{"conditions", "outcomes", "priority"}

func (s *Server) updateRule(c *gin.Context) {
	id, ok := s.pathID(c, "ruleId")
	if !ok {
		return
	}
	raw, err := readRuleBody(c)
	if err != nil {
		s.handle(c, err)
		return
	}
	patch, err := parseObject(raw, "body", ruleFields...)
	if err == nil && len(patch) == 0 {
		err = badf("body: name at least one field to change")
	}
	if err != nil {
		s.handle(c, err)
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	var out storage.Rule
	err = s.cfg.Store.Atomic(ctx, func(tx *storage.Tx) error {
		cur, err := tx.LockRule(ctx, sc, id)
		if err != nil {
			return err
		}
		if cur.ArchivedAt != nil {
			return badf("rule: archived rules cannot be changed")
		}
		merged, err := mergeRule(cur, patch)
		if err != nil {
			return err
		}
		def, err := rules.DecodeDefinition(merged)
		if err != nil {
			return ruleError(err)
		}
		if sc.AccountIDs, err = tx.ListScopeAccounts(ctx, sc); err != nil {
			return err
		}
		in, compiled, err := validateRule(ctx, def, ruleValidationScope(sc, cur))
		if err != nil {
			return err
		}
		if err := checkUserRules(ctx, tx, sc.UserID, id, compiled); err != nil {
			return err
		}
		if err := checkRuleCategories(ctx, tx, sc.UserID, compiled); err != nil {
			return err
		}
		if out, err = tx.UpdateRule(ctx, id, in); err != nil {
			return err
		}
		return s.enqueueApply(ctx, tx, out)
	})
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, newRuleView(out))
}

// mergeRule is the stored rule with the patch's members replacing its own,
// as one rule document.
func mergeRule(cur storage.Rule, patch members) ([]byte, error) {
	doc := members{
		"conditions": json.RawMessage(cur.Conditions),
		"outcomes":   json.RawMessage(cur.Outcomes),
		"priority":   json.RawMessage(fmt.Sprint(cur.Priority)),
	}
	for k, v := range patch {
		doc[k] = v
	}
	b, err := json.Marshal(map[string]json.RawMessage(doc))
	if err != nil {
		return nil, fmt.Errorf("merge rule %s: %w", cur.ID, err)
	}
	return b, nil
}

// ruleValidationScope is the accounts an updated rule's conditions may
// name: the credential's scope, or else the rule's own allowed accounts.
func ruleValidationScope(sc storage.Scope, r storage.Rule) []uuid.UUID {
	if sc.Scoped() {
		return sc.AccountIDs
	}
	return r.AllowedAccountIDs
}

func (s *Server) archiveRule(c *gin.Context) {
	id, ok := s.pathID(c, "ruleId")
	if !ok {
		return
	}
	ctx, sc := c.Request.Context(), scope(c)
	var out storage.Rule
	err := s.cfg.Store.Atomic(ctx, func(tx *storage.Tx) error {
		cur, err := tx.LockRule(ctx, sc, id)
		if err != nil || cur.ArchivedAt != nil {
			out = cur
			return err
		}
		if out, err = tx.ArchiveRule(ctx, id); err != nil {
			return err
		}
		return s.enqueueApply(ctx, tx, out)
	})
	if err != nil {
		s.handle(c, err)
		return
	}
	c.JSON(http.StatusOK, newRuleView(out))
}
