package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"
)

// Definition is a rule as clients send it and as it is stored: conditions
// (all must match), outcomes, and a priority from 1 to 100 (rules run in
// ascending priority; a later rule's outcome wins).
//
// Decoding a Definition with encoding/json is exact: condition and outcome
// values stay raw JSON (numbers never pass through float64), and problems
// such as an unknown key in a condition, a non-string field name or a
// non-integer priority are kept and reported by [Validate] with their path.
// Unknown top-level keys are ignored by UnmarshalJSON so that the caller
// decides about them; [DecodeDefinition] refuses them. Do not embed
// Definition in another struct that is decoded from JSON: its UnmarshalJSON
// method would take over the outer struct's decoding.
type Definition struct {
	Conditions []Condition `json:"conditions"`
	Outcomes   []Outcome   `json:"outcomes"`
	Priority   int         `json:"priority"`

	// problems found while decoding; reported by Validate.
	conditionsIssue string
	outcomesIssue   string
	priorityIssue   string
	unknownKeys     []string
	rootIssue       *ValidationError
}

// Condition is one test on a transaction field. Value is raw JSON whose type
// depends on the field and operator: a string, an array of strings, a number
// or a [low, high] pair.
type Condition struct {
	Field    string          `json:"field"`
	Operator string          `json:"operator"`
	Value    json.RawMessage `json:"value"`

	issue *ValidationError // relative to the condition; found while decoding
}

// Outcome is what a matching rule does: set the category, set the merchant
// name, or hide the transaction. Field is empty for hideTransaction.
type Outcome struct {
	Action string          `json:"action"`
	Field  string          `json:"field,omitempty"`
	Value  json.RawMessage `json:"value"`

	issue *ValidationError // relative to the outcome; found while decoding
}

// DecodeDefinition decodes a rule from raw JSON bytes, strictly: the body must
// be exactly one JSON object whose only keys are conditions, outcomes and
// priority, of at most MaxRuleBytes, with at most MaxConditions conditions
// and MaxOutcomes outcomes (counted while decoding: the items past the
// limit are not decoded). It checks the shape only; call [Validate] (or use [ValidateJSON])
// to check the contents. Errors are *ValidationError.
func DecodeDefinition(raw []byte) (Definition, error) {
	if len(raw) > MaxRuleBytes {
		return Definition{}, invalid("", fmt.Sprintf("a rule document is at most %d bytes (the limit on a rule document's size)", MaxRuleBytes))
	}
	var def Definition
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&def); err != nil {
		return Definition{}, decodeError(err)
	}
	if len(trimJSON(raw[dec.InputOffset():])) != 0 {
		return Definition{}, invalid("", "unexpected data after the JSON object")
	}
	if len(def.unknownKeys) > 0 {
		return Definition{}, invalid("", fmt.Sprintf("unknown key %q", def.unknownKeys[0]))
	}
	return def, nil
}

// decodeError turns a decoder failure into a *ValidationError.
func decodeError(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	return invalid("", "invalid JSON: "+err.Error())
}

// decodeStored decodes a stored rule's document (one JSON object, as
// DecodeDefinition checks it) without the count limits: a rule saved
// before a limit existed keeps running.
func decodeStored(raw []byte) (Definition, error) {
	var def Definition
	if err := def.decode(raw, storedLimits()); err != nil {
		return Definition{}, decodeError(err)
	}
	if len(def.unknownKeys) > 0 {
		return Definition{}, invalid("", fmt.Sprintf("unknown key %q", def.unknownKeys[0]))
	}
	return def, nil
}

// UnmarshalJSON decodes a rule object, keeping problems for Validate. It
// holds the rule to the limits on a rule a client sends.
func (d *Definition) UnmarshalJSON(b []byte) error {
	return d.decode(b, clientLimits())
}

