package cursor

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/storage"
)

func TestRoundTripAndTamper(t *testing.T) {
	c := NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	b := Binding{Listing: "transactions", UserID: uuid.New(), Filters: "status=posted"}
	k := storage.Keyset{Date: time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC), ID: uuid.New()}
	s := c.Encode(b, k)
	got, err := c.Decode(b, s)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Date.Equal(k.Date) || got.ID != k.ID {
		t.Fatalf("round trip: got %+v want %+v", got, k)
	}
	other := b
	other.UserID = uuid.New()
	tests := map[string]struct {
		b Binding
		s string
	}{
		"other user":    {other, s},
		"other filters": {Binding{Listing: b.Listing, UserID: b.UserID, Filters: "status=all"}, s},
		"other listing": {Binding{Listing: "balances", UserID: b.UserID, Filters: b.Filters}, s},
		"flipped byte":  {b, flip(s)},
		"garbage":       {b, "not-a-cursor"},
		"empty":         {b, ""},
		"other key":     {b, NewCodec([]byte("another key another key another")).Encode(b, k)},
	}
	for name, tt := range tests {
		if _, err := c.Decode(tt.b, tt.s); err != ErrInvalid {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[3] == 'A' {
		b[3] = 'B'
	} else {
		b[3] = 'A'
	}
	return string(b)
}
