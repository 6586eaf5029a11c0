package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestScopedKeySeesOnlyCategoriesOfItsProviders: a key scoped to a Plaid
// account lists the manual categories and groups and Plaid's, not those of
// Mercury, whose accounts are all outside its scope; filtering
// transactions by, or editing, a Mercury category answers the same 404 as a
// missing one. An unscoped key of the same user sees all of them.
func TestScopedKeySeesOnlyCategoriesOfItsProviders(t *testing.T) {
	e := newEnv(t)
	w := seedWorld(e.fx)
	providerCategory := func(provider, name, group string) (uuid.UUID, uuid.UUID) {
		t.Helper()
		var gid, id uuid.UUID
		if err := e.fx.Pool.QueryRow(t.Context(), `INSERT INTO category_groups (user_id, name, provider) VALUES ($1, $2, $3) RETURNING id`,
			w.a.ID, group, provider).Scan(&gid); err != nil {
			t.Fatal(err)
		}
		if err := e.fx.Pool.QueryRow(t.Context(), `INSERT INTO categories (user_id, provider, provider_id, name, group_id)
			VALUES ($1, $2, $3, $3, $4) RETURNING id`, w.a.ID, provider, name, gid).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id, gid
	}
	plaidCat, plaidGroup := providerCategory("plaid", "Plaid Travel", "Plaid group")
	mercuryCat, mercuryGroup := providerCategory("mercury", "Mercury Payroll", "Mercury group")
	var manualGroup uuid.UUID
	if err := e.fx.Pool.QueryRow(t.Context(), `SELECT group_id FROM categories WHERE id = $1`, w.catA).Scan(&manualGroup); err != nil {
		t.Fatal(err)
	}
	scoped := e.fx.Key(w.a.ID, []uuid.UUID{w.acctA1})
	full := e.fx.Key(w.a.ID, nil)

	list := func(key, path, field string) []string {
		t.Helper()
		r := e.get(path, key)
		e.expect(r, http.StatusOK, "")
		got := ids(t, r, field)
		slices.Sort(got)
		return got
	}
	sorted := func(ids ...uuid.UUID) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = id.String()
		}
		slices.Sort(out)
		return out
	}
	if got, want := list(scoped, "/v2/categories", "categories"), sorted(w.catA, plaidCat); !slices.Equal(got, want) {
		t.Errorf("scoped categories %v, want %v", got, want)
	}
	if got, want := list(scoped, "/v2/category-groups", "categoryGroups"), sorted(manualGroup, plaidGroup); !slices.Equal(got, want) {
		t.Errorf("scoped category groups %v, want %v", got, want)
	}
	if got, want := list(full, "/v2/categories", "categories"), sorted(w.catA, plaidCat, mercuryCat); !slices.Equal(got, want) {
		t.Errorf("full categories %v, want %v", got, want)
	}
	if got, want := list(full, "/v2/category-groups", "categoryGroups"), sorted(manualGroup, plaidGroup, mercuryGroup); !slices.Equal(got, want) {
		t.Errorf("full category groups %v, want %v", got, want)
	}

	missing := e.get("/v2/transactions?categoryId="+uuid.NewString(), scoped)
	e.expect(missing, http.StatusNotFound, "NOT_FOUND")
	hidden := e.get("/v2/transactions?categoryId="+mercuryCat.String(), scoped)
	e.expect(hidden, http.StatusNotFound, "NOT_FOUND")
	if string(hidden.body) != string(missing.body) {
		t.Errorf("an invisible category answers %s, a missing one %s", hidden.body, missing.body)
	}
	e.expect(e.get("/v2/transactions?categoryId="+plaidCat.String(), scoped), http.StatusOK, "")
	e.expect(e.get("/v2/transactions?categoryId="+mercuryCat.String(), full), http.StatusOK, "")

	patch := func(key string, id uuid.UUID) response {
		return e.do(http.MethodPatch, "/v2/categories/"+id.String(), key, strings.NewReader(`{"description":"edited"}`))
	}
	e.expect(patch(scoped, mercuryCat), http.StatusNotFound, "NOT_FOUND")
	e.expect(patch(scoped, plaidCat), http.StatusOK, "")
	e.expect(patch(scoped, w.catA), http.StatusOK, "")
	e.expect(patch(full, mercuryCat), http.StatusOK, "")
}
