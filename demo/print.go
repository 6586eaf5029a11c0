package demo

import (
	"encoding/json"
	"fmt"
	"io"
)

// printDemo writes what the demo serves and how to try it: as one JSON
// object with asJSON, else as text with curl lines.
func printDemo(out io.Writer, asJSON bool, addr, simRoot, dbURL, opsToken string, d seeded) error {
	base := "http://" + addr
	if asJSON {
		return json.NewEncoder(out).Encode(map[string]any{"baseUrl": base, "key": d.Key, "userId": d.UserID, "databaseUrl": dbURL,
			"simulatorUrl": simRoot, "connections": d.Connections, "metricsUrl": d.MetricsURL, "opsUrl": base + "/ops", "opsToken": opsToken})
	}
	metrics := d.MetricsURL
	if metrics == "" {
		metrics = "none (--metrics-addr is empty)"
	}
	_, err := fmt.Fprintf(out, `finsync is running.

  API:        %[1]s/v2  (and %[1]s/v1)
  User:       %[2]s (%[3]s, pro plan)
  API key:    %[4]s
  Simulator:  %[5]s  (POST /_sim/advance {"days": 1}, then: go run ./cmd/finsync sync --all --wait)
  Ops:        %[1]s/ops  (jobs: %[1]s/ops/jobs/), operator token %[6]s
  Metrics:    %[7]s

Try:
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/me
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/accounts
  curl -s -H "Authorization: Bearer %[4]s" "%[1]s/v2/transactions?limit=5"
  curl -s -H "Authorization: Bearer %[4]s" %[1]s/v2/bank-connections

Manual-account changes (POST/PATCH/DELETE /v2/accounts) propagate to the simulated destinations:
  curl -s -H "Authorization: Bearer patDemoToken" %[5]s/v0/appFinsyncDemo/Accounts
  curl -s -H "Authorization: Bearer ya29.demo" "%[5]s/v4/spreadsheets/finsync-demo/values/Accounts"

Ops console (sign in with the operator token, or send it as a bearer token):
  curl -s -H "Authorization: Bearer %[6]s" %[1]s/ops

Press Ctrl-C to stop.
`, base, Email, d.UserID, d.Key, simRoot, opsToken, metrics)
	return err
}
