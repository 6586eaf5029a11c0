package sim

import (
	"bufio"
	"strconv"
)

// gcTxWriter streams one account's GoCardless transactions.
type gcTxWriter struct {
	s     *Simulator
	c     *gcConn
	t     *timeline
	clock int64
	bw    *bufio.Writer
	b     jw
}

// write streams {"transactions":{"booked":[...],"pending":[...]}} for the
// account slot and the sim-day range [lo, hi].
func (g *gcTxWriter) write(slot int, lo, hi int64) {
	t := g.t
	k := t.accounts
	_, _ = g.bw.WriteString(`{"transactions":{"booked":[`)
	first := true
	top := t.count(min(hi, g.clock)) - 1
	top -= ((top-int64(slot))%k + k) % k
	bottom := t.firstIndex(lo - 3)
	for i := top; i >= bottom && i >= 0; i -= k {
		l := t.lifeOf(i)
		st := l.state(g.clock)
		if (st != stPosted && st != stModified) || l.postDay() < lo || l.postDay() > hi {
			continue
		}
		g.row(i, l, false, &first)
	}
	_, _ = g.bw.WriteString(`],"pending":[`)
	first = true
	start := t.firstIndex(max(lo, g.clock-settleDays))
	start += ((int64(slot)-start)%k + k) % k
	end := t.count(min(hi, g.clock))
	for i := start; i < end; i += k {
		l := t.lifeOf(i)
		if l.state(g.clock) != stPending {
			continue
		}
		g.row(i, l, true, &first)
	}
	_, _ = g.bw.WriteString(`]}}`)
}

// row writes one transaction.
func (g *gcTxWriter) row(i int64, l life, pending bool, first *bool) {
	b := &g.b
	b.b = b.b[:0]
	if !*first {
		b.comma()
	}
	*first = false
	ct := g.t.contentOf(i, acctKind(g.t.account(i)))
	m := ct.m
	bank := g.c.bank
	b.byte('{')
	sep := false
	if bank.txID && !pending {
		b.raw(`"transactionId":"`)
		b.b = appendHexFixed(b.b, hash2(g.t.seed^0x71d, uint64(i))>>16, 12)
		b.byte('-')
		b.b = strconv.AppendInt(b.b, i, 10)
		b.byte('"')
		sep = true
	}
	if bank.internalID {
		if sep {
			b.comma()
		}
		v := uint64(0x1d)
		if pending {
			v = 0x1e
		}
		b.raw(`"internalTransactionId":"`)
		b.b = appendHex(b.b, hash2(g.t.seed^v, uint64(i)), 32)
		b.byte('"')
		sep = true
	}
	if sep {
		b.comma()
	}
	if !pending {
		b.raw(`"bookingDate":`)
		b.date(g.s.dateOf(l.postDay()))
		b.comma()
	}
	b.raw(`"valueDate":`)
	b.date(g.s.dateOf(l.day))
	b.raw(`,"transactionAmount":{"amount":`)
	b.centsString(ct.amount)
	b.raw(`,"currency":`)
	b.str(bank.currency)
	b.byte('}')
	if ct.amount < 0 {
		b.raw(`,"creditorName":`)
	} else {
		b.raw(`,"debtorName":`)
	}
	b.str(m.name)
	b.raw(`,"remittanceInformationUnstructured":`)
	b.str(m.bankDesc)
	b.raw(`,"bankTransactionCode":`)
	if m.mcc != "" {
		b.str("PMNT-CCRD-POSD")
		b.raw(`,"merchantCategoryCode":`)
		b.str(m.mcc)
	} else if ct.amount < 0 {
		b.str("PMNT-ICDT-STDO")
	} else {
		b.str("PMNT-RCDT-ESCT")
	}
	b.byte('}')
	_, _ = g.bw.Write(b.b)
}
