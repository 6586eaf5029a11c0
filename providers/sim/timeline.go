package sim

// A timeline is the deterministic transaction stream of one connection.
//
// Transaction i (0-based) is generated from (connection seed, i) alone, so a
// page anywhere in a history of millions costs the same as the first one and
// nothing is kept in memory. Days are counted relative to the simulator's
// start date (day 0); the clock is the current day. History transactions
// 0..total-1 are spread evenly over days -(historyDays-1)..0; after that,
// perDay new transactions arrive on each day 1, 2, .... Index order is
// chronological, and within a day the time of day grows with the index.
//
// Account assignment is i % accounts, so every account sees an evenly
// thinned copy of the stream and per-account counts are arithmetic.
type timeline struct {
	seed     uint64
	total    int64
	days     int64
	perDay   int64
	accounts int64
	dup      int64 // one index guaranteed to duplicate its predecessor (-1: none)
}

// newTimeline builds a timeline; total and days are clamped to sane values.
func newTimeline(seed uint64, total, days int64, accounts int) timeline {
	if days < 1 {
		days = 1
	}
	if total < 0 {
		total = 0
	}
	per := total / days
	if per < 3 {
		per = 3
	}
	t := timeline{seed: seed, total: total, days: days, perDay: per, accounts: int64(accounts), dup: -1}
	for i := max(total/2, t.accounts); i < total && i < total/2+10000; i++ {
		if t.day(i) == t.day(i-t.accounts) {
			t.dup = i
			break
		}
	}
	return t
}

// day returns the day of transaction i relative to the start date.
func (t *timeline) day(i int64) int64 {
	if i < t.total {
		return -(t.days - 1) + i*t.days/t.total
	}
	return 1 + (i-t.total)/t.perDay
}

// firstIndex returns the smallest index whose day is >= d.
func (t *timeline) firstIndex(d int64) int64 {
	if d <= -(t.days - 1) {
		return 0
	}
	if d > 0 {
		return t.total + (d-1)*t.perDay
	}
	k := d + t.days - 1
	return (k*t.total + t.days - 1) / t.days
}

// count returns how many transactions exist at clock c (day <= c).
func (t *timeline) count(c int64) int64 { return t.firstIndex(c + 1) }

// secondOfDay returns the time of day of transaction i in seconds, growing
// with i inside its day (between 07:00 and 21:00).
func (t *timeline) secondOfDay(i int64) int64 {
	d := t.day(i)
	f := t.firstIndex(d)
	n := t.firstIndex(d+1) - f
	if n <= 0 {
		n = 1
	}
	return 7*3600 + (i-f)*(14*3600)/n
}

// account returns the account slot (0..accounts-1) of transaction i.
func (t *timeline) account(i int64) int { return int(i % t.accounts) }

// content returns the index whose content transaction i copies. Roughly one
// in forty transactions duplicates the previous transaction of the same
// account on the same day (two equal coffees), which providers without
// stable ids must keep apart by occurrence index.
func (t *timeline) content(i int64) int64 {
	if i < t.accounts {
		return i
	}
	j := i - t.accounts
	if i == t.dup || hash2(t.seed^0xd0b1e, uint64(i))%40 == 0 && t.day(j) == t.day(i) {
		return j
	}
	return i
}

// txState is the life-cycle state of one transaction at some clock.
type txState uint8

const (
	stAbsent txState = iota
	stPending
	stPosted
	stModified
	stVanished
)

// life holds the clock-independent life-cycle facts of a transaction.
type life struct {
	day      int64 // day the transaction happened
	pendDays int64 // days it stays pending (0 = posted at once)
	vanish   bool  // pending that never posts (auth hold released)
	modify   bool  // posted row later modified (merchant name cleaned)
}

// lifeOf returns the life-cycle facts of transaction i.
func (t *timeline) lifeOf(i int64) life {
	cs := t.content(i)
	h := hash2(t.seed^0x11fe, uint64(cs))
	l := life{day: t.day(i)}
	// The last transaction of each account on each day always starts
	// pending, so every account has pending rows near any clock.
	lastOfDay := cs >= t.firstIndex(t.day(cs)+1)-t.accounts
	if h%10 < 3 || lastOfDay {
		l.pendDays = 1 + int64((h>>8)%3)
		l.vanish = (h>>16)%23 == 0
	}
	l.modify = !l.vanish && (h>>24)%17 == 0
	return l
}

// postDay is the day a transaction posts (or vanishes).
func (l life) postDay() int64 { return l.day + l.pendDays }

// state returns the state of a transaction with life l at clock c.
func (l life) state(c int64) txState {
	switch {
	case c < l.day:
		return stAbsent
	case c < l.postDay():
		return stPending
	case l.vanish:
		return stVanished
	case l.modify && c >= l.postDay()+1:
		return stModified
	default:
		return stPosted
	}
}

// settleDays is how many days after its day a transaction can still change.
const settleDays = 5

// unsettledFrom returns the first index that can still change after clock c.
func (t *timeline) unsettledFrom(c int64) int64 { return t.firstIndex(c - settleDays) }
