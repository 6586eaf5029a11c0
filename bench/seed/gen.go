package main

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// merchant is a payee the generator draws transactions from.
type merchant struct {
	name     string
	category int // index into categoryNames
	channel  string
	minCents int64
	maxCents int64
}

// categoryNames are the categories every seeded user has.
var categoryNames = []string{"Groceries", "Restaurants", "Transport", "Shopping", "Utilities", "Entertainment", "Travel", "Income"}

// incomeCategory is the index of "Income" in categoryNames.
const incomeCategory = 7

var merchants = []merchant{
	{"Whole Foods Market", 0, "in store", 1200, 18000},
	{"Trader Joe's", 0, "in store", 900, 12000},
	{"Safeway", 0, "in store", 700, 15000},
	{"Instacart", 0, "online", 2500, 22000},
	{"Starbucks", 1, "in store", 350, 1800},
	{"Chipotle Mexican Grill", 1, "in store", 950, 3200},
	{"Sweetgreen", 1, "in store", 1100, 2600},
	{"DoorDash", 1, "online", 1500, 6500},
	{"Uber", 2, "online", 800, 6000},
	{"Lyft", 2, "online", 700, 5500},
	{"Shell", 2, "in store", 2500, 9000},
	{"BART Clipper", 2, "online", 200, 5000},
	{"Amazon", 3, "online", 599, 25000},
	{"Target", 3, "in store", 899, 21000},
	{"Best Buy", 3, "in store", 1999, 120000},
	{"IKEA", 3, "in store", 1499, 60000},
	{"PG&E", 4, "online", 4500, 32000},
	{"Comcast Xfinity", 4, "online", 5999, 12999},
	{"Verizon Wireless", 4, "online", 3500, 14000},
	{"Netflix", 5, "online", 699, 2299},
	{"Spotify", 5, "online", 999, 1699},
	{"AMC Theatres", 5, "in store", 1200, 6000},
	{"Delta Air Lines", 6, "online", 9900, 89000},
	{"Airbnb", 6, "online", 12000, 150000},
	{"Marriott Hotels", 6, "in store", 14000, 90000},
}

// user is one seeded user with its connection and accounts.
type user struct {
	id           uuid.UUID
	email        string
	connectionID uuid.UUID
	accounts     []uuid.UUID
	categories   []uuid.UUID // parallel to categoryNames
	// owed is the amount (cents) of a transfer out of checking whose
	// inflow into the user's last account is the user's next row.
	owed int64
}

// newUsers lays out n users with one connection, 2-3 accounts and the
// categories each, drawing ids from rng so a seed is reproducible.
func newUsers(rng *rand.Rand, n int) []user {
	us := make([]user, n)
	for i := range us {
		u := user{id: newID(rng), email: fmt.Sprintf("bench-%04d@example.com", i+1), connectionID: newID(rng)}
		for range 2 + rng.IntN(2) {
			u.accounts = append(u.accounts, newID(rng))
		}
		for range categoryNames {
			u.categories = append(u.categories, newID(rng))
		}
		us[i] = u
	}
	return us
}

// newID returns a random version 4 uuid from rng.
func newID(rng *rand.Rand) uuid.UUID {
	var id uuid.UUID
	for i := 0; i < 16; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			id[i+j] = byte(v >> (8 * j))
		}
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// accountKinds names the seeded accounts by position: type, subtype, name.
var accountKinds = [][3]string{
	{"depository", "checking", "Everyday Checking"},
	{"credit", "credit card", "Rewards Visa"},
	{"depository", "savings", "High Yield Savings"},
}

// transactionColumns are the columns the generator fills, in order.
var transactionColumns = []string{
	"id", "user_id", "bank_connection_id", "account_id", "provider", "provider_id", "status", "summary",
	"amount", "currency", "authorized_date", "posted_date", "merchant_name", "provider_merchant_name",
	"category_id", "category_source", "hidden", "payment_channel", "original_description", "created_at", "posted_at",
}

// txSource generates transactions as a pgx.CopyFromSource: the i-th row
// belongs to user i mod len(users), and dates advance steadily over the
// year before end, so every user's history is spread over the year and the
// rows arrive interleaved across users as a sync would store them.
type txSource struct {
	rng   *rand.Rand
	users []user
	total int
	end   time.Time
	i     int
	row   []any
}

func newTxSource(rng *rand.Rand, users []user, total int, end time.Time) *txSource {
	return &txSource{rng: rng, users: users, total: total, end: end.Truncate(24 * time.Hour)}
}

// Next implements pgx.CopyFromSource.
func (s *txSource) Next() bool {
	if s.i >= s.total {
		return false
	}
	s.row = s.generate(s.i)
	s.i++
	return true
}

// Values implements pgx.CopyFromSource.
func (s *txSource) Values() ([]any, error) { return s.row, nil }

// Err implements pgx.CopyFromSource.
func (s *txSource) Err() error { return nil }

// pendingDays is how recent a transaction must be to be still pending.
const pendingDays = 7

func (s *txSource) generate(i int) []any {
	u := &s.users[i%len(s.users)]
	rng := s.rng
	daysAgo := 365 - 365*i/s.total - rng.IntN(2)
	if daysAgo < 0 {
		daysAgo = 0
	}
	posted := s.end.AddDate(0, 0, -daysAgo)
	authorized := posted.AddDate(0, 0, -rng.IntN(3))
	pending := daysAgo < pendingDays && rng.IntN(2) == 0

	m := merchants[rng.IntN(len(merchants))]
	cat, cents := m.category, m.minCents+rng.Int64N(m.maxCents-m.minCents+1)
	name, channel := m.name, m.channel
	account := u.accounts[rng.IntN(len(u.accounts))]
	if rng.IntN(40) == 0 { // payroll, into checking
		cat, cents, name, channel, account = incomeCategory, -(150000 + rng.Int64N(450000)), "Acme Corp Payroll", "other", u.accounts[0]
	}
	last := len(u.accounts) - 1
	switch {
	case u.owed != 0: // a transfer's inflow, on the day of its outflow or the next
		cents, name, channel, account = u.owed, "Transfer from "+accountKinds[0][2], "other", u.accounts[last]
		u.owed = 0
	case rng.IntN(50) == 0: // a transfer out of checking, in whole dollars
		u.owed = 100 * (50 + rng.Int64N(950))
		cents, name, channel, account = -u.owed, "Transfer to "+accountKinds[last][2], "other", u.accounts[0]
	}
	var categoryID, categorySource any
	if rng.IntN(10) != 0 { // a tenth stay uncategorized
		categoryID, categorySource = u.categories[cat], "provider"
	}
	row := []any{
		newID(rng), u.id, u.connectionID, account, "plaid", fmt.Sprintf("ptx_%08d", i), "posted", name,
		pgtype.Numeric{Int: big.NewInt(cents), Exp: -2, Valid: true}, "USD", authorized, posted, name, name,
		categoryID, categorySource, rng.IntN(100) == 0, channel,
		fmt.Sprintf("%s #%04d %s", upper(name), rng.IntN(10000), posted.Format("01/02")),
		posted.Add(time.Duration(6+rng.IntN(14)) * time.Hour), posted.Add(time.Duration(rng.IntN(24)) * time.Hour),
	}
	if pending {
		row[6], row[11], row[20] = "pending", nil, nil
	}
	return row
}

// upper is strings.ToUpper for the ASCII merchant names.
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
