package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/finsync/finsync/domain"
)

// TestTenThousandthsAsDecimalArithmetic holds tenThousandths's shortcut
// from the coefficient to decimal arithmetic's answer, over random
// amounts of every scale and the edges of the shortcut.
func TestTenThousandthsAsDecimalArithmetic(t *testing.T) {
	check := func(d decimal.Decimal) {
		t.Helper()
		if got, want := tenThousandths(d), d.Shift(4).Round(0).IntPart(); got != want {
			t.Fatalf("tenThousandths(%s) = %d, want %d", d, got, want)
		}
	}
	for _, s := range []string{"0", "1", "-1", "0.0001", "-0.00005", "0.00005", "12.345678", "99999999999999",
		"-99999999999999.9999", "123456789012345", "1e3", "-2.5e-5", "10.10"} {
		check(decimal.RequireFromString(s))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		check(decimal.New(r.Int64N(2_000_000_000_000)-1_000_000_000_000, -r.Int32N(8)))
	}
}

// TestDetectRowTextAsStored holds a copied row's text, built when read, to
// the database's lower(concat_ws(' ', summary, original_description,
// merchant_name)).
func TestDetectRowTextAsStored(t *testing.T) {
	orig, merchant, empty := "ACH Transfer TO Savings", "Bank", ""
	for _, c := range []struct {
		tx   domain.Transaction
		want string
	}{
		{domain.Transaction{Summary: "Payment THANK You"}, "payment thank you"},
		{domain.Transaction{Summary: "Xfer", OriginalDescription: &orig, MerchantName: &merchant}, "xfer ach transfer to savings bank"},
		{domain.Transaction{Summary: "Xfer", MerchantName: &empty}, "xfer "},
		{domain.Transaction{Summary: "ÜBERWEISUNG an", OriginalDescription: &orig}, "überweisung an ach transfer to savings"},
		{domain.Transaction{}, ""},
	} {
		day := domain.DateOf(dayZero)
		c.tx.PostedDate, c.tx.Amount = &day, domain.MustMoney("1")
		rows := freshDetectRows([]domain.Transaction{c.tx}, make([]uuid.UUID, 1))
		if got := rows[0].lowerText(); got != c.want {
			t.Errorf("text of %+v = %q, want %q", c.tx, got, c.want)
		}
	}
}
