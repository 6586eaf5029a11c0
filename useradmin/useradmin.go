// Package useradmin checks what an operator gives to manage users and
// their API credentials (`finsync users`, `keys create`, `oauth-tokens
// issue`) and turns it into the records storage writes: a plan must be one
// finsync sells, an email an address, a credential's user, accounts and
// expiry valid ids and times. Every refusal names the flag at fault; it
// stores nothing itself.
package useradmin

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// CheckPlan refuses a plan finsync does not sell (--plan).
func CheckPlan(p string) error {
	switch p {
	case domain.PlanNone, domain.PlanStandard, domain.PlanPro, domain.PlanTrial:
		return nil
	}
	return fmt.Errorf("--plan must be one of none, standard, pro, trial")
}

// CheckNewUser refuses a new user whose email is not an address
// (--email) or whose plan finsync does not sell (--plan).
func CheckNewUser(email, plan string) error {
	if !strings.Contains(email, "@") {
		return fmt.Errorf("--email must be an email address")
	}
	return CheckPlan(plan)
}

// CredentialRequest is an API key or OAuth token as an operator asks for
// it: the user's id, the accounts it is limited to (comma-separated ids;
// empty: all, including future ones), its expiry (RFC 3339; empty: none),
// its name and, for an OAuth token, the authorized app's name.
type CredentialRequest struct {
	User, Accounts, Expires, Name, App string
}

// Credential parses the request into the credential of kind
// (storage.CredentialAPIKey or storage.CredentialOAuthToken) to issue.
func (r CredentialRequest) Credential(kind string) (storage.NewCredential, error) {
	nc := storage.NewCredential{Kind: kind, Name: r.Name, AppName: r.App}
	var err error
	if nc.UserID, err = uuid.Parse(r.User); err != nil {
		return nc, fmt.Errorf("--user: %w", err)
	}
	if r.Accounts != "" {
		nc.AccountIDs = []uuid.UUID{}
		for _, s := range strings.Split(r.Accounts, ",") {
			id, err := uuid.Parse(strings.TrimSpace(s))
			if err != nil {
				return nc, fmt.Errorf("--accounts: %q: %w", s, err)
			}
			nc.AccountIDs = append(nc.AccountIDs, id)
		}
	}
	if r.Expires != "" {
		t, err := time.Parse(time.RFC3339, r.Expires)
		if err != nil {
			return nc, fmt.Errorf("--expires: %w", err)
		}
		nc.ExpiresAt = &t
	}
	return nc, nil
}
