package worker

import (
	"testing"

	"github.com/finsync/finsync/providers"
)

func TestOnlyAdds(t *testing.T) {
	page := func(added []string, removed []string, replace ...string) providers.TransactionPage {
		p := providers.TransactionPage{Removed: removed, ReplacePendingFor: replace}
		for _, id := range added {
			p.Upserts = append(p.Upserts, providers.Transaction{ProviderID: id})
		}
		return p
	}
	for _, tt := range []struct {
		name  string
		batch []providers.TransactionPage
		want  bool
	}{
		{"adds only", []providers.TransactionPage{page([]string{"a", "b"}, nil), page([]string{"c"}, nil)}, true},
		{"removes ids it does not add", []providers.TransactionPage{page([]string{"a"}, []string{"x"}), page([]string{"b"}, []string{"y"})}, true},
		{"removes an id a later page adds", []providers.TransactionPage{page(nil, []string{"b"}), page([]string{"b"}, nil)}, false},
		{"removes an id an earlier page adds", []providers.TransactionPage{page([]string{"a"}, nil), page(nil, []string{"a"})}, false},
		{"replaces a pending set", []providers.TransactionPage{page([]string{"a"}, nil, "acct")}, false},
	} {
		if got := onlyAdds(tt.batch); got != tt.want {
			t.Errorf("%s: onlyAdds = %v, want %v", tt.name, got, tt.want)
		}
	}
}
