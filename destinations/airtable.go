package destinations

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// airtableRecord is one record of an Airtable request or answer.
type airtableRecord struct {
	ID          string                     `json:"id,omitempty"`
	CreatedTime string                     `json:"createdTime,omitempty"`
	Fields      map[string]json.RawMessage `json:"fields"`
}

// AirtableUpsert is the body of Airtable's "Update multiple records" call
// with performUpsert: records whose merge fields match are updated, others
// created.
type AirtableUpsert struct {
	PerformUpsert struct {
		FieldsToMergeOn []string `json:"fieldsToMergeOn"`
	} `json:"performUpsert"`
	Records  []airtableRecord `json:"records"`
	Typecast bool             `json:"typecast,omitempty"`
}

// airtableUpsertAnswer is the answer to an upsert.
type airtableUpsertAnswer struct {
	Records        []airtableRecord `json:"records"`
	CreatedRecords []string         `json:"createdRecords"`
	UpdatedRecords []string         `json:"updatedRecords"`
}

// upsertAirtable upserts the account's record, keyed by the merge field
// holding the account id: PATCH /v0/{baseId}/{table}.
func upsertAirtable(ctx context.Context, client *http.Client, c AirtableConfig, ev Event) error {
	body, err := airtableBody(c, ev)
	if err != nil {
		return permanent(KindAirtable, "BAD_EVENT", err.Error())
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+c.Token)
	u := trimRoot(c.BaseURL) + "/v0/" + url.PathEscape(c.BaseID) + "/" + url.PathEscape(c.Table)
	var out airtableUpsertAnswer
	if err := do(ctx, client, request{service: KindAirtable, method: http.MethodPatch, url: u, header: h, body: body}, &out, airtableError); err != nil {
		return err
	}
	if len(out.Records) != 1 {
		return permanent(KindAirtable, "UNEXPECTED_ANSWER", fmt.Sprintf("upsert answered %d records, want 1", len(out.Records)))
	}
	return nil
}

// airtableBody builds the upsert of one record.
func airtableBody(c AirtableConfig, ev Event) ([]byte, error) {
	vals, err := rowValues(ev)
	if err != nil {
		return nil, err
	}
	fields := make(map[string]json.RawMessage, len(columns))
	for i, col := range columns {
		name := col.header
		if i == 0 {
			name = c.MergeField
		}
		fields[name] = vals[i]
	}
	var req AirtableUpsert
	req.PerformUpsert.FieldsToMergeOn = []string{c.MergeField}
	req.Records = []airtableRecord{{Fields: fields}}
	req.Typecast = true
	return json.Marshal(req)
}

// airtableError reads Airtable's error bodies: {"error": {"type": ...,
// "message": ...}}, {"error": "NOT_FOUND"} and {"errors": [{"error": ...,
// "message": ...}]}.
func airtableError(body []byte) (string, string) {
	var e struct {
		Error  json.RawMessage `json:"error"`
		Errors []struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	if len(e.Errors) > 0 {
		return e.Errors[0].Error, e.Errors[0].Message
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s, ""
	}
	var o struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Error, &o) == nil {
		return o.Type, o.Message
	}
	return "", ""
}
