package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Options tune validation.
type Options struct {
	// Scope is the account scope of the credential creating the rule: a
	// condition may name only these accounts. Nil means every account; an
	// empty non-nil slice allows no account.
	Scope []uuid.UUID
}

// Meta is a stored rule's identity, carried by its compiled form.
type Meta struct {
	// ID is the rule's id; it is reported with every decision the rule makes.
	ID uuid.UUID
	// CreatedAt orders rules of equal priority (earlier first).
	CreatedAt time.Time
	// AllowedAccountIDs limits the rule to these accounts; nil means every
	// account. A rule never applies to a transaction of another account.
	AllowedAccountIDs []uuid.UUID
}

// Validate is ValidateContext without a context.
func Validate(def Definition, opts Options) (*Rule, error) {
	return ValidateContext(context.Background(), def, opts)
}

// ValidateContext checks a decoded definition and returns its compiled
// form (without identity), compiling each regular expression once, after
// every cheap check of the whole rule. Errors are *ValidationError, or
// ctx's error when ctx ends between two regular expressions.
func ValidateContext(ctx context.Context, def Definition, opts Options) (*Rule, error) {
	return build(ctx, &def, opts, Meta{}, clientLimits())
}

// ValidateJSON is ValidateJSONContext without a context.
func ValidateJSON(raw []byte, opts Options) (Definition, *Rule, error) {
	return ValidateJSONContext(context.Background(), raw, opts)
}

// ValidateJSONContext decodes raw strictly (see [DecodeDefinition]) and
// validates it, compiling each regular expression once, after every cheap
// check of the whole rule has passed. It returns the decoded definition,
// ready to store, and its compiled form. It stops between regular
// expressions when ctx ends, returning ctx's error (not a
// *ValidationError); a single compilation is not interrupted, but the
// limits bound it.
func ValidateJSONContext(ctx context.Context, raw []byte, opts Options) (Definition, *Rule, error) {
	def, err := DecodeDefinition(raw)
	if err != nil {
		return Definition{}, nil, err
	}
	r, err := build(ctx, &def, opts, Meta{}, clientLimits())
	if err != nil {
		return Definition{}, nil, err
	}
	return def, r, nil
}

// Compile validates def (without scope: a stored rule's reach is set by
// meta.AllowedAccountIDs, and without the count limits, as
// CompileJSONContext) and compiles it with its identity.
func Compile(def Definition, meta Meta) (*Rule, error) {
	return build(context.Background(), &def, Options{}, meta, storedLimits())
}

// CompileJSON is CompileJSONContext without a context.
func CompileJSON(raw []byte, meta Meta) (*Rule, error) {
	return CompileJSONContext(context.Background(), raw, meta)
}

// CompileJSONContext decodes a stored rule's JSON and compiles it,
// stopping between regular expressions when ctx ends. A stored rule is
// not held to the count limits (conditions, values, document size, the
// rule's total program size): one saved before they existed keeps
// running. The limits of each regular expression hold.
func CompileJSONContext(ctx context.Context, raw []byte, meta Meta) (*Rule, error) {
	def, err := decodeStored(raw)
	if err != nil {
		return nil, fmt.Errorf("decode rule %s: %w", meta.ID, err)
	}
	r, err := build(ctx, &def, Options{}, meta, storedLimits())
	if err != nil {
		return nil, fmt.Errorf("compile rule %s: %w", meta.ID, err)
	}
	return r, nil
}

// build validates and compiles def; the first problem found is returned.
// Every check runs before the first regular expression is compiled.
func build(ctx context.Context, def *Definition, opts Options, meta Meta, lim sizeLimits) (*Rule, error) {
	if def.rootIssue != nil {
		return nil, def.rootIssue
	}
	r := &Rule{
		id:        meta.ID,
		createdAt: meta.CreatedAt,
		allowed:   cloneIDs(meta.AllowedAccountIDs),
	}
	if err := r.buildConditions(def, opts.Scope, lim); err != nil {
		return nil, err
	}
	if err := r.buildOutcomes(def, lim); err != nil {
		return nil, err
	}
	if def.priorityIssue != "" {
		return nil, invalid("priority", def.priorityIssue)
	}
	if def.Priority < 1 || def.Priority > 100 {
		return nil, invalid("priority", "must be between 1 and 100")
	}
	r.priority = def.Priority
	if err := r.compilePatterns(ctx, lim.ruleInsts); err != nil {
		return nil, err
	}
	// Cheap conditions first, so that a failing rule exits early.
	slices.SortStableFunc(r.conds, func(a, b cond) int { return a.cost - b.cost })
	r.def = cleanDefinition(def)
	return r, nil
}

