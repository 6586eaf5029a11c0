package gocardlesssim

import (
	"bufio"
	"strconv"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// gcTxWriter streams one account's GoCardless transactions.
type gcTxWriter struct {
	s     *server
	c     *gcConn
	t     *simkit.Timeline
	clock int64
	bw    *bufio.Writer
	b     simkit.JW
}

// write streams {"transactions":{"booked":[...],"pending":[...]}} for the
// account slot and the sim-day range [lo, hi].
func (g *gcTxWriter) write(slot int, lo, hi int64) {
	t := g.t
	k := t.Accounts
	_, _ = g.bw.WriteString(`{"transactions":{"booked":[`)
	first := true
	top := t.Count(min(hi, g.clock)) - 1
	top -= ((top-int64(slot))%k + k) % k
	bottom := t.FirstIndex(lo - 3)
	for i := top; i >= bottom && i >= 0; i -= k {
		l := t.LifeOf(i)
		st := l.State(g.clock)
		if (st != simkit.Posted && st != simkit.Modified) || l.PostDay() < lo || l.PostDay() > hi {
			continue
		}
		g.row(i, l, false, &first)
	}
	_, _ = g.bw.WriteString(`],"pending":[`)
	first = true
	start := t.FirstIndex(max(lo, g.clock-simkit.SettleDays))
	start += ((int64(slot)-start)%k + k) % k
	end := t.Count(min(hi, g.clock))
	for i := start; i < end; i += k {
		l := t.LifeOf(i)
		if l.State(g.clock) != simkit.Pending {
			continue
		}
		g.row(i, l, true, &first)
	}
	_, _ = g.bw.WriteString(`]}}`)
}

// row writes one transaction.
func (g *gcTxWriter) row(i int64, l simkit.Life, pending bool, first *bool) {
	b := &g.b
	b.B = b.B[:0]
	if !*first {
		b.Comma()
	}
	*first = false
	ct := g.t.ContentOf(i, simkit.AccountKind(g.t.Account(i)))
	m := ct.M
	bank := g.c.bank
	b.Byte('{')
	sep := false
	if bank.txID && !pending {
		b.Raw(`"transactionId":"`)
		b.B = simkit.AppendHexFixed(b.B, simkit.Hash2(g.t.Seed^0x71d, uint64(i))>>16, 12)
		b.Byte('-')
		b.B = strconv.AppendInt(b.B, i, 10)
		b.Byte('"')
		sep = true
	}
	if bank.internalID {
		if sep {
			b.Comma()
		}
		v := uint64(0x1d)
		if pending {
			v = 0x1e
		}
		b.Raw(`"internalTransactionId":"`)
		b.B = simkit.AppendHex(b.B, simkit.Hash2(g.t.Seed^v, uint64(i)), 32)
		b.Byte('"')
		sep = true
	}
	if sep {
		b.Comma()
	}
	if !pending {
		b.Raw(`"bookingDate":`)
		b.Date(g.s.h.DateOf(l.PostDay()))
		b.Comma()
	}
	b.Raw(`"valueDate":`)
	b.Date(g.s.h.DateOf(l.Day))
	b.Raw(`,"transactionAmount":{"amount":`)
	b.CentsString(ct.Amount)
	b.Raw(`,"currency":`)
	b.Str(bank.currency)
	b.Byte('}')
	if ct.Amount < 0 {
		b.Raw(`,"creditorName":`)
	} else {
		b.Raw(`,"debtorName":`)
	}
	b.Str(m.Name)
	b.Raw(`,"remittanceInformationUnstructured":`)
	b.Str(m.BankDesc)
	b.Raw(`,"bankTransactionCode":`)
	if m.MCC != "" {
		b.Str("PMNT-CCRD-POSD")
		b.Raw(`,"merchantCategoryCode":`)
		b.Str(m.MCC)
	} else if ct.Amount < 0 {
		b.Str("PMNT-ICDT-STDO")
	} else {
		b.Str("PMNT-RCDT-ESCT")
	}
	b.Byte('}')
	_, _ = g.bw.Write(b.B)
}
