package allsim_test

import (
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// creds decodes the credentials of provider for name into a map.
func creds(t *testing.T, provider, name string) map[string]string {
	t.Helper()
	return simtest.Creds(t, allsim.Providers().Lookup(provider), name)
}

// gcLogin obtains GoCardless tokens for credentials c.
func gcLogin(t *testing.T, url string, c map[string]string) (access, refresh string) {
	t.Helper()
	var tok map[string]any
	resp := simtest.DoJSON(t, http.MethodPost, url+"/api/v2/token/new/", map[string]string{"secret_id": c["secret_id"], "secret_key": c["secret_key"]}, nil, &tok)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token/new: %d %v", resp.StatusCode, tok)
	}
	return tok["access"].(string), tok["refresh"].(string)
}

// gcRequisitionBody is the part of a GoCardless requisition the tests read.
type gcRequisitionBody struct {
	Accounts []string `json:"accounts"`
}

// plaidBody returns a Plaid request body with the credentials of c plus
// extra fields.
func plaidBody(c map[string]string, extra map[string]any) map[string]any {
	b := map[string]any{"client_id": c["client_id"], "secret": c["secret"], "access_token": c["access_token"]}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// syncResp is the part of a Plaid /transactions/sync answer the tests read.
type syncResp struct {
	Added      []map[string]any `json:"added"`
	NextCursor string           `json:"next_cursor"`
	HasMore    bool             `json:"has_more"`
	ErrorCode  string           `json:"error_code"`
}

// mercuryTxList is Mercury's per-account transactions answer.
type mercuryTxList struct {
	Total        int              `json:"total"`
	Transactions []map[string]any `json:"transactions"`
}
