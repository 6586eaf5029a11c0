package simkit

// A Timeline is the deterministic transaction stream of one connection.
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
type Timeline struct {
	// Seed is the connection's seed, from which every transaction derives.
	Seed uint64
	// Days is the span of the history in days.
	Days int64
	// Accounts is the number of transaction accounts the stream is dealt to.
	Accounts int64

	total  int64
	perDay int64
	dup    int64 // one index guaranteed to duplicate its predecessor (-1: none)
	// hidden is set when the history before day hideBefore stays absent
	// until clock revealOn (HideHistory).
	hidden               bool
	hideBefore, revealOn int64
}

// HideHistory makes the transactions that post (or vanish) before day
// before absent at every clock before reveal, as a provider that first serves recent
// history and delivers the older part later (Plaid's historical update).
// Caveat: a balance is the bank's and counts them all along (PostedByDay).
func (t *Timeline) HideHistory(before, reveal int64) {
	t.hidden, t.hideBefore, t.revealOn = true, before, reveal
}

// ChangedFrom returns the first index that can differ between clock c
// and any later clock: UnsettledFrom(c), or 0 while hidden history is
// still to be revealed after c.
func (t *Timeline) ChangedFrom(c int64) int64 {
	if t.hidden && c < t.revealOn {
		return 0
	}
	return t.UnsettledFrom(c)
}

// PostedByDay returns, by day up to clock c, the sum in minor units of the
// amounts of the transactions of account slot (of the given kind) that
// post on that day and never vanish: how much the account's booked
// balance moves that day. Hidden history counts (the bank's balance does
// not depend on what it has shown). Its cost is linear in the history.
func (t *Timeline) PostedByDay(slot int, kind AccountKind, c int64) map[int64]int64 {
	out := map[int64]int64{}
	t.AddPosted(out, slot, kind, -t.Days, c)
	return out
}

// maxPendDays is the most days a transaction stays pending (LifeOf).
const maxPendDays = 3

// AddPosted adds to byDay what PostedByDay(slot, kind, to) holds for the
// days after from: with byDay = PostedByDay(slot, kind, from), it becomes
// PostedByDay(slot, kind, to) at a cost linear in the days between.
func (t *Timeline) AddPosted(byDay map[int64]int64, slot int, kind AccountKind, from, to int64) {
	end := t.Count(to)
	i := t.FirstIndex(from - maxPendDays)
	i += ((int64(slot)-i)%t.Accounts + t.Accounts) % t.Accounts
	for ; i < end; i += t.Accounts {
		l := t.LifeOf(i)
		if l.Vanish || l.PostDay() > to || l.PostDay() <= from {
			continue
		}
		byDay[l.PostDay()] += t.ContentOf(i, kind).Amount
	}
}

// NewTimeline builds the timeline of a connection with the given seed,
// history size and span, dealt to accounts accounts; total and days are
// clamped to sane values.
func NewTimeline(seed uint64, total, days int64, accounts int) Timeline {
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
	t := Timeline{Seed: seed, total: total, Days: days, perDay: per, Accounts: int64(accounts), dup: -1}
	for i := max(total/2, t.Accounts); i < total && i < total/2+10000; i++ {
		if t.Day(i) == t.Day(i-t.Accounts) {
			t.dup = i
			break
		}
	}
	return t
}

// Day returns the day of transaction i relative to the start date.
func (t *Timeline) Day(i int64) int64 {
	if i < t.total {
		return -(t.Days - 1) + i*t.Days/t.total
	}
	return 1 + (i-t.total)/t.perDay
}

// FirstIndex returns the smallest index whose day is >= d.
func (t *Timeline) FirstIndex(d int64) int64 {
	if d <= -(t.Days - 1) {
		return 0
	}
	if d > 0 {
		return t.total + (d-1)*t.perDay
	}
	k := d + t.Days - 1
	return (k*t.total + t.Days - 1) / t.Days
}

// Count returns how many transactions exist at clock c (day <= c).
func (t *Timeline) Count(c int64) int64 { return t.FirstIndex(c + 1) }

// SecondOfDay returns the time of day of transaction i in seconds, growing
// with i inside its day (between 07:00 and 21:00).
func (t *Timeline) SecondOfDay(i int64) int64 {
	d := t.Day(i)
	f := t.FirstIndex(d)
	n := t.FirstIndex(d+1) - f
	if n <= 0 {
		n = 1
	}
	return 7*3600 + (i-f)*(14*3600)/n
}

// Account returns the account slot (0..accounts-1) of transaction i.
func (t *Timeline) Account(i int64) int { return int(i % t.Accounts) }

// Content returns the index whose content transaction i copies. Roughly one
// in forty transactions duplicates the previous transaction of the same
// account on the same day (two equal coffees), which providers without
// stable ids must keep apart by occurrence index.
func (t *Timeline) Content(i int64) int64 {
	if i < t.Accounts {
		return i
	}
	j := i - t.Accounts
	if i == t.dup || Hash2(t.Seed^0xd0b1e, uint64(i))%40 == 0 && t.Day(j) == t.Day(i) {
		return j
	}
	return i
}

// TxState is the life-cycle state of one transaction at some clock.
type TxState uint8

// The life-cycle states of a transaction.
const (
	// Absent: the transaction has not happened yet.
	Absent TxState = iota
	// Pending: it happened and has not posted.
	Pending
	// Posted: it posted.
	Posted
	// Modified: it posted and was later modified (merchant name cleaned).
	Modified
	// Vanished: it was pending and never posted (auth hold released).
	Vanished
)

// Life holds the clock-independent life-cycle facts of a transaction.
type Life struct {
	Day      int64 // day the transaction happened
	PendDays int64 // days it stays pending (0 = posted at once)
	Vanish   bool  // pending that never posts (auth hold released)
	Modify   bool  // posted row later modified (merchant name cleaned)
	// Held is set for hidden history: absent before clock Reveal.
	Held   bool
	Reveal int64
}

// LifeOf returns the life-cycle facts of transaction i.
func (t *Timeline) LifeOf(i int64) Life {
	cs := t.Content(i)
	h := Hash2(t.Seed^0x11fe, uint64(cs))
	l := Life{Day: t.Day(i)}
	// The last transaction of each account on each day always starts
	// pending, so every account has pending rows near any clock.
	lastOfDay := cs >= t.FirstIndex(t.Day(cs)+1)-t.Accounts
	if h%10 < 3 || lastOfDay {
		l.PendDays = 1 + int64((h>>8)%3)
		l.Vanish = (h>>16)%23 == 0
	}
	l.Modify = !l.Vanish && (h>>24)%17 == 0
	l.Held, l.Reveal = t.hidden && l.PostDay() < t.hideBefore, t.revealOn
	return l
}

// PostDay is the day a transaction posts (or vanishes).
func (l Life) PostDay() int64 { return l.Day + l.PendDays }

// State returns the state of a transaction with life l at clock c.
func (l Life) State(c int64) TxState {
	switch {
	case c < l.Day, l.Held && c < l.Reveal:
		return Absent
	case c < l.PostDay():
		return Pending
	case l.Vanish:
		return Vanished
	case l.Modify && c >= l.PostDay()+1:
		return Modified
	default:
		return Posted
	}
}

// SettleDays is how many days after its day a transaction can still change.
const SettleDays = 5

// UnsettledFrom returns the first index that can still change after clock c.
func (t *Timeline) UnsettledFrom(c int64) int64 { return t.FirstIndex(c - SettleDays) }
