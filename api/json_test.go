package api_test

import (
	"encoding/json"
	"testing"
)

// mustField returns the raw JSON of transactions[i][field], to check number
// formatting exactly.
func mustField(t *testing.T, body []byte, i int, field string) json.RawMessage {
	t.Helper()
	return mustArrayField(t, body, "transactions", i, field)
}

func mustArrayField(t *testing.T, body []byte, array string, i int, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if err := json.Unmarshal(m[array], &rows); err != nil || len(rows) <= i {
		t.Fatalf("no %s[%d] in %s", array, i, body)
	}
	return rows[i][field]
}
