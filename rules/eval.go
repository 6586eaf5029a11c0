package rules

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
)

// opKind is a compiled condition's test.
type opKind uint8

const (
	opTextIs opKind = iota
	opTextIsNot
	opTextContains
	opTextNotContains
	opTextPrefix
	opTextSuffix
	opTextOneOf
	opTextMatches
	opAccountIs
	opAccountIsNot
	opAccountOneOf
	// The numeric kinds follow the order of numberOp: is, gt, gte, lt, lte,
	// between.
	opAmountIs
	opAmountGt
	opAmountGte
	opAmountLt
	opAmountLte
	opAmountBetween
	opDayIs
	opDayGt
	opDayGte
	opDayLt
	opDayLte
	opDayBetween
)

// Relative costs, used to order a rule's conditions cheapest first.
const (
	costAccount = iota
	costNumber
	costText
	costContains
	costMatches
)

// Text slots of a Prepared transaction.
const (
	slotSummary = iota
	slotOriginalDescription
	slotMerchantName
	textSlots
)

// cond is a compiled condition.
type cond struct {
	kind         opKind
	slot         uint8          // text conditions: which field
	cost         int            // evaluation order within the rule
	text         string         // folded value of single-string text tests
	texts        []string       // folded, sorted, distinct values of oneOf
	re           *regexp.Regexp // matches
	pattern      string         // matches, until compilePatterns compiles it
	path         string         // matches, until compiled: the value's path
	insts        int            // matches: the program's size bound (progSize)
	accounts     []uuid.UUID    // Account tests
	lo, hi       bound          // Amount tests: the value, or [lo, hi]
	dayLo, dayHi int            // transactionDay tests: the value, or [lo, hi]
}

// CategoryRef is the category a rule sets: its id and display name.
type CategoryRef struct {
	ID   uuid.UUID
	Name string
}

// Rule is a compiled rule: validated, its regular expressions compiled, its
// conditions ordered cheapest first. A Rule is immutable and safe for
// concurrent use.
type Rule struct {
	id        uuid.UUID
	priority  int
	createdAt time.Time
	allowed   []uuid.UUID
	conds     []cond

	setCategory bool
	category    CategoryRef
	setMerchant bool
	merchant    string
	hide        bool

	def         Definition
	categoryIDs []uuid.UUID
	accountIDs  []uuid.UUID
}

// ID returns the rule's id (zero for a rule compiled by Validate).
func (r *Rule) ID() uuid.UUID { return r.id }

// Priority returns the rule's priority, 1 to 100.
func (r *Rule) Priority() int { return r.priority }

// CreatedAt returns the rule's creation time.
func (r *Rule) CreatedAt() time.Time { return r.createdAt }

// AllowedAccountIDs returns the accounts the rule is limited to; nil means
// every account.
func (r *Rule) AllowedAccountIDs() []uuid.UUID { return cloneIDs(r.allowed) }

// CategoryIDs returns the ids of the categories the rule's outcomes set, so
// that the caller can check they belong to the user.
func (r *Rule) CategoryIDs() []uuid.UUID { return slices.Clone(r.categoryIDs) }

// AccountIDs returns the distinct account ids the rule's conditions name.
func (r *Rule) AccountIDs() []uuid.UUID { return slices.Clone(r.accountIDs) }

// Definition returns the rule's definition as validated.
func (r *Rule) Definition() Definition { return cleanDefinition(&r.def) }

// Input is what rules see of one transaction. Text fields are the provider's
// values (not a name a rule set); a missing one is the empty string.
type Input struct {
	AccountID           uuid.UUID
	Summary             string
	OriginalDescription string
	MerchantName        string
	// Amount is signed, outflow negative.
	Amount decimal.Decimal
	// Day is the day of month (1..31) of the transaction's date; 0 when the
	// transaction has no date, which no transactionDay condition matches.
	Day int
}