// compilePatterns checks the total size of the rule's regular expressions
// and compiles each, in the order of the conditions, watching ctx between
// two.
func (r *Rule) compilePatterns(ctx context.Context, maxInsts int) error {
	total, first := 0, -1
	for i := range r.conds {
		if r.conds[i].kind == opTextMatches {
			total += r.conds[i].insts
			if first < 0 {
				first = i
			}
		}
	}
	if total > maxInsts {
		return invalid("conditions", fmt.Sprintf("the rule's regular expressions are too complex together: "+
			"their compiled programs would exceed %d instructions (the limit per rule)", MaxRuleInsts))
	}
	for i := range r.conds {
		c := &r.conds[i]
		if c.kind != opTextMatches {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("compile rule: %w", err)
		}
		re, err := regexp.Compile(c.pattern)
		if err != nil {
			return invalid(c.path, regexpMessage(err))
		}
		c.re, c.pattern, c.path = re, "", ""
	}
	return nil
}

// cloneIDs copies ids, keeping nil as nil.
func cloneIDs(ids []uuid.UUID) []uuid.UUID {
	if ids == nil {
		return nil
	}
	return append(make([]uuid.UUID, 0, len(ids)), ids...)
}

// cleanDefinition copies the exported parts of a valid definition.
func cleanDefinition(def *Definition) Definition {
	out := Definition{Priority: def.Priority}
	for _, c := range def.Conditions {
		out.Conditions = append(out.Conditions, Condition{Field: c.Field, Operator: c.Operator, Value: slices.Clone(c.Value)})
	}
	for _, o := range def.Outcomes {
		out.Outcomes = append(out.Outcomes, Outcome{Action: o.Action, Field: o.Field, Value: slices.Clone(o.Value)})
	}
	return out
}

func (r *Rule) buildConditions(def *Definition, scope []uuid.UUID, lim sizeLimits) error {
	if def.conditionsIssue != "" {
		return invalid("conditions", def.conditionsIssue)
	}
	if len(def.Conditions) == 0 {
		return invalid("conditions", "must have at least 1 item")
	}
	if len(def.Conditions) > lim.conditions {
		return invalid("conditions", fmt.Sprintf("has more than %d items: a rule has at most %d conditions", MaxConditions, MaxConditions))
	}
	for i, c := range def.Conditions {
		path := fmt.Sprintf("conditions[%d]", i)
		cc, err := compileCondition(c, path, scope, lim)
		if err != nil {
			return err
		}
		r.conds = append(r.conds, cc)
		r.accountIDs = appendUnique(r.accountIDs, cc.accounts...)
	}
	return nil
}

// appendUnique appends the ids not yet in list.
func appendUnique(list []uuid.UUID, ids ...uuid.UUID) []uuid.UUID {
	for _, id := range ids {
		if !slices.Contains(list, id) {
			list = append(list, id)
		}
	}
	return list
}

// compileCondition validates one condition and compiles it.
func compileCondition(c Condition, path string, scope []uuid.UUID, lim sizeLimits) (cond, error) {
	if c.issue != nil {
		return cond{}, invalid(joinPath(path, c.issue.Path), c.issue.Message)
	}
	if c.Field == "" {
		return cond{}, invalid(path+".field", "is required")
	}
	var (
		cc  cond
		err *ValidationError
	)
	switch c.Field {
	case FieldSummary, FieldOriginalDescription, FieldMerchantName:
		cc, err = compileText(c, path, lim)
	case FieldAccount:
		cc, err = compileAccount(c, path, scope, lim.listValues)
	case FieldAmount:
		cc, err = compileAmount(c, path)
	case FieldTransactionDay:
		cc, err = compileDay(c, path)
	default:
		return cond{}, invalid(path+".field", fmt.Sprintf("unknown field %q; must be one of %s", c.Field, fieldList))
	}
	if err != nil {
		return cond{}, err
	}
	return cc, nil
}

