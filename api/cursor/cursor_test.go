package cursor

import (
	"strings"
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

// TestRotation: a cursor signed with the previous key still opens while that
// key is configured as an older key, new cursors are signed with the newest
// key, and once the old key is dropped its cursors are refused.
func TestRotation(t *testing.T) {
	oldKey := []byte("the previous cursor key, 32 byte")
	newKey := []byte("the new cursor key, also 32 byte")
	b := Binding{Listing: "transactions", UserID: uuid.New(), Filters: ""}
	k := storage.Keyset{Date: time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC), ID: uuid.New()}
	fromOld := NewCodec(oldKey).Encode(b, k)
	rotated := NewCodec(newKey, oldKey)
	if got, err := rotated.Decode(b, fromOld); err != nil || got.ID != k.ID {
		t.Fatalf("old cursor after rotation: %+v %v", got, err)
	}
	fromNew := rotated.Encode(b, k)
	if _, err := NewCodec(newKey).Decode(b, fromNew); err != nil {
		t.Fatalf("a rotated codec does not sign with the newest key: %v", err)
	}
	if _, err := NewCodec(oldKey).Decode(b, fromNew); err != ErrInvalid {
		t.Fatalf("a cursor of the new key opened with the old key alone: %v", err)
	}
	if _, err := NewCodec(newKey).Decode(b, fromOld); err != ErrInvalid {
		t.Fatalf("an old cursor opened after its key was dropped: %v", err)
	}
}

func TestParseKeys(t *testing.T) {
	hexKey := strings.Repeat("5a", 32)
	keys, err := ParseKeys(hexKey + ", a text key of enough length")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || len(keys[0]) != 32 || keys[0][0] != 0x5a || string(keys[1]) != "a text key of enough length" {
		t.Fatalf("keys %q", keys)
	}
	for name, list := range map[string]string{
		"empty":       "",
		"empty entry": hexKey + ",",
		"short":       "short",
		"repeated":    hexKey + "," + hexKey,
	} {
		if _, err := ParseKeys(list); err == nil {
			t.Errorf("%s: %q accepted", name, list)
		}
	}
}
