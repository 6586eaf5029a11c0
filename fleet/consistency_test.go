//go:build fleet

package fleet

import (
	"fmt"
	"net/http"
	"testing"
)

// testScopedReadYourWrites creates accounts with a key scoped to one
// account through one replica and reads each at once through the other.
func testScopedReadYourWrites(t *testing.T, h *harness, ps []*process) {
	userID, fullKey, _ := h.User("scoped@example.com", "pro")
	full := newClient(t, fullKey)
	var seed struct {
		Account struct{ ID string } `json:"account"`
	}
	full.MustJSON(ps[0], "POST", "/v2/accounts", map[string]any{"name": "seed", "type": "depository", "currency": "USD", "currentBalance": 1}, http.StatusCreated, &seed)
	var k struct{ Key string }
	h.CLIJSON(&k, "keys", "create", "--user", userID, "--accounts", seed.Account.ID)
	scoped := newClient(t, k.Key)
	misses := 0
	const rounds = 50
	for i := 0; i < rounds; i++ {
		w, r := ps[i%2], ps[(i+1)%2]
		var made struct {
			Account struct{ ID string } `json:"account"`
		}
		scoped.MustJSON(w, "POST", "/v2/accounts", map[string]any{"name": fmt.Sprintf("made %d", i), "type": "depository", "currency": "USD", "currentBalance": i}, http.StatusCreated, &made)
		code, _, body, err := scoped.Do(r, "GET", "/v2/accounts/"+made.Account.ID, nil)
		if err != nil || code != http.StatusOK {
			misses++
			t.Logf("round %d: account made on %s: %d on %s: %.200s", i, w.name, code, r.name, body)
		}
	}
	t.Logf("scoped key: %d of %d accounts it created were missing on the next request to the other replica", misses, rounds)
	if misses > 0 {
		t.Fatalf("%d of %d writes not visible to the next request on another replica", misses, rounds)
	}
}