// checkOperator reports an unknown or missing operator, or a missing value.
func checkOperator(c Condition, path string, known bool, list string) *ValidationError {
	if c.Operator == "" {
		return invalid(path+".operator", "is required")
	}
	if !known {
		return invalid(path+".operator", fmt.Sprintf("unknown operator %q for field %s; must be one of %s", c.Operator, c.Field, list))
	}
	if len(trimJSON(c.Value)) == 0 {
		return invalid(path+".value", "is required")
	}
	return nil
}

// textOp maps text operators to their kinds.
func textOp(op string) (opKind, bool) {
	switch op {
	case OpIs:
		return opTextIs, true
	case OpIsNot:
		return opTextIsNot, true
	case OpContains:
		return opTextContains, true
	case OpDoesNotContain:
		return opTextNotContains, true
	case OpStartsWith:
		return opTextPrefix, true
	case OpEndsWith:
		return opTextSuffix, true
	case OpOneOf:
		return opTextOneOf, true
	case OpMatches:
		return opTextMatches, true
	}
	return 0, false
}

// textFieldIndex maps a text field name to its slot in Prepared.
func textFieldIndex(field string) uint8 {
	switch field {
	case FieldSummary:
		return slotSummary
	case FieldOriginalDescription:
		return slotOriginalDescription
	default:
		return slotMerchantName
	}
}

func compileText(c Condition, path string, lim sizeLimits) (cond, *ValidationError) {
	kind, known := textOp(c.Operator)
	if err := checkOperator(c, path, known, textOpList); err != nil {
		return cond{}, err
	}
	cc := cond{kind: kind, slot: textFieldIndex(c.Field), cost: costText}
	vpath := path + ".value"
	switch kind {
	case opTextOneOf:
		items, err := stringList(c.Value, vpath, lim.listValues)
		if err != nil {
			return cond{}, err
		}
		for _, s := range items {
			cc.texts = append(cc.texts, foldString(s))
		}
		cc.texts = slices.Compact(slices.Sorted(slices.Values(cc.texts)))
	case opTextMatches:
		return compileMatches(cc, c.Value, vpath, lim.exactPatterns)
	default:
		s, ok := jsonString(c.Value)
		if !ok {
			return cond{}, invalid(vpath, "must be a string")
		}
		if s == "" && kind != opTextIs && kind != opTextIsNot {
			return cond{}, invalid(vpath, "must be a non-empty string")
		}
		cc.text = foldString(s)
	}
	if kind == opTextContains || kind == opTextNotContains {
		cc.cost = costContains
	}
	return cc, nil
}

// compileMatches checks a matches condition's regular expression: its
// length, its syntax and the size of its compiled program, estimated from
// the parse tree without compiling (see progSize). With exact (a stored
// rule), an estimate over the limit is checked again against the program
// regexp/syntax really compiles, as rules were checked when saved before
// the estimate existed, so that no stored rule stops for being estimated
// above its true size; the pattern's length bounds that compilation. The
// expression is compiled for matching later, once, by compilePatterns.
func compileMatches(cc cond, value json.RawMessage, vpath string, exact bool) (cond, *ValidationError) {
	pattern, ok := jsonString(value)
	if !ok {
		return cond{}, invalid(vpath, "must be a string")
	}
	if pattern == "" {
		return cond{}, invalid(vpath, "must be a non-empty regular expression")
	}
	if len(pattern) > MaxPatternBytes {
		return cond{}, invalid(vpath, fmt.Sprintf("regular expression is longer than %d bytes (the limit on a pattern's length)", MaxPatternBytes))
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return cond{}, invalid(vpath, regexpMessage(err))
	}
	size := progSize(parsed, MaxPatternInsts)
	if size > MaxPatternInsts && exact {
		prog, err := syntax.Compile(parsed.Simplify())
		if err != nil {
			return cond{}, invalid(vpath, regexpMessage(err))
		}
		size = len(prog.Inst)
	}
	if size > MaxPatternInsts {
		return cond{}, invalid(vpath, fmt.Sprintf("regular expression is too complex: its compiled program "+
			"would exceed %d instructions (the limit per pattern)", MaxPatternInsts))
	}
	cc.pattern, cc.path, cc.insts = pattern, vpath, size
	cc.cost = costMatches
	return cc, nil
}

