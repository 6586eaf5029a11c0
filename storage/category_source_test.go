package storage_test

import (
	"context"
	"testing"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage/storagetest"
)

// TestCategoryPrecedenceAgrees checks that the SQL function every
// statement uses (category_kept) and its Go mirror (domain.CategoryKept)
// decide alike for every pair of sources, and that the order is
// user > rule > provider.
func TestCategoryPrecedenceAgrees(t *testing.T) {
	pool, _ := storagetest.NewDB(t)
	sources := []*string{nil, ptr(domain.CategoryFromProvider), ptr(domain.CategoryFromRule), ptr(domain.CategoryFromUser)}
	writers := []string{domain.CategoryFromProvider, domain.CategoryFromRule, domain.CategoryFromUser}
	want := map[[2]string]bool{
		{"rule", "provider"}: true, {"user", "provider"}: true, {"user", "rule"}: true,
	}
	for _, cur := range sources {
		for _, w := range writers {
			var inSQL bool
			if err := pool.QueryRow(context.Background(), `SELECT category_kept($1, $2)`, cur, w).Scan(&inSQL); err != nil {
				t.Fatal(err)
			}
			c := ""
			if cur != nil {
				c = *cur
			}
			if inGo := domain.CategoryKept(c, w); inGo != inSQL || inGo != want[[2]string{c, w}] {
				t.Fatalf("kept(%q, %q): SQL %v, Go %v, want %v", c, w, inSQL, inGo, want[[2]string{c, w}])
			}
		}
	}
}

func ptr(s string) *string { return &s }
