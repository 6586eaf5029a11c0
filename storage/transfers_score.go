package storage

import (
	"math"
	"strconv"
	"strings"
)

// Transfer detection scores each candidate pair with the pure functions of
// this file; transfers_detect.go finds the candidates with SQL and stores
// the pairs chosen. docs/transfers.md describes the rules.

// transferSide is one transaction of a candidate pair, as scoring sees it.
type transferSide struct {
	id        [16]byte
	accountID [16]byte
	// minor is the amount in ten-thousandths (the column's scale): negative
	// for an outflow, positive for an inflow.
	minor    int64
	currency string
	// day is the transaction's date (posted, else authorized) in days.
	day int64
	// text is the summary, original description and merchant, lower-cased.
	text string
	// accountName and accountMask are the transaction's account's.
	accountName, accountMask string
}

// transferScore is a candidate pair's score: ok when it may pair at all.
type transferScore struct {
	ok bool
	// rank orders candidates (it is not capped at 1); confidence is rank
	// capped and rounded, as stored.
	rank       float64
	confidence float64
	reasons    []string
}

// scoreEpsilon absorbs floating-point error in score comparisons.
const scoreEpsilon = 1e-9

// Detection limits. An inflow may be dated up to maxTransferLagDays after
// its outflow (card payments and ACH take 1 to 3 business days, a weekend
// adds two) or one day before it (time zones, banks posting a day early).
const (
	maxTransferLagDays   = 5
	maxTransferLeadDays  = 1
	maxCrossCurrencyDays = 2
	// minTransferConfidence is the least confidence a detected pair needs.
	minTransferConfidence = 0.7
	// transferMargin is by how much the best candidate must beat the next
	// one of either side for the pair to be taken: candidates closer than
	// that fit about equally, and the row stays unpaired.
	transferMargin = 0.1
	// Cross-currency pairs need a rate within these bounds (inflow per
	// outflow unit); anything beyond is not a plausible exchange rate
	// between the currencies a person holds.
	minCrossRate = 1.0 / 400
	maxCrossRate = 400.0
)

// transferWords are description words that say a row moves money between
// accounts or pays a card.
var transferWords = []string{"transfer", "xfer", "trnsfr", "tfr", "payment", "thank you", "autopay", "auto pay", "pmt"}