// regexpMessage describes a regular expression the parser refused.
func regexpMessage(err error) string {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return "invalid regular expression: " + err.Error()
	}
	switch {
	case se.Code == syntax.ErrLarge, se.Code == syntax.ErrNestingDepth, se.Code == syntax.ErrInvalidRepeatSize && repeatTooLarge(se.Expr):
		return fmt.Sprintf("regular expression is too complex: its compiled program "+
			"would exceed %d instructions (the limit per pattern)", MaxPatternInsts)
	}
	return fmt.Sprintf("invalid regular expression: %s: `%s`", se.Code, se.Expr)
}

// repeatTooLarge reports whether a repeat the parser refused, {m,n} or
// {m,} or {m}, is well formed (m <= n) and so was refused for its size: a
// count above 1000, or repetitions nested to a program too large.
func repeatTooLarge(expr string) bool {
	inner, ok := strings.CutPrefix(expr, "{")
	if !ok {
		return false
	}
	if inner, ok = strings.CutSuffix(inner, "}"); !ok {
		return false
	}
	lo, hi, ranged := strings.Cut(inner, ",")
	m, err := strconv.Atoi(lo)
	if err != nil {
		return false
	}
	if !ranged || hi == "" {
		return true
	}
	n, err := strconv.Atoi(hi)
	return err == nil && m <= n
}

// stringList decodes a non-empty JSON array of strings.
func stringList(raw json.RawMessage, vpath string, maxValues int) ([]string, *ValidationError) {
	items, ok, over := arrayItemsAtMost(raw, maxValues)
	if over {
		return nil, invalid(vpath, fmt.Sprintf("has more than %d items: a oneOf condition has at most %d values", MaxListValues, MaxListValues))
	}
	if !ok {
		return nil, invalid(vpath, "must be an array of strings")
	}
	if len(items) == 0 {
		return nil, invalid(vpath, "must have at least 1 item")
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		s, ok := jsonString(item)
		if !ok {
			return nil, invalid(fmt.Sprintf("%s[%d]", vpath, i), "must be a string")
		}
		out = append(out, s)
	}
	return out, nil
}

func compileAccount(c Condition, path string, scope []uuid.UUID, maxValues int) (cond, *ValidationError) {
	kind, known := opAccountIs, true
	switch c.Operator {
	case OpIs:
	case OpIsNot:
		kind = opAccountIsNot
	case OpOneOf:
		kind = opAccountOneOf
	default:
		known = false
	}
	if err := checkOperator(c, path, known, accountOpList); err != nil {
		return cond{}, err
	}
	vpath := path + ".value"
	cc := cond{kind: kind, cost: costAccount}
	if kind != opAccountOneOf {
		id, err := accountID(c.Value, vpath, scope)
		if err != nil {
			return cond{}, err
		}
		cc.accounts = []uuid.UUID{id}
		return cc, nil
	}
	items, ok, over := arrayItemsAtMost(c.Value, maxValues)
	if over {
		return cond{}, invalid(vpath, fmt.Sprintf("has more than %d items: a oneOf condition has at most %d values", MaxListValues, MaxListValues))
	}
	if !ok {
		return cond{}, invalid(vpath, "must be an array of account ids")
	}
	if len(items) == 0 {
		return cond{}, invalid(vpath, "must have at least 1 item")
	}
	for i, item := range items {
		id, err := accountID(item, fmt.Sprintf("%s[%d]", vpath, i), scope)
		if err != nil {
			return cond{}, err
		}
		cc.accounts = appendUnique(cc.accounts, id)
	}
	return cc, nil
}

