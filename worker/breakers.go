package worker

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/resilience"
	"github.com/finsync/finsync/storage"
)

// breakerReporter is an adapter that reports its circuit breakers
// (providers.Resilient).
type breakerReporter interface {
	States() []resilience.BreakerState
}

// breakerSaveTimeout bounds the write of a sync's breaker states, which
// runs even when the sync's own context has ended.
const breakerSaveTimeout = 5 * time.Second

// holder names this process's breaker reports: Syncer.Holder, else an id
// derived from the host name and process id (a restarted process with the
// same pid takes over the reports of the one it replaces).
func (s *Syncer) holder() uuid.UUID {
	if s.Holder != uuid.Nil {
		return s.Holder
	}
	host, _ := os.Hostname()
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("finsync-worker/"+host+"/"+strconv.Itoa(os.Getpid())))
}

// saveBreakers stores the states of the provider's breakers as this
// process sees them, so that the API and ops (in other processes) show
// them. It runs at the end of every sync slice; a failure is logged, never
// the sync's.
func (s *Syncer) saveBreakers(ctx context.Context, provider string) {
	r, ok := s.Providers[provider].(breakerReporter)
	if !ok {
		return
	}
	states := r.States()
	reports := make([]storage.BreakerReport, len(states))
	for i, st := range states {
		reports[i] = storage.BreakerReport{
			Provider: st.Provider, InstitutionID: st.InstitutionID, State: breakerState(st.State),
			ConsecutiveFailures: int(st.ConsecutiveFailures), RetryAfter: st.RetryAfter,
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), breakerSaveTimeout)
	defer cancel()
	if err := s.Store.SaveBreakerStates(ctx, s.holder(), reports); err != nil && s.Log != nil {
		s.Log.Warn("save breaker states", "provider", provider, "error", err)
	}
}

// breakerState maps the guard's state names to the stored ones.
func breakerState(guard string) string {
	switch guard {
	case "open":
		return storage.BreakerOpen
	case "half-open":
		return storage.BreakerHalfOpen
	}
	return storage.BreakerClosed
}
