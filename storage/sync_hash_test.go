package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
)

// TestSyncHashIsUnchanged checks the digests against the way they were
// first computed, with the values' strings: stored digests must keep
// matching, or every row would look changed once.
func TestSyncHashIsUnchanged(t *testing.T) {
	str := func(s string) *string { return &s }
	date := func(y int, m time.Month, d int) *domain.Date {
		v := domain.Date{Time: time.Date(y, m, d, 0, 0, 0, 0, time.UTC)}
		return &v
	}
	money := func(s string) *domain.Money { m := domain.MustMoney(s); return &m }
	posted := time.Date(2026, 3, 4, 5, 6, 7, 890000, time.UTC)
	cat := uuid.New()
	txs := []domain.Transaction{
		{},
		{AccountID: uuid.New(), Status: domain.TxPosted, Summary: "Café", Amount: domain.MustMoney("-12.30"), Currency: "USD",
			AuthorizedDate: date(2026, 3, 3), PostedDate: date(2026, 3, 4), MerchantName: str("Café"), CategoryID: &cat,
			Fees: money("0.5"), FeeType: str("fx"), NetAmount: money("-12.80"), SubAccount: str(""), PaymentChannel: str("online"),
			CheckNumber: str("1001"), OriginalDescription: str("CAFE 123"), Type: str("debit"), PendingProviderID: str("p-1"), PostedAt: &posted},
		{Status: domain.TxPending, Amount: domain.MustMoney("1e3"), AuthorizedDate: date(1, 1, 1), PostedDate: date(999, 12, 31)},
		{Amount: domain.MustMoney("0"), AuthorizedDate: date(9999, 12, 31), PostedDate: date(10000, 1, 1)},
		{Amount: domain.MustMoney("-0.000001"), AuthorizedDate: date(-5, 6, 7)},
	}
	for day := time.Date(1999, 12, 25, 0, 0, 0, 0, time.UTC); day.Year() < 2001; day = day.AddDate(0, 0, 1) {
		in := domain.Date{Time: day.In(time.FixedZone("east", 13*3600))}
		txs = append(txs, domain.Transaction{AuthorizedDate: &in, PostedDate: &domain.Date{Time: day}})
	}
	hashes := syncHashes(txs)
	for i := range txs {
		want := syncHashByStrings(&txs[i])
		if got := syncHash(&txs[i]); !bytes.Equal(got, want) {
			t.Errorf("transaction %d: digest %x, want %x", i, got, want)
		}
		if !bytes.Equal(hashes[i], want) || cap(hashes[i]) != len(hashes[i]) {
			t.Errorf("transaction %d: syncHashes gives %x (cap %d), want %x", i, hashes[i], cap(hashes[i]), want)
		}
	}
}

// syncHashByStrings is syncHash as first written, each date and amount
// through its String.
func syncHashByStrings(t *domain.Transaction) []byte {
	text := func(b []byte, s *string) []byte {
		if s == nil {
			return append(b, 0)
		}
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(*s)))
		return append(b, *s...)
	}
	date := func(b []byte, d *domain.Date) []byte {
		if d == nil {
			return append(b, 0)
		}
		s := d.String()
		return text(b, &s)
	}
	money := func(b []byte, m *domain.Money) []byte {
		if m == nil {
			return append(b, 0)
		}
		s := m.String()
		return text(b, &s)
	}
	b := append([]byte(nil), t.AccountID[:]...)
	b = text(b, &t.Status)
	b = text(b, &t.Summary)
	b = money(b, &t.Amount)
	b = text(b, &t.Currency)
	b = date(b, t.AuthorizedDate)
	b = date(b, t.PostedDate)
	b = text(b, t.MerchantName)
	if t.CategoryID != nil {
		b = append(b, 1)
		b = append(b, t.CategoryID[:]...)
	} else {
		b = append(b, 0)
	}
	b = money(b, t.Fees)
	b = text(b, t.FeeType)
	b = money(b, t.NetAmount)
	for _, s := range []*string{t.SubAccount, t.PaymentChannel, t.CheckNumber, t.OriginalDescription, t.Type, t.PendingProviderID} {
		b = text(b, s)
	}
	if t.PostedAt != nil {
		b = append(b, 1)
		b = binary.BigEndian.AppendUint64(b, uint64(t.PostedAt.UnixMicro()))
	} else {
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	return sum[:16]
}

func BenchmarkSyncHashes(b *testing.B) {
	d := domain.Date{Time: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)}
	txs := make([]domain.Transaction, 1000)
	for i := range txs {
		txs[i] = domain.Transaction{AccountID: uuid.New(), Status: domain.TxPosted, Summary: "Whole Foods Market",
			Amount: domain.MustMoney("-42.17"), Currency: "USD", AuthorizedDate: &d, PostedDate: &d}
	}
	b.ReportAllocs()
	for b.Loop() {
		syncHashes(txs)
	}
}