// accountID reads an account id and checks it against the scope.
func accountID(raw json.RawMessage, path string, scope []uuid.UUID) (uuid.UUID, *ValidationError) {
	s, ok := jsonString(raw)
	if !ok {
		return uuid.Nil, invalid(path, "must be a string holding an account id")
	}
	id, ok := parseUUID(s)
	if !ok {
		return uuid.Nil, invalid(path, "must be a UUID")
	}
	if scope != nil && !slices.Contains(scope, id) {
		return uuid.Nil, invalid(path, fmt.Sprintf("account %s is outside this key's scope", id))
	}
	return id, nil
}

// parseUUID accepts only the canonical 36-character form.
func parseUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(s)
	return id, err == nil
}

// numberOp maps a numeric operator to its kind offset.
func numberOp(op string) (opKind, bool) {
	switch op {
	case OpIs:
		return 0, true
	case OpGt:
		return 1, true
	case OpGte:
		return 2, true
	case OpLt:
		return 3, true
	case OpLte:
		return 4, true
	case OpBetween:
		return 5, true
	}
	return 0, false
}

func compileAmount(c Condition, path string) (cond, *ValidationError) {
	off, known := numberOp(c.Operator)
	if err := checkOperator(c, path, known, numberOpList); err != nil {
		return cond{}, err
	}
	vpath := path + ".value"
	cc := cond{kind: opAmountIs + off, cost: costNumber}
	if cc.kind != opAmountBetween {
		b, msg := parseAmount(c.Value)
		if msg != "" {
			return cond{}, invalid(vpath, msg)
		}
		cc.lo, cc.hi = b, b
		return cc, nil
	}
	pair, err := numberPair(c.Value, vpath)
	if err != nil {
		return cond{}, err
	}
	for i, raw := range pair {
		b, msg := parseAmount(raw)
		if msg != "" {
			return cond{}, invalid(fmt.Sprintf("%s[%d]", vpath, i), msg)
		}
		if i == 0 {
			cc.lo = b
		} else {
			cc.hi = b
		}
	}
	if cc.lo.dec.GreaterThan(cc.hi.dec) {
		return cond{}, invalid(vpath, "low must not be greater than high")
	}
	return cc, nil
}

// numberPair splits a [low, high] value.
func numberPair(raw json.RawMessage, vpath string) ([]json.RawMessage, *ValidationError) {
	items, ok := arrayItems(raw)
	if !ok || len(items) != 2 {
		return nil, invalid(vpath, "must be an array of two numbers [low, high]")
	}
	return items, nil
}

func compileDay(c Condition, path string) (cond, *ValidationError) {
	off, known := numberOp(c.Operator)
	if err := checkOperator(c, path, known, numberOpList); err != nil {
		return cond{}, err
	}
	vpath := path + ".value"
	cc := cond{kind: opDayIs + off, cost: costNumber}
	if cc.kind != opDayBetween {
		d, err := parseDay(c.Value, vpath)
		if err != nil {
			return cond{}, err
		}
		cc.dayLo, cc.dayHi = d, d
		return cc, nil
	}
	pair, err := numberPair(c.Value, vpath)
	if err != nil {
		return cond{}, err
	}
	if cc.dayLo, err = parseDay(pair[0], vpath+"[0]"); err != nil {
		return cond{}, err
	}
	if cc.dayHi, err = parseDay(pair[1], vpath+"[1]"); err != nil {
		return cond{}, err
	}
	if cc.dayLo > cc.dayHi {
		return cond{}, invalid(vpath, "low must not be greater than high")
	}
	return cc, nil
}

// parseDay reads a day of month, an integer from 1 to 31.
func parseDay(raw json.RawMessage, path string) (int, *ValidationError) {
	const msg = "must be an integer between 1 and 31"
	n, ok := jsonNumber(raw)
	if !ok {
		return 0, invalid(path, msg)
	}
	d, ok := boundedDecimal(n)
	if !ok || !d.IsInteger() || d.LessThan(decimal.NewFromInt(1)) || d.GreaterThan(decimal.NewFromInt(31)) {
		return 0, invalid(path, msg)
	}
	return int(d.IntPart()), nil
}

