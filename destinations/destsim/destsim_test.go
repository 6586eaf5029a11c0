package destsim

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseA1(t *testing.T) {
	tests := []struct {
		in                     string
		sheet                  string
		col1, row1, col2, row2 int
		bad                    bool
	}{
		{in: "Accounts", sheet: "Accounts", col1: 1, row1: 1},
		{in: "Accounts!A:A", sheet: "Accounts", col1: 1, row1: 1, col2: 1},
		{in: "'My accounts'!A2:O2", sheet: "My accounts", col1: 1, row1: 2, col2: 15, row2: 2},
		{in: "'It''s'!B3", sheet: "It's", col1: 2, row1: 3, col2: 2, row2: 3},
		{in: "S!AA10:AB", sheet: "S", col1: 27, row1: 10, col2: 28},
		{in: "'unterminated!A1", bad: true},
		{in: "S!a1", bad: true},
		{in: "", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := parseA1(tt.in)
			if tt.bad {
				if err == nil {
					t.Fatalf("parsed %+v", r)
				}
				return
			}
			if err != nil || r.sheet != tt.sheet || r.col1 != tt.col1 || r.row1 != tt.row1 || r.col2 != tt.col2 || r.row2 != tt.row2 {
				t.Fatalf("parseA1 = %+v, %v", r, err)
			}
		})
	}
}

func TestDestinationEndpointsOverHTTP(t *testing.T) {
	s := New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	call := func(method, path, body, token string) (int, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	upsert := `{"performUpsert":{"fieldsToMergeOn":["Key"]},"records":[{"fields":{"Key":"k1","N":1}}]}`
	if st, m := call("PATCH", "/v0/app1/T", upsert, ""); st != 401 || m["error"].(map[string]any)["type"] != "AUTHENTICATION_REQUIRED" {
		t.Fatalf("no token: %d %v", st, m)
	}
	_, m := call("PATCH", "/v0/app1/T", upsert, "pat")
	if len(m["createdRecords"].([]any)) != 1 {
		t.Fatalf("first upsert %v", m)
	}
	_, m = call("PATCH", "/v0/app1/T", strings.Replace(upsert, `"N":1`, `"N":2`, 1), "pat")
	if len(m["updatedRecords"].([]any)) != 1 || len(s.AirtableRecords("app1", "T")) != 1 {
		t.Fatalf("second upsert %v", m)
	}
	if st, _ := call("POST", "/_sim/destinations/faults", `{"service":"airtable","mode":"outage"}`, ""); st != 200 {
		t.Fatalf("set fault: %d", st)
	}
	if st, m := call("PATCH", "/v0/app1/T", upsert, "pat"); st != 503 || m["error"] == nil {
		t.Fatalf("outage: %d %v", st, m)
	}
	// An Airtable fault leaves Google Sheets alone.
	if st, _ := call("PUT", "/v4/spreadsheets/S/values/Sheet1!A1:B1?valueInputOption=RAW", `{"values":[["a",1]]}`, "ya29"); st != 200 {
		t.Fatalf("sheets update during an airtable outage: %d", st)
	}
	if st, m := call("PUT", "/v4/spreadsheets/S/values/Sheet1!A1:B1", `{"values":[["a",1]]}`, "ya29"); st != 400 || m["error"].(map[string]any)["status"] != "INVALID_ARGUMENT" {
		t.Fatalf("update without valueInputOption: %d %v", st, m)
	}
	if st, m := call("POST", "/v4/spreadsheets/S/values/Sheet1!A1:append?valueInputOption=RAW", `{"values":[["b",2]]}`, "ya29"); st != 200 ||
		m["updates"].(map[string]any)["updatedRange"] != "Sheet1!A2" {
		t.Fatalf("append: %d %v", st, m)
	}
	_, m = call("GET", "/v4/spreadsheets/S/values/Sheet1!A:A", "", "ya29")
	if vals := m["values"].([]any); len(vals) != 2 || vals[1].([]any)[0] != "b" {
		t.Fatalf("get: %v", m)
	}
	if n := len(s.Requests("")); n != 8 {
		t.Errorf("recorded %d requests, want 8", n)
	}
}