// decode is UnmarshalJSON with the given count limits.
func (d *Definition) decode(b []byte, lim sizeLimits) error {
	*d = Definition{}
	members, dup, ok := objectMembers(b)
	if !ok {
		return invalid("", "must be a JSON object")
	}
	if dup != nil {
		// A duplicate anywhere in the rule stops the reading: it is the
		// rule's first problem.
		d.rootIssue = dup
		return nil
	}
	hasPriority := false
	for _, m := range members {
		switch m.Name {
		case "conditions":
			d.decodeConditions(m.Value, lim.conditions)
		case "outcomes":
			d.decodeOutcomes(m.Value, lim.outcomes)
		case "priority":
			hasPriority = true
			d.decodePriority(m.Value)
		default:
			d.unknownKeys = append(d.unknownKeys, m.Name)
		}
	}
	if !hasPriority {
		d.priorityIssue = "is required"
	}
	return nil
}

func (d *Definition) decodeConditions(raw []byte, limit int) {
	items, ok, over := arrayItemsAtMost(raw, limit)
	if over {
		d.conditionsIssue = fmt.Sprintf("has more than %d items: a rule has at most %d conditions", MaxConditions, MaxConditions)
		return
	}
	if !ok {
		d.conditionsIssue = "must be an array"
		return
	}
	d.Conditions = make([]Condition, len(items))
	for i, item := range items {
		_ = d.Conditions[i].UnmarshalJSON(item)
	}
}

func (d *Definition) decodeOutcomes(raw []byte, limit int) {
	items, ok, over := arrayItemsAtMost(raw, limit)
	if over {
		d.outcomesIssue = fmt.Sprintf("has more than %d items: a rule has at most %d outcomes", MaxOutcomes, MaxOutcomes)
		return
	}
	if !ok {
		d.outcomesIssue = "must be an array"
		return
	}
	d.Outcomes = make([]Outcome, len(items))
	for i, item := range items {
		_ = d.Outcomes[i].UnmarshalJSON(item)
	}
}

func (d *Definition) decodePriority(raw []byte) {
	n, ok := jsonNumber(raw)
	if !ok {
		d.priorityIssue = "must be an integer"
		return
	}
	v, ok := boundedDecimal(n)
	if !ok || !v.IsInteger() {
		d.priorityIssue = "must be an integer"
		return
	}
	if v.LessThan(decimal.NewFromInt(1)) || v.GreaterThan(decimal.NewFromInt(100)) {
		d.priorityIssue = "must be between 1 and 100"
		return
	}
	d.Priority = int(v.IntPart())
}

// UnmarshalJSON decodes a condition object, keeping problems for Validate.
func (c *Condition) UnmarshalJSON(b []byte) error {
	*c = Condition{}
	c.issue = decodeMembers(b, map[string]*string{"field": &c.Field, "operator": &c.Operator}, &c.Value)
	return nil
}

// UnmarshalJSON decodes an outcome object, keeping problems for Validate.
func (o *Outcome) UnmarshalJSON(b []byte) error {
	*o = Outcome{}
	o.issue = decodeMembers(b, map[string]*string{"action": &o.Action, "field": &o.Field}, &o.Value)
	return nil
}

// decodeMembers decodes a condition or outcome object: the named string
// members into their targets and "value" as raw JSON. It returns the first
// problem met (not an object, a duplicate or unknown key, a member that must
// be a string and is not), relative to the object, or nil.
func decodeMembers(b []byte, strings map[string]*string, value *json.RawMessage) *ValidationError {
	members, dup, ok := objectMembers(b)
	if !ok {
		return invalid("", "must be an object")
	}
	if dup != nil {
		return dup
	}
	var issue *ValidationError
	setIssue := func(path, msg string) {
		if issue == nil {
			issue = invalid(path, msg)
		}
	}
	for _, m := range members {
		if target, ok := strings[m.Name]; ok {
			s, isString := jsonString(m.Value)
			if !isString {
				setIssue(m.Name, "must be a string")
			}
			*target = s
			continue
		}
		if m.Name == "value" {
			*value = json.RawMessage(m.Value)
			continue
		}
		setIssue("", fmt.Sprintf("unknown key %q", m.Name))
	}
	return issue
}