func (r *Rule) buildOutcomes(def *Definition, lim sizeLimits) error {
	if def.outcomesIssue != "" {
		return invalid("outcomes", def.outcomesIssue)
	}
	if len(def.Outcomes) == 0 {
		return invalid("outcomes", "must have at least 1 item")
	}
	if len(def.Outcomes) > lim.outcomes {
		return invalid("outcomes", fmt.Sprintf("has more than %d items: a rule has at most %d outcomes", MaxOutcomes, MaxOutcomes))
	}
	setBy := map[string]int{}
	for i, o := range def.Outcomes {
		path := fmt.Sprintf("outcomes[%d]", i)
		target, err := r.compileOutcome(o, path)
		if err != nil {
			return err
		}
		if prev, dup := setBy[target]; dup {
			return invalid(path, fmt.Sprintf("sets %s, already set by outcomes[%d]", target, prev))
		}
		setBy[target] = i
	}
	return nil
}

// compileOutcome validates one outcome, records it on r and returns the name
// of the field it sets.
func (r *Rule) compileOutcome(o Outcome, path string) (string, *ValidationError) {
	if o.issue != nil {
		return "", invalid(joinPath(path, o.issue.Path), o.issue.Message)
	}
	vpath := path + ".value"
	switch o.Action {
	case "":
		return "", invalid(path+".action", "is required")
	case ActionHideTransaction:
		if o.Field != "" {
			return "", invalid(path+".field", "must be absent for hideTransaction")
		}
		if len(trimJSON(o.Value)) == 0 {
			return "", invalid(vpath, "is required")
		}
		if string(trimJSON(o.Value)) != "true" {
			return "", invalid(vpath, "must be true")
		}
		r.hide = true
		return "Hidden", nil
	case ActionUpdateTransaction:
		return r.compileUpdate(o, path)
	}
	return "", invalid(path+".action", fmt.Sprintf("unknown action %q; must be updateTransaction or hideTransaction", o.Action))
}

func (r *Rule) compileUpdate(o Outcome, path string) (string, *ValidationError) {
	vpath := path + ".value"
	switch o.Field {
	case "":
		return "", invalid(path+".field", "is required")
	case OutcomeCategory, OutcomeMerchantName:
	default:
		return "", invalid(path+".field", fmt.Sprintf("unknown field %q; must be Category or MerchantName", o.Field))
	}
	if len(trimJSON(o.Value)) == 0 {
		return "", invalid(vpath, "is required")
	}
	if o.Field == OutcomeMerchantName {
		s, ok := jsonString(o.Value)
		if !ok || strings.TrimSpace(s) == "" {
			return "", invalid(vpath, "must be a non-empty string")
		}
		r.setMerchant, r.merchant = true, s
		return OutcomeMerchantName, nil
	}
	ref, err := categoryRef(o.Value, vpath)
	if err != nil {
		return "", err
	}
	r.setCategory, r.category = true, ref
	r.categoryIDs = append(r.categoryIDs, ref.ID)
	return OutcomeCategory, nil
}

// categoryRef reads {"id": "<uuid>", "value": "<name>"}.
func categoryRef(raw json.RawMessage, vpath string) (CategoryRef, *ValidationError) {
	members, dup, ok := objectMembers(raw)
	if !ok {
		return CategoryRef{}, invalid(vpath, "must be an object with id and value")
	}
	if dup != nil {
		return CategoryRef{}, invalid(joinPath(vpath, dup.Path), dup.Message)
	}
	var (
		ref   CategoryRef
		hasID bool
	)
	for _, m := range members {
		switch m.Name {
		case "id":
			s, ok := jsonString(m.Value)
			if !ok {
				return CategoryRef{}, invalid(vpath+".id", "must be a string holding a category id")
			}
			if ref.ID, ok = parseUUID(s); !ok {
				return CategoryRef{}, invalid(vpath+".id", "must be a UUID")
			}
			hasID = true
		case "value":
			if isNull(m.Value) {
				continue
			}
			if ref.Name, ok = jsonString(m.Value); !ok {
				return CategoryRef{}, invalid(vpath+".value", "must be a string")
			}
		default:
			return CategoryRef{}, invalid(vpath, fmt.Sprintf("unknown key %q", m.Name))
		}
	}
	if !hasID {
		return CategoryRef{}, invalid(vpath+".id", "is required")
	}
	return ref, nil
}
