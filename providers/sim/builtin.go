package sim

import (
	"encoding/json"
	"net/http"

	"github.com/finsync/finsync/providers/sim/simkit"
)

// Builtin returns the simulated providers still held by this package, for
// the registration package to list until each moves beside its adapter.
func Builtin() Providers {
	return Providers{gocardlessSim{}}
}

// gocardlessSim is GoCardless Bank Account Data's simulated API, under
// /api/v2/.
type gocardlessSim struct{}

func (gocardlessSim) Name() string                             { return GoCardless }
func (gocardlessSim) Prefix() string                           { return "/api/v2/" }
func (gocardlessSim) Route(s *Simulator, mux *http.ServeMux)   { s.routeGoCardless(mux) }
func (gocardlessSim) ExtraFaults() []string                    { return nil }
func (gocardlessSim) BaseURL(root string) string               { return root + "/api/v2" }
func (gocardlessSim) CredentialKey(c map[string]string) string { return c["requisition_id"] }

func (gocardlessSim) WriteFault(w http.ResponseWriter, _ *http.Request, mode string) {
	if mode == FaultRateLimit {
		h := w.Header()
		setExact(h, "HTTP_X_RATELIMIT_LIMIT", "100")
		setExact(h, "HTTP_X_RATELIMIT_REMAINING", "0")
		setExact(h, "HTTP_X_RATELIMIT_RESET", "60")
		writeGCError(w, http.StatusTooManyRequests, gcError{Summary: "Rate limit exceeded", Detail: "The rate limit for this resource is 100/minute. Please try again in 60 seconds"})
		return
	}
	writeGCError(w, http.StatusServiceUnavailable, gcError{Summary: "Service Unavailable", Detail: "Institution service unavailable. Please try again later.", Type: "ServiceError"})
}

func (gocardlessSim) Credentials(name string) json.RawMessage {
	h := simkit.HashString(0x5eed, GoCardless, name)
	return simkit.MustJSON(map[string]string{
		"secret_id":      simkit.UUIDFrom(h),
		"secret_key":     string(simkit.AppendHex(nil, simkit.Mix(h), 128)),
		"requisition_id": simkit.UUIDFrom(simkit.Mix(h + 1)),
	})
}
