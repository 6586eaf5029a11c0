package storage

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/finsync/finsync/domain"
)

// syncHashSize is the length of a sync_hash digest.
const syncHashSize = 16

// syncHash is the digest a sync stores with a transaction (sync_hash): the
// first 16 bytes of SHA-256 over the values of the columns a sync compares,
// each length-prefixed and NULL distinct from empty, so that equal digests
// mean equal values (a chance collision is a 1 in 2^128 event). Amounts
// are written in their shortest exact form, so 12.30 and 12.3 agree, as
// PostgreSQL's numeric comparison does.
func syncHash(t *domain.Transaction) []byte {
	return appendSyncHash(make([]byte, 0, syncHashSize), t)
}

// syncHashes returns the digests of txs, sharing one allocation.
func syncHashes(txs []domain.Transaction) [][]byte {
	all := make([]byte, 0, syncHashSize*len(txs))
	hashes := make([][]byte, len(txs))
	for i := range txs {
		all = appendSyncHash(all, &txs[i])
		hashes[i] = all[len(all)-syncHashSize : len(all) : len(all)]
	}
	return hashes
}

// appendSyncHash appends t's digest (syncHash) to dst.
func appendSyncHash(dst []byte, t *domain.Transaction) []byte {
	b := make([]byte, 0, 256)
	b = append(b, t.AccountID[:]...)
	b = hashText(b, &t.Status)
	b = hashText(b, &t.Summary)
	b = hashMoney(b, &t.Amount)
	b = hashText(b, &t.Currency)
	b = hashDate(b, t.AuthorizedDate)
	b = hashDate(b, t.PostedDate)
	b = hashText(b, t.MerchantName)
	if t.CategoryID != nil {
		b = append(b, 1)
		b = append(b, t.CategoryID[:]...)
	} else {
		b = append(b, 0)
	}
	b = hashMoney(b, t.Fees)
	b = hashText(b, t.FeeType)
	b = hashMoney(b, t.NetAmount)
	for _, s := range []*string{t.SubAccount, t.PaymentChannel, t.CheckNumber, t.OriginalDescription, t.Type, t.PendingProviderID} {
		b = hashText(b, s)
	}
	if t.PostedAt != nil {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(t.PostedAt.UnixMicro()))
	} else {
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	return append(dst, sum[:syncHashSize]...)
}

// hashText appends a NULL marker, or a presence marker, the length and s.
func hashText(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(*s)))
	return append(b, *s...)
}

// hashDate appends d as hashText appends d.String(), without making the
// string.
func hashDate(b []byte, d *domain.Date) []byte {
	if d == nil {
		return append(b, 0)
	}
	// The presence marker, then the length: one uvarint byte, as the text
	// of any date is shorter than 128 bytes; it is set once written.
	b = append(b, 1, 0)
	at := len(b) - 1
	b = d.Append(b)
	b[at] = byte(len(b) - at - 1)
	return b
}

func hashMoney(b []byte, m *domain.Money) []byte {
	if m == nil {
		return append(b, 0)
	}
	s := m.String()
	return hashText(b, &s)
}
