package useradmin

import (
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/storage"
)

func TestCheckNewUser(t *testing.T) {
	for _, c := range []struct{ email, plan, refusal string }{
		{"ada@example.com", "standard", ""},
		{"ada@example.com", "trial", ""},
		{"ada.example.com", "standard", "--email"},
		{"ada@example.com", "gold", "--plan"},
	} {
		err := CheckNewUser(c.email, c.plan)
		if (c.refusal == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), c.refusal)) {
			t.Errorf("%s, %s: %v, want refusal %q", c.email, c.plan, err, c.refusal)
		}
	}
}

// TestCredentialRequest: ids, account lists and expiry are parsed, and
// every refusal names its flag.
func TestCredentialRequest(t *testing.T) {
	user, acct := "0b0d7a52-4a5f-4bd5-9b43-1f6b7f1a2c3d", "6f0c1a3e-2b7d-4e55-8a9b-0c1d2e3f4a5b"
	nc, err := CredentialRequest{User: user, Accounts: " " + acct + " ", Expires: "2030-01-02T03:04:05Z", Name: "ci"}.Credential(storage.CredentialAPIKey)
	if err != nil || nc.UserID.String() != user || len(nc.AccountIDs) != 1 || nc.AccountIDs[0].String() != acct ||
		!nc.ExpiresAt.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) || nc.Name != "ci" || nc.Kind != storage.CredentialAPIKey {
		t.Fatalf("%+v %v", nc, err)
	}
	if nc, err := (CredentialRequest{User: user}).Credential(storage.CredentialOAuthToken); err != nil || nc.AccountIDs != nil || nc.ExpiresAt != nil {
		t.Fatalf("no accounts, no expiry: %+v %v", nc, err)
	}
	for flag, r := range map[string]CredentialRequest{
		"--user":     {User: "me"},
		"--accounts": {User: user, Accounts: acct + ",nope"},
		"--expires":  {User: user, Expires: "tomorrow"},
	} {
		if _, err := r.Credential(storage.CredentialAPIKey); err == nil || !strings.HasPrefix(err.Error(), flag+":") {
			t.Errorf("%+v: %v, want a refusal naming %s", r, err, flag)
		}
	}
}
