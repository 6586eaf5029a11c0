// Package plaidsim is Plaid's simulated API, mounted by the simulator host
// (package sim) at the root: /accounts/get, /transactions/sync,
// /investments/..., /liabilities/get, /institutions/get_by_id, with Plaid's
// auth, field names, cursors and error bodies. Its extra faults are
// institution_down (one institution, or all) and mutation (the next
// /transactions/sync page of a loop answers
// TRANSACTIONS_SYNC_MUTATION_DURING_PAGINATION).
package plaidsim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simkit"
)

// Name is the provider's name, as the adapter's registry knows it.
const Name = "plaid"

// Sim is Plaid's simulated API, at the root of the simulator. The zero
// value is ready to use and holds no state: what it keeps for one
// simulator lives in what Route builds.
type Sim struct{}

// Name returns the provider's name, Name.
func (Sim) Name() string { return Name }

// Prefix returns the path prefix the API lives under.
func (Sim) Prefix() string { return "/" }

// Route registers the endpoints on mux, served for simulator h with
// state of their own for that simulator.
func (Sim) Route(h *sim.Simulator, mux *http.ServeMux) {
	s := &server{h: h, notes: newNotifier(h)}
	h.OnChange(s.notes.changed)
	s.routePlaid(mux)
}

// ExtraFaults lists the fault modes supported beyond the host's.
func (Sim) ExtraFaults() []string { return []string{sim.FaultInstitutionDown, sim.FaultMutation} }

// BaseURL returns the base URL an adapter uses for a simulator at root.
func (Sim) BaseURL(root string) string { return root }

// CredentialKey returns the distinguishing credential of decoded
// credentials ("" when missing).
// A re-linked item's token designates the same data as the first one's.
func (Sim) CredentialKey(c map[string]string) string {
	key, _ := splitAccessToken(c["access_token"])
	return key
}

// WriteFault answers with the provider's real error for an injected
// outage or rate limit.
func (Sim) WriteFault(w http.ResponseWriter, r *http.Request, mode string) {
	if mode == sim.FaultRateLimit {
		writePlaidError(w, r, http.StatusTooManyRequests, "RATE_LIMIT_EXCEEDED", "RATE_LIMIT", "rate limit exceeded for attempts to access this item. please try again later", "")
		return
	}
	writePlaidError(w, r, http.StatusInternalServerError, "API_ERROR", "INTERNAL_SERVER_ERROR", "an unexpected error occurred", "")
}

// Credentials returns credentials the simulator accepts, in the shape
// the adapter stores, deterministic from name. A name with a relink
// generation (simkit.SplitRelink) gives the access token of a new Item
// for the same data: its item, account and transaction ids are new, its
// accounts' persistent_account_id the same, as Plaid's are when a user
// links the same bank again.
func (Sim) Credentials(name string) json.RawMessage {
	base, gen := simkit.SplitRelink(name)
	h := simkit.HashString(0x5eed, Name, base)
	return simkit.MustJSON(map[string]string{
		"client_id":    string(simkit.AppendHex(nil, h, 24)),
		"secret":       string(simkit.AppendHex(nil, simkit.Mix(h), 30)),
		"access_token": relinkedAccessToken("access-sandbox-"+simkit.UUIDFrom(simkit.Mix(h+1)), gen),
	})
}

// relinkTokenMark ends the access token of a re-linked item, before its
// generation.
const relinkTokenMark = "-r"

// relinkedAccessToken returns the access token of generation gen of the
// item whose first token is token.
func relinkedAccessToken(token string, gen uint64) string {
	if gen == 0 {
		return token
	}
	return token + relinkTokenMark + strconv.FormatUint(gen, 10)
}

// splitAccessToken returns the first-link token an access token's data is
// generated from, and the item's relink generation.
func splitAccessToken(token string) (string, uint64) {
	return simkit.SplitGeneration(token, relinkTokenMark)
}

// server serves Plaid's endpoints for one simulator.
type server struct {
	h *sim.Simulator
	// notes sends the Items' webhooks.
	notes *notifier
	bufs  sync.Pool // *simkit.JW buffers for large responses

	movesMu sync.Mutex
	movesBy map[uint64]*plaidMoves // by item seed, at the last clock asked
}

// getBuf returns an empty response buffer with at least n bytes of room.
func (s *server) getBuf(n int) *simkit.JW {
	if b, ok := s.bufs.Get().(*simkit.JW); ok && cap(b.B) >= n {
		b.Reset()
		return b
	}
	return &simkit.JW{B: make([]byte, 0, n)}
}

// putBuf returns a buffer to the pool once its bytes were written.
func (s *server) putBuf(b *simkit.JW) {
	b.Reset()
	if cap(b.B) <= 4<<20 {
		s.bufs.Put(b)
	}
}

// plaidInstitutionGet serves /institutions/get_by_id, which needs API keys
// but no access token.
func (s *server) plaidInstitutionGet(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ClientID      string `json:"client_id"`
		Secret        string `json:"secret"`
		InstitutionID string `json:"institution_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_REQUEST", "INVALID_BODY", "body could not be parsed as JSON", "")
		return
	}
	if req.ClientID == "" {
		req.ClientID = r.Header.Get("PLAID-CLIENT-ID")
	}
	if req.Secret == "" {
		req.Secret = r.Header.Get("PLAID-SECRET")
	}
	if !simkit.IsToken(req.ClientID, 8, 64) || !simkit.IsToken(req.Secret, 8, 64) {
		writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_API_KEYS", "invalid client_id or secret provided", "")
		return
	}
	for _, in := range plaidInstitutions {
		if in[0] == req.InstitutionID {
			simkit.WriteJSON(w, http.StatusOK, map[string]any{
				"institution": map[string]any{
					"institution_id": in[0], "name": in[1], "country_codes": []string{"US"},
					"products":        []string{"assets", "auth", "balance", "transactions", "identity", "investments", "liabilities"},
					"routing_numbers": []string{}, "oauth": false, "url": nil, "primary_color": nil, "logo": nil,
				},
				"request_id": plaidRequestID(),
			})
			return
		}
	}
	writePlaidError(w, r, http.StatusBadRequest, "INVALID_INPUT", "INVALID_INSTITUTION", "invalid institution_id provided", "")
}