// saysTransfer reports whether a description uses a transfer word.
func saysTransfer(text string) bool {
	for _, w := range transferWords {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// namesAccount reports whether text names the account: its mask
// (namesMask) or its whole name (at least four letters).
func namesAccount(text, name, mask string) bool {
	if namesMask(text, mask) {
		return true
	}
	name = strings.ToLower(strings.TrimSpace(name))
	return len(name) >= 4 && strings.Contains(text, name)
}

// namesMask reports whether text names the account by its mask (at least
// three digits, as banks print "XXXX1234" or "...1234"): a name such as
// "Savings" is one many accounts share, a mask rarely.
func namesMask(text, mask string) bool {
	return len(mask) >= 3 && strings.Contains(text, mask)
}

// scoreTransfer scores out (an outflow) and in (an inflow) as one transfer.
// Same currency: equal absolute amounts, the inflow dated within
// -maxTransferLeadDays..maxTransferLagDays of the outflow. Different
// currencies: the outflow's description names the inflow's account by its
// mask, both
// descriptions say transfer, the dates are within maxCrossCurrencyDays and
// the rate is plausible. Two rows of one account never pair (a refund).
func scoreTransfer(out, in *transferSide) transferScore {
	if out.minor >= 0 || in.minor <= 0 || out.accountID == in.accountID {
		return transferScore{}
	}
	gap := in.day - out.day
	if gap < -maxTransferLeadDays || gap > maxTransferLagDays {
		return transferScore{}
	}
	// Each side's evidence counts on its own: an inflow naming the
	// checking account says nothing about which checking outflow it is.
	outNames, inNames := namesAccount(out.text, in.accountName, in.accountMask), namesAccount(in.text, out.accountName, out.accountMask)
	outSays, inSays := saysTransfer(out.text), saysTransfer(in.text)
	var s transferScore
	if out.currency == in.currency {
		if -out.minor != in.minor {
			return transferScore{}
		}
		s.confidence = 0.6
		s.reasons = append(s.reasons, "same_amount")
	} else {
		// Strong evidence only: the outflow names the receiving account by
		// its mask (a shared name such as "Savings" is not enough: with no
		// exchange rate to check the amounts against, it paired one bank's
		// "transfer to savings" with another bank's savings account) and
		// both sides say transfer.
		rate := float64(in.minor) / float64(-out.minor)
		strong := namesMask(out.text, in.accountMask) && outSays && inSays
		if !strong || gap < -maxTransferLeadDays || gap > maxCrossCurrencyDays || rate < minCrossRate || rate > maxCrossRate || math.IsNaN(rate) {
			return transferScore{}
		}
		s.confidence = 0.5
		s.reasons = append(s.reasons, "cross_currency")
	}
	s.confidence += dateBonus(gap)
	s.reasons = append(s.reasons, dateReason(gap))
	if outNames || inNames {
		s.confidence += 0.15 * float64(count(outNames, inNames))
		s.reasons = append(s.reasons, "description_names_account")
	}
	if outSays || inSays {
		s.confidence += 0.05 * float64(count(outSays, inSays))
		s.reasons = append(s.reasons, "description_says_transfer")
	}
	s.rank = s.confidence
	s.confidence = math.Min(1, math.Round(s.confidence*1000)/1000)
	s.ok = s.rank >= minTransferConfidence-scoreEpsilon
	return s
}

// dateBonus rewards dates close together.
func dateBonus(gap int64) float64 {
	switch gap {
	case 0:
		return 0.2
	case 1:
		return 0.15
	case 2:
		return 0.1
	case 3:
		return 0.05
	}
	return 0
}

// dateReason names the gap between the dates.
func dateReason(gap int64) string {
	switch {
	case gap == 0:
		return "same_day"
	case gap < 0:
		return "inflow_" + strconv.FormatInt(-gap, 10) + "_days_before"
	}
	return "dates_" + strconv.FormatInt(gap, 10) + "_days_apart"
}

// transferEdge is a scored candidate pair.
type transferEdge struct {
	out, in *transferSide
	score   transferScore
}

// chooseTransfers returns the edges to store: those whose pair is, on
// both sides, the best candidate by at least transferMargin. Every edge of
// a row seen must be among edges (a row's competitors decide whether it
// pairs), and only edges touching one of want are returned. Edges that
// do not score are ignored, and no edge of a crowded row (one with more
// candidates than were read) is returned, though it still competes. The
// result does not depend on edges' order.
func chooseTransfers(edges []transferEdge, want, crowded map[[16]byte]bool) []transferEdge {
	type best struct {
		top, second float64
		edge        int
	}
	bests := map[[16]byte]*best{}
	note := func(id [16]byte, conf float64, i int) {
		b := bests[id]
		if b == nil {
			bests[id] = &best{top: conf, second: -1, edge: i}
			return
		}
		switch {
		case conf > b.top:
			b.second, b.top, b.edge = b.top, conf, i
		case conf > b.second:
			b.second = conf
		}
	}
	for i := range edges {
		if edges[i].score.ok {
			note(edges[i].out.id, edges[i].score.rank, i)
			note(edges[i].in.id, edges[i].score.rank, i)
		}
	}
	var out []transferEdge
	for i := range edges {
		e := &edges[i]
		if !e.score.ok || (!want[e.out.id] && !want[e.in.id]) || crowded[e.out.id] || crowded[e.in.id] {
			continue
		}
		bo, bi := bests[e.out.id], bests[e.in.id]
		if bo.edge != i || bi.edge != i || bo.top-bo.second < transferMargin-scoreEpsilon || bi.top-bi.second < transferMargin-scoreEpsilon {
			continue
		}
		out = append(out, *e)
	}
	return out
}

// count counts the true ones.
func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
