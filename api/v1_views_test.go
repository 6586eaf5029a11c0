package api_test

import (
	"testing"
	"time"

	v1 "github.com/finsync/finsync/api/v1"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all"
)

func TestV1ProviderNames(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plaid":               "Plaid",
		"gocardless":          "GoCardless",
		"stripe":              "Stripe",
		"mercury":             "Mercury",
		domain.ProviderManual: "Manual",
		"teller":              "Teller",
		"":                    "",
	}
	for in, want := range tests {
		if got := v1.NewProviderNames(all.NewRegistry().Profiles()).Of(in); got != want {
			t.Errorf("v1 name of %q = %q, want %q", in, got, want)
		}
	}
}

func TestV1PostedAt(t *testing.T) {
	t.Parallel()
	day := domain.Date{Time: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)}
	at := time.Date(2026, 3, 5, 23, 10, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name     string
		postedAt *time.Time
		posted   *domain.Date
		want     string
	}{
		{"posted_at column, in UTC", &at, &day, "2026-03-05T22:10:00Z"},
		{"posted date at midnight UTC", nil, &day, "2026-03-05T00:00:00Z"},
		{"not posted", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := v1.PostedAt(&domain.Transaction{PostedAt: tt.postedAt, PostedDate: tt.posted})
			if (got == nil) != (tt.want == "") || got != nil && got.Format(time.RFC3339) != tt.want {
				t.Fatalf("PostedAt = %v, want %q", got, tt.want)
			}
		})
	}
}
