package api_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// v1Body is a decoded version 1 body whose values stay raw JSON, so that
// numbers can be compared exactly as written.
type v1Body struct {
	Data  json.RawMessage            `json:"data"`
	Meta  map[string]json.RawMessage `json:"meta"`
	Conns []map[string]any           `json:"bank_connections"`
}

func decodeV1(t *testing.T, r response) v1Body {
	t.Helper()
	var b v1Body
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return b
}

// v1Rows returns data (an array) or data[key] as rows of raw fields.
func v1Rows(t *testing.T, r response, key string) []map[string]json.RawMessage {
	t.Helper()
	data := decodeV1(t, r).Data
	if key != "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("decode data of %s: %v", r.body, err)
		}
		data = m[key]
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("no %q rows in %s: %v", key, r.body, err)
	}
	return rows
}

// v1Str decodes a raw JSON string field ("" for null).
func v1Str(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if string(raw) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("not a string: %s", raw)
	}
	return s
}

// v1IDs returns the id of each row.
func v1IDs(t *testing.T, rows []map[string]json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(rows))
	for i, row := range rows {
		out[i] = v1Str(t, row["id"])
	}
	return out
}

func v1UUIDs(ids ...uuid.UUID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// v1Error returns the endpoint error's code and message.
func v1Error(t *testing.T, r response) (code, message string) {
	t.Helper()
	var b struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("decode error %s: %v", r.body, err)
	}
	return b.Error.Code, b.Error.Message
}

// v1Next turns a meta.nextPage URL into a path on the test server,
// checking that it points there; "" when nextPage is null.
func (e *env) v1Next(r response) string {
	e.t.Helper()
	raw := decodeV1(e.t, r).Meta["nextPage"]
	if raw == nil {
		e.t.Fatalf("no meta.nextPage in %s", r.body)
	}
	next := v1Str(e.t, raw)
	if next == "" {
		return ""
	}
	if !strings.HasPrefix(next, e.srv.URL+"/v1/") {
		e.t.Fatalf("nextPage %q is not a full URL on %s", next, e.srv.URL)
	}
	u, err := url.Parse(next)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.RequestURI()
}

// v1MetaInt returns meta[name] as an integer.
func v1MetaInt(t *testing.T, r response, name string) int {
	t.Helper()
	var n int
	if err := json.Unmarshal(decodeV1(t, r).Meta[name], &n); err != nil {
		t.Fatalf("meta.%s of %s: %v", name, r.body, err)
	}
	return n
}

// v1MetaBool returns meta[name] as a boolean.
func v1MetaBool(t *testing.T, r response, name string) bool {
	t.Helper()
	var b bool
	if err := json.Unmarshal(decodeV1(t, r).Meta[name], &b); err != nil {
		t.Fatalf("meta.%s of %s: %v", name, r.body, err)
	}
	return b
}
