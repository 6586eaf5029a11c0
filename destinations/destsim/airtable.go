package destsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// airtableMaxRecords is Airtable's limit of records per write request.
const airtableMaxRecords = 10

// airtableWrite is the body of PATCH /v0/{baseId}/{table}.
type airtableWrite struct {
	PerformUpsert *struct {
		FieldsToMergeOn []string `json:"fieldsToMergeOn"`
	} `json:"performUpsert"`
	Records []struct {
		ID     string                     `json:"id"`
		Fields map[string]json.RawMessage `json:"fields"`
	} `json:"records"`
	Typecast bool `json:"typecast"`
}

// handleAirtableUpsert serves Airtable's "Update multiple records":
// records with an id are updated; with performUpsert, records are matched
// on fieldsToMergeOn, updated when found and created otherwise.
func (s *Server) handleAirtableUpsert(w http.ResponseWriter, r *http.Request, body []byte) int {
	var req airtableWrite
	if err := json.Unmarshal(body, &req); err != nil {
		return airtableFail(w, http.StatusUnprocessableEntity, "INVALID_REQUEST_UNKNOWN", "Invalid request: parameter validation failed. Check your request data.")
	}
	if len(req.Records) == 0 || len(req.Records) > airtableMaxRecords {
		return airtableFail(w, http.StatusUnprocessableEntity, "INVALID_RECORDS", fmt.Sprintf("You must provide an array of up to %d record objects, each with an \"id\" or \"fields\" property.", airtableMaxRecords))
	}
	if req.PerformUpsert != nil && len(req.PerformUpsert.FieldsToMergeOn) == 0 {
		return airtableFail(w, http.StatusUnprocessableEntity, "INVALID_REQUEST_UNKNOWN", "performUpsert.fieldsToMergeOn must name at least one field")
	}
	key := r.PathValue("base") + "/" + r.PathValue("table")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := struct {
		Records        []AirtableRecord `json:"records"`
		CreatedRecords []string         `json:"createdRecords,omitempty"`
		UpdatedRecords []string         `json:"updatedRecords,omitempty"`
	}{}
	for _, in := range req.Records {
		rec := s.findAirtableRecord(key, in.ID, req.PerformUpsert, in.Fields)
		switch {
		case rec == nil && (in.ID != "" || req.PerformUpsert == nil):
			return airtableFail(w, http.StatusNotFound, "NOT_FOUND", "Could not find what you are looking for")
		case rec == nil:
			s.nextID++
			rec = &AirtableRecord{ID: fmt.Sprintf("rec%014d", s.nextID), CreatedTime: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), Fields: map[string]json.RawMessage{}}
			s.tables[key] = append(s.tables[key], rec)
			out.CreatedRecords = append(out.CreatedRecords, rec.ID)
		default:
			out.UpdatedRecords = append(out.UpdatedRecords, rec.ID)
		}
		for k, v := range in.Fields {
			rec.Fields[k] = v
		}
		out.Records = append(out.Records, copyRecord(rec))
	}
	writeJSON(w, http.StatusOK, out)
	return http.StatusOK
}

// findAirtableRecord finds the record to update, by id or by the merge
// fields. The caller holds s.mu.
func (s *Server) findAirtableRecord(key, id string, upsert *struct {
	FieldsToMergeOn []string `json:"fieldsToMergeOn"`
}, fields map[string]json.RawMessage) *AirtableRecord {
	for _, rec := range s.tables[key] {
		if id != "" {
			if rec.ID == id {
				return rec
			}
			continue
		}
		if upsert != nil && mergeMatch(rec.Fields, fields, upsert.FieldsToMergeOn) {
			return rec
		}
	}
	return nil
}

// mergeMatch reports whether two records agree on every merge field.
func mergeMatch(a, b map[string]json.RawMessage, on []string) bool {
	for _, f := range on {
		va, oka := a[f]
		vb, okb := b[f]
		if !oka || !okb || !bytes.Equal(compactJSON(va), compactJSON(vb)) {
			return false
		}
	}
	return true
}

func compactJSON(v json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// handleAirtableList serves "List records" (one page holding every record).
func (s *Server) handleAirtableList(w http.ResponseWriter, r *http.Request, _ []byte) int {
	recs := s.AirtableRecords(r.PathValue("base"), r.PathValue("table"))
	if recs == nil {
		recs = []AirtableRecord{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": recs})
	return http.StatusOK
}