// InputFromTransaction builds the Input of a stored transaction, its date
// being the posted date or else the authorized date.
func InputFromTransaction(t *domain.Transaction) Input {
	in := Input{
		AccountID: t.AccountID,
		Summary:   t.Summary,
		Amount:    t.Amount.Decimal(),
	}
	if t.OriginalDescription != nil {
		in.OriginalDescription = *t.OriginalDescription
	}
	if t.MerchantName != nil {
		in.MerchantName = *t.MerchantName
	}
	if d := t.Day(); d != nil && !d.IsZero() {
		in.Day = d.Day()
	}
	return in
}

// Prepared is an Input made ready for evaluation: text folded once, amount
// in fixed point when it fits. Evaluating rules against it does not
// allocate.
type Prepared struct {
	account uuid.UUID
	raw     [textSlots]string
	folded  [textSlots]string
	amount  bound
	day     int
}

// Prepare makes in ready for evaluation.
func Prepare(in Input) Prepared {
	p := Prepared{
		account: in.AccountID,
		raw:     [textSlots]string{in.Summary, in.OriginalDescription, in.MerchantName},
		amount:  newBound(in.Amount),
		day:     in.Day,
	}
	for i, s := range p.raw {
		p.folded[i] = foldString(s)
	}
	return p
}

// PrepareTransaction prepares a stored transaction: Prepare of
// InputFromTransaction.
func PrepareTransaction(t *domain.Transaction) Prepared {
	return Prepare(InputFromTransaction(t))
}

// Matches reports whether the rule applies to the transaction: its account
// is allowed and every condition matches.
func (r *Rule) Matches(p *Prepared) bool {
	if r.allowed != nil && !containsID(r.allowed, p.account) {
		return false
	}
	for i := range r.conds {
		if !r.conds[i].match(p) {
			return false
		}
	}
	return true
}

// containsID reports whether id is in ids.
func containsID(ids []uuid.UUID, id uuid.UUID) bool {
	for i := range ids {
		if ids[i] == id {
			return true
		}
	}
	return false
}

// match evaluates one condition.
func (c *cond) match(p *Prepared) bool {
	switch {
	case c.kind <= opTextMatches:
		return c.matchText(p)
	case c.kind <= opAccountOneOf:
		return c.matchAccount(p)
	case c.kind <= opAmountBetween:
		return c.matchAmount(p)
	default:
		return c.matchDay(p)
	}
}

func (c *cond) matchText(p *Prepared) bool {
	s := p.folded[c.slot]
	switch c.kind {
	case opTextIs:
		return s == c.text
	case opTextIsNot:
		return s != c.text
	case opTextContains:
		return strings.Contains(s, c.text)
	case opTextNotContains:
		return !strings.Contains(s, c.text)
	case opTextPrefix:
		return strings.HasPrefix(s, c.text)
	case opTextSuffix:
		return strings.HasSuffix(s, c.text)
	case opTextOneOf:
		_, found := slices.BinarySearch(c.texts, s)
		return found
	default:
		return c.re.MatchString(p.raw[c.slot])
	}
}

func (c *cond) matchAccount(p *Prepared) bool {
	switch c.kind {
	case opAccountIs:
		return p.account == c.accounts[0]
	case opAccountIsNot:
		return p.account != c.accounts[0]
	default:
		return containsID(c.accounts, p.account)
	}
}

func (c *cond) matchAmount(p *Prepared) bool {
	switch c.kind {
	case opAmountIs:
		return cmpBound(&p.amount, &c.lo) == 0
	case opAmountGt:
		return cmpBound(&p.amount, &c.lo) > 0
	case opAmountGte:
		return cmpBound(&p.amount, &c.lo) >= 0
	case opAmountLt:
		return cmpBound(&p.amount, &c.lo) < 0
	case opAmountLte:
		return cmpBound(&p.amount, &c.lo) <= 0
	default:
		return cmpBound(&p.amount, &c.lo) >= 0 && cmpBound(&p.amount, &c.hi) <= 0
	}
}

