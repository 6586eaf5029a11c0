package v2

import (
	"cmp"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// connectionView is the version 2 Bank connection object, with nextSyncAt
// (our addition).
type connectionView struct {
	ID                       uuid.UUID  `json:"id"`
	Provider                 string     `json:"provider"`
	InstitutionName          *string    `json:"institutionName"`
	InstitutionLogoURL       *string    `json:"institutionLogoUrl"`
	Status                   string     `json:"status"`
	LastSyncedAt             *time.Time `json:"lastSyncedAt"`
	LastProviderErrorCode    *string    `json:"lastProviderErrorCode"`
	LastProviderErrorMessage *string    `json:"lastProviderErrorMessage"`
	ReconnectURL             *string    `json:"reconnectUrl"`
	NextSyncAt               *time.Time `json:"nextSyncAt"`
	Health                   healthView `json:"health"`
}

// healthView is a connection's health (our addition): how its syncs go,
// its circuit breaker as the workers report it, its provider quota, until
// when and why its sync is held back, when its consent ends, and what the
// operator's app should do about it now.
type healthView struct {
	LastSuccessfulSyncAt *time.Time `json:"lastSuccessfulSyncAt"`
	NextSyncAt           *time.Time `json:"nextSyncAt"`
	Breaker              string     `json:"breaker"`
	QuotaRemaining       *int       `json:"quotaRemaining"`
	ConsecutiveFailures  int        `json:"consecutiveFailures"`
	HeldBackUntil        *time.Time `json:"heldBackUntil"`
	HeldBackReason       *string    `json:"heldBackReason"`
	ConsentExpiresAt     *time.Time `json:"consentExpiresAt"`
	Action               string     `json:"action"`
}

func newHealthView(h storage.ConnectionHealth) healthView {
	if h.Breaker == "" {
		h.Breaker = storage.BreakerClosed
	}
	return healthView{
		LastSuccessfulSyncAt: utc(h.LastSuccessfulSyncAt), NextSyncAt: utc(h.NextSyncAt),
		Breaker: h.Breaker, QuotaRemaining: h.QuotaRemaining, ConsecutiveFailures: h.ConsecutiveFailures,
		HeldBackUntil: utc(h.HeldBackUntil), HeldBackReason: h.HeldBackReason,
		ConsentExpiresAt: utc(h.ConsentExpiresAt), Action: cmp.Or(h.Action, storage.ActionNone),
	}
}

func newConnectionView(bc domain.BankConnection, h storage.ConnectionHealth) connectionView {
	return connectionView{
		ID:                       bc.ID,
		Provider:                 bc.Provider,
		InstitutionName:          optional(bc.InstitutionName),
		InstitutionLogoURL:       optional(bc.InstitutionLogoURL),
		Status:                   bc.Status,
		LastSyncedAt:             utc(bc.LastSyncedAt),
		LastProviderErrorCode:    bc.LastProviderErrorCode,
		LastProviderErrorMessage: bc.LastProviderErrorMessage,
		ReconnectURL:             bc.ReconnectURL,
		NextSyncAt:               utc(bc.NextSyncAt),
		Health:                   newHealthView(h),
	}
}

func (s *Server) listConnections(c *gin.Context) {
	q := newQuery(c)
	status := q.Enum("status", "active", "active", "all", "disabled")
	if q.Err() != nil {
		s.handle(c, q.Err())
		return
	}
	rows, err := s.cfg.Store.ListConnections(c.Request.Context(), scope(c), status)
	if err != nil {
		s.handle(c, err)
		return
	}
	health, err := s.cfg.Store.GetConnectionHealth(c.Request.Context(), rows)
	if err != nil {
		s.handle(c, err)
		return
	}
	out := make([]connectionView, len(rows))
	for i, bc := range rows {
		out[i] = newConnectionView(bc, health[bc.ID])
	}
	c.JSON(http.StatusOK, gin.H{"bankConnections": out})
}
