package rules

import "regexp/syntax"

// progSize bounds the number of instructions regexp/syntax compiles re
// into (after Simplify), from the parse tree alone, following the
// compiler's own rules: one instruction per rune, class or empty-width
// assertion, two per capture, one per alternation branch past the first,
// one per plus or quest, one per star (two when its body can match the
// empty string), a counted repetition x{m,n} as n copies of x plus n-m
// quests, plus the program's fail and match instructions. It is cheap
// (one walk of the tree, no allocation) and stops counting once past
// limit, so a repetition of repetitions is refused without being
// expanded. Caveat: it is an upper bound, equal to the program for the
// usual forms but above it where Simplify folds (a star of a star, a
// quest of an empty group).
func progSize(re *syntax.Regexp, limit int) int {
	// The program's fail and match instructions.
	const fixed = 2
	size, _ := treeSize(re, int64(limit)+1)
	return fixed + int(min(size, int64(limit)+1))
}

// treeSize is progSize without the fixed instructions, saturating just
// above cap so that nested repetitions cannot overflow; it also reports
// whether re can match the empty string, as the compiler judges it (a
// star of such a body costs one instruction more).
func treeSize(re *syntax.Regexp, cap int64) (size int64, nullable bool) {
	switch re.Op {
	case syntax.OpNoMatch, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		size = 1
	case syntax.OpEmptyMatch:
		size, nullable = 1, true
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		size, nullable = 1, true
	case syntax.OpLiteral:
		size, nullable = int64(len(re.Rune)), len(re.Rune) == 0
	case syntax.OpCapture:
		sub, subNull := treeSize(re.Sub[0], cap)
		size, nullable = 2+sub, subNull
	case syntax.OpStar:
		sub, subNull := treeSize(re.Sub[0], cap)
		size, nullable = starSize(sub, subNull), true
	case syntax.OpPlus:
		sub, subNull := treeSize(re.Sub[0], cap)
		size, nullable = 1+sub, subNull
	case syntax.OpQuest:
		sub, _ := treeSize(re.Sub[0], cap)
		size, nullable = 1+sub, true
	case syntax.OpConcat, syntax.OpAlternate:
		return listSize(re, cap)
	case syntax.OpRepeat:
		sub, subNull := treeSize(re.Sub[0], cap)
		nullable = re.Min == 0 || subNull
		switch {
		case re.Max == -1 && re.Min == 0:
			size = starSize(sub, subNull) // x*
		case re.Max == -1:
			size = 1 + int64(re.Min)*sub // xx...x+
		default:
			size = int64(re.Max)*sub + int64(re.Max-re.Min) // x{2,5} = xx(x(x(x)?)?)?
		}
	}
	return min(max(1, size), cap), nullable
}

// starSize is the size of a star of a body of size sub: a loop, preceded
// by a quest when the body can match the empty string.
func starSize(sub int64, subNullable bool) int64 {
	if subNullable {
		return 2 + sub
	}
	return 1 + sub
}

// listSize is treeSize of a concatenation or an alternation.
func listSize(re *syntax.Regexp, cap int64) (size int64, nullable bool) {
	alt := re.Op == syntax.OpAlternate
	nullable = !alt
	for _, sub := range re.Sub {
		s, n := treeSize(sub, cap)
		size += s
		if size > cap {
			return cap, nullable
		}
		if alt {
			nullable = nullable || n
		} else {
			nullable = nullable && n
		}
	}
	if alt && len(re.Sub) > 1 {
		size += int64(len(re.Sub)) - 1
	}
	return min(max(1, size), cap), nullable
}
