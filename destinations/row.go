package destinations

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// column is one field of the row written for an account: its header (the
// Airtable field name, the sheet's header cell) and where its value comes
// from.
type column struct {
	header string
	// member is the member of the version 2 Account object; empty for the
	// event's own fields.
	member string
	event  func(Event) any
}

// columns are the fields of an account's row, in sheet order. The account
// id comes first: it is the key of the upsert.
var columns = []column{
	{header: "Account ID", member: "id"},
	{header: "Name", member: "name"},
	{header: "Institution", member: "institutionName"},
	{header: "Type", member: "type"},
	{header: "Subtype", member: "subtype"},
	{header: "Mask", member: "mask"},
	{header: "Currency", member: "currency"},
	{header: "Current Balance", member: "currentBalance"},
	{header: "Available Balance", member: "availableBalance"},
	{header: "Balance As Of", member: "balanceAsOf"},
	{header: "Status", member: "status"},
	{header: "Closed At", member: "closedAt"},
	{header: "Event ID", event: func(e Event) any { return e.ID }},
	{header: "Event Type", event: func(e Event) any { return e.Type }},
	{header: "Occurred At", event: func(e Event) any { return e.OccurredAt }},
}

// Headers returns the field names written for an account, in order: the
// Airtable table's fields and the sheet's header row.
func Headers() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.header
	}
	return out
}

// rowValues returns the event's values in column order, as JSON: numbers
// stay the account's exact decimal text (never a float64), and a missing
// value is JSON null.
func rowValues(ev Event) ([]json.RawMessage, error) {
	var acct map[string]json.RawMessage
	if err := json.Unmarshal(ev.Account, &acct); err != nil {
		return nil, fmt.Errorf("decode account of event %s: %w", ev.ID, err)
	}
	out := make([]json.RawMessage, len(columns))
	for i, c := range columns {
		if c.event != nil {
			b, err := json.Marshal(c.event(ev))
			if err != nil {
				return nil, fmt.Errorf("encode %s: %w", c.header, err)
			}
			out[i] = b
			continue
		}
		v, ok := acct[c.member]
		if !ok || len(bytes.TrimSpace(v)) == 0 {
			v = json.RawMessage("null")
		}
		out[i] = v
	}
	return out, nil
}

// accountID returns the account's id from the event.
func accountID(ev Event) (string, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(ev.Account, &a); err != nil || a.ID == "" {
		return "", fmt.Errorf("event %s: account without id", ev.ID)
	}
	return a.ID, nil
}

// isNull reports a JSON null.
func isNull(v json.RawMessage) bool { return strings.TrimSpace(string(v)) == "null" }
