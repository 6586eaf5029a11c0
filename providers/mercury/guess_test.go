package mercury

import (
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/internal/wire"
	"github.com/finsync/finsync/providers/providertest"
)

// TestGuessNextMatchesTheWalk walks a simulated history of several
// accounts of several pages each and checks every guess against the Next
// the page then returned: a guess is offered for every page but the first
// of each account and the last of all, and each one is right.
func TestGuessNextMatchesTheWalk(t *testing.T) {
	conn, client := providertest.SimConnection(t, Name, "guess", "/api/v1", 7, 7500, 200)
	a := New(client, WithHistoryDays(365)).(*Adapter)
	req := providers.TransactionRequest{Today: domain.DateOf(providertest.Start)}
	var pages, guessed, accountStarts, rows int
	for {
		guess, ok := a.GuessNext(req.Cursor)
		page, err := a.Transactions(t.Context(), conn, req)
		if err != nil {
			t.Fatal(err)
		}
		pages, rows = pages+1, rows+len(page.Upserts)+len(page.Removed)
		switch {
		case ok:
			guessed++
			if guess != page.Next {
				t.Fatalf("page %d: guessed %q, the page's Next is %q", pages, guess, page.Next)
			}
		case req.Cursor != "":
			var cur cursor
			if err := wire.DecodeCursor(req.Cursor, &cur); err != nil {
				t.Fatal(err)
			}
			switch {
			case cur.Offset == 0:
				accountStarts++
			case !page.Done:
				t.Errorf("page %d (offset %d of a known account): no guess", pages, cur.Offset)
			}
		}
		if page.Done {
			break
		}
		req = providers.TransactionRequest{Cursor: page.Next, Today: req.Today}
	}
	t.Logf("%d rows in %d pages: %d guessed, %d account starts after the first", rows, pages, guessed, accountStarts)
	if guessed < pages/2 {
		t.Errorf("only %d of %d pages guessed", guessed, pages)
	}
}

// TestGuessNextRefusesForeignCursors checks that a cursor it cannot read,
// the first page's empty cursor and the end of the walk get no guess.
func TestGuessNextRefusesForeignCursors(t *testing.T) {
	a := New(nil).(*Adapter)
	for _, c := range []string{"", "not a cursor", wire.EncodeCursor(cursor{Last: "2026-01-01"})} {
		if g, ok := a.GuessNext(c); ok {
			t.Errorf("GuessNext(%q) = %q, want no guess", c, g)
		}
	}
	last := wire.EncodeCursor(cursor{Accounts: []string{"a", "b"}, Index: 1, Offset: 1000, Total: 1500})
	if g, ok := a.GuessNext(last); ok {
		t.Errorf("last page of the last account: guessed %q", g)
	}
}
