package rules

import "regexp/syntax"

// progSize bounds the number of instructions regexp/syntax would compile
// re into (after Simplify), from the parse tree alone: it mirrors the
// parser's own size estimate (a counted repetition x{m,n} costs n copies
// of x plus n-m branches, nested ones multiply) and adds the program's
// fixed instructions. It is cheap (one walk of the tree, no allocation)
// and stops counting once past limit, so a repetition of repetitions is
// refused without being expanded. Caveat: it is an upper bound, pessimistic
// for stars and empty-width assertions by a few instructions.
func progSize(re *syntax.Regexp, limit int) int {
	// The program's fail instruction, the capture of the whole match (2)
	// and the match instruction.
	const fixed = 4
	return fixed + int(min(treeSize(re, int64(limit)+1), int64(limit)+1))
}

// treeSize is progSize without the fixed instructions, saturating just
// above cap so that nested repetitions cannot overflow.
func treeSize(re *syntax.Regexp, cap int64) int64 {
	var size int64
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + treeSize(re.Sub[0], cap)
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + treeSize(re.Sub[0], cap)
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			size += treeSize(sub, cap)
			if size > cap {
				return cap
			}
		}
		if re.Op == syntax.OpAlternate && len(re.Sub) > 1 {
			size += int64(len(re.Sub)) - 1
		}
	case syntax.OpRepeat:
		sub := treeSize(re.Sub[0], cap)
		switch {
		case re.Max == -1 && re.Min == 0:
			size = 2 + sub // x*
		case re.Max == -1:
			size = 1 + int64(re.Min)*sub // xx...x+
		default:
			size = int64(re.Max)*sub + int64(re.Max-re.Min) // x{2,5} = xx(x(x(x)?)?)?
		}
	}
	return min(max(1, size), cap)
}
