package rules

import (
	"encoding/json"
	"regexp/syntax"
)

// Insts is the size of the rule's compiled regular expressions together,
// in instructions (as counted against MaxRuleInsts and MaxUserInsts).
func (r *Rule) Insts() int {
	total := 0
	for i := range r.conds {
		total += r.conds[i].insts
	}
	return total
}

// StoredInsts estimates, without compiling, the size in instructions of
// the regular expressions of a stored rule's conditions (its JSON array),
// as Rule.Insts counts them: each matches pattern's size from its parse
// tree (progSize), capped just above MaxPatternInsts. It costs a parse of
// each pattern; conditions it cannot read count nothing (the rule engine
// refuses them when it compiles the rule). Caveat: an upper bound, equal
// to Insts for the usual forms.
func StoredInsts(conditions json.RawMessage) int {
	var conds []struct {
		Operator string          `json:"operator"`
		Value    json.RawMessage `json:"value"`
	}
	if json.Unmarshal(conditions, &conds) != nil {
		return 0
	}
	total := 0
	for _, c := range conds {
		if c.Operator != OpMatches {
			continue
		}
		pattern, ok := jsonString(c.Value)
		if !ok || len(pattern) > MaxPatternBytes {
			continue
		}
		re, err := syntax.Parse(pattern, syntax.Perl)
		if err != nil {
			continue
		}
		total += min(progSize(re, MaxPatternInsts), MaxPatternInsts+1)
	}
	return total
}