// cmpBound compares two amounts: in fixed point when both fit, otherwise
// exactly as decimals.
func cmpBound(a, b *bound) int {
	if a.fits && b.fits {
		switch {
		case a.fixed < b.fixed:
			return -1
		case a.fixed > b.fixed:
			return 1
		default:
			return 0
		}
	}
	return a.dec.Cmp(b.dec)
}

func (c *cond) matchDay(p *Prepared) bool {
	d := p.day
	if d == 0 {
		return false
	}
	switch c.kind {
	case opDayIs:
		return d == c.dayLo
	case opDayGt:
		return d > c.dayLo
	case opDayGte:
		return d >= c.dayLo
	case opDayLt:
		return d < c.dayLo
	case opDayLte:
		return d <= c.dayLo
	default:
		return d >= c.dayLo && d <= c.dayHi
	}
}

// Decision is the value rules decided for one field and the rule that
// decided it. Decided is false when no matching rule sets the field.
type Decision[T any] struct {
	Decided bool
	Value   T
	RuleID  uuid.UUID
}

// Result is what the rules decide for one transaction, field by field. It
// says nothing about whether the caller should apply a decision (a category
// set by the user, for one, is kept whatever the rules say).
type Result struct {
	Category     Decision[CategoryRef]
	MerchantName Decision[string]
	Hidden       Decision[bool]
}

// Any reports whether any field was decided.
func (res *Result) Any() bool {
	return res.Category.Decided || res.MerchantName.Decided || res.Hidden.Decided
}

// applyTo writes the rule's outcomes into res, replacing earlier decisions.
func (r *Rule) applyTo(res *Result) {
	if r.setCategory {
		res.Category = Decision[CategoryRef]{Decided: true, Value: r.category, RuleID: r.id}
	}
	if r.setMerchant {
		res.MerchantName = Decision[string]{Decided: true, Value: r.merchant, RuleID: r.id}
	}
	if r.hide {
		res.Hidden = Decision[bool]{Decided: true, Value: true, RuleID: r.id}
	}
}

// Set is a user's active compiled rules in the order they run: ascending
// priority, then creation time, then id. A Set is immutable and safe for
// concurrent use.
type Set struct {
	rules []*Rule
}

// NewSet orders rules into a Set. Nil rules are skipped.
func NewSet(rules ...*Rule) *Set {
	s := &Set{rules: make([]*Rule, 0, len(rules))}
	for _, r := range rules {
		if r != nil {
			s.rules = append(s.rules, r)
		}
	}
	slices.SortStableFunc(s.rules, compareRules)
	return s
}

// compareRules orders rules by priority, creation time, then id.
func compareRules(a, b *Rule) int {
	if a.priority != b.priority {
		return a.priority - b.priority
	}
	if c := a.createdAt.Compare(b.createdAt); c != 0 {
		return c
	}
	return slices.Compare(a.id[:], b.id[:])
}

// Len returns the number of rules in the set.
func (s *Set) Len() int { return len(s.rules) }

// Rules returns the rules in the order they run.
func (s *Set) Rules() []*Rule { return slices.Clone(s.rules) }

// Apply runs every rule in order against the transaction and returns what
// they decide: for each field, the value set by the last matching rule that
// sets it (the highest priority number, then the latest created).
func (s *Set) Apply(p *Prepared) Result {
	var res Result
	for _, r := range s.rules {
		if r.Matches(p) {
			r.applyTo(&res)
		}
	}
	return res
}

// WithMeta returns a copy of r carrying meta's identity (id, creation
// time, allowed accounts) instead of its own, sharing the compiled
// conditions (a Rule is immutable), so a rule validated once can join a
// Set without being compiled again.
func (r *Rule) WithMeta(meta Meta) *Rule {
	c := *r
	c.id, c.createdAt, c.allowed = meta.ID, meta.CreatedAt, cloneIDs(meta.AllowedAccountIDs)
	return &c
}
