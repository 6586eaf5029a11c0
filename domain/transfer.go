package domain

import (
	"time"

	"github.com/google/uuid"
)

// Transfer sources: found by detection, or paired by the user.
const (
	TransferDetected = "detected"
	TransferByUser   = "user"
)

// Transfer pairs an outflow in one of a user's accounts with the inflow it
// became in another: one move of money, not spending and income. Amount is
// positive, in the outflow's currency; InflowAmount in the inflow's.
// Caveat: Confidence is detection's own measure (1 for a user's pair), not
// a probability calibrated on anyone's data.
type Transfer struct {
	ID                   uuid.UUID
	UserID               uuid.UUID
	OutflowTransactionID uuid.UUID
	InflowTransactionID  uuid.UUID
	OutflowAccountID     uuid.UUID
	InflowAccountID      uuid.UUID
	// Date is the outflow's date (posted, else authorized).
	Date           Date
	Amount         Money
	Currency       string
	InflowAmount   Money
	InflowCurrency string
	Confidence     float64
	Source         string
	Reasons        []string
	CreatedAt      time.Time
}
