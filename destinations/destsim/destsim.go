// Package destsim simulates the services finsync delivers manual-account
// changes to (Airtable, Google Sheets and Google's OAuth token endpoint)
// over real HTTP, for tests and the demo; see Server.
package destsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Services simulated by a Server, as named by SetFault, Requests and
// DestinationRequest.Service.
const (
	Airtable     = "airtable"
	GoogleSheets = "google_sheets"
	// GoogleOAuth is Google's OAuth 2.0 token endpoint (POST /token).
	GoogleOAuth = "google_oauth"
)

// Fault modes accepted by SetFault and POST /_sim/destinations/faults;
// they are spelt as the provider simulator's.
const (
	FaultNone      = "none"
	FaultOutage    = "outage"
	FaultRateLimit = "rate_limit"
)

// simTokenPrefix marks the access tokens the simulated token endpoint
// issues; the Sheets endpoints refuse such a token once it was revoked
// (ExpireGoogleTokens) and accept any other bearer token.
const simTokenPrefix = "ya29.sim-"

// DestinationRequest is one request a destination endpoint received.
type DestinationRequest struct {
	Service string          `json:"service"`
	Method  string          `json:"method"`
	Path    string          `json:"path"`
	Query   string          `json:"query"`
	Body    json.RawMessage `json:"body,omitempty"`
	// Status is the HTTP status the simulator answered.
	Status int       `json:"status"`
	At     time.Time `json:"at"`
}

// AirtableRecord is a record of a simulated Airtable table.
type AirtableRecord struct {
	ID          string                     `json:"id"`
	CreatedTime string                     `json:"createdTime"`
	Fields      map[string]json.RawMessage `json:"fields"`
}

// Server simulates the services finsync delivers manual-account changes
// to, at their real paths: Airtable's REST API (/v0/{base}/{table}), the
// Google Sheets API v4 (/v4/spreadsheets/...) and Google's OAuth 2.0 token
// endpoint (POST /token), with its own control endpoints
// (POST /_sim/destinations/faults, GET /_sim/destinations/requests). It
// keeps every table, sheet and request in memory. It is safe for
// concurrent use; the provider simulator mounts it beside the providers
// (see Paths), where provider faults leave it alone.
type Server struct {
	mux *http.ServeMux

	mu       sync.Mutex
	faults   map[string]string
	requests []DestinationRequest
	tables   map[string][]*AirtableRecord
	sheets   map[string][][]json.RawMessage
	nextID   int
	tokens   map[string]bool
}

// New returns a Server with no tables, sheets or faults.
func New() *Server {
	s := &Server{faults: map[string]string{}, tables: map[string][]*AirtableRecord{}, sheets: map[string][][]json.RawMessage{}, tokens: map[string]bool{}}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("PATCH /v0/{base}/{table}", s.destHandler(Airtable, s.handleAirtableUpsert))
	s.mux.HandleFunc("GET /v0/{base}/{table}", s.destHandler(Airtable, s.handleAirtableList))
	s.mux.HandleFunc("GET /v4/spreadsheets/{id}/values/{range}", s.destHandler(GoogleSheets, s.handleSheetsGet))
	s.mux.HandleFunc("PUT /v4/spreadsheets/{id}/values/{range}", s.destHandler(GoogleSheets, s.handleSheetsUpdate))
	s.mux.HandleFunc("POST /v4/spreadsheets/{id}/values/{range}", s.destHandler(GoogleSheets, s.handleSheetsAppend))
	s.mux.HandleFunc("POST /token", s.handleGoogleToken)
	s.mux.HandleFunc("POST /_sim/destinations/faults", s.handleDestinationFaults)
	s.mux.HandleFunc("GET /_sim/destinations/requests", s.handleDestinationRequests)
	return s
}

// ServeHTTP serves the simulated services and their control endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Paths lists the paths the Server answers, for a host that mounts it: a
// path ending in "/" stands for every path below it, any other for itself.
func (s *Server) Paths() []string {
	return []string{"/v0/", "/v4/spreadsheets/", "/token", "/_sim/destinations/"}
}

// SetFault sets the failure mode of a destination service (Airtable or
// GoogleSheets): FaultOutage answers 503, FaultRateLimit 429, FaultNone
// clears it.
func (s *Server) SetFault(service, mode string) error {
	if service != Airtable && service != GoogleSheets {
		return fmt.Errorf("set destination fault: unknown service %q", service)
	}
	switch mode {
	case FaultNone, "", FaultOutage, FaultRateLimit:
	default:
		return fmt.Errorf("set destination fault: unknown mode %q", mode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mode == FaultNone || mode == "" {
		delete(s.faults, service)
	} else {
		s.faults[service] = mode
	}
	return nil
}

// Requests returns the requests received by a destination service (every
// service when empty), oldest first.
func (s *Server) Requests(service string) []DestinationRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []DestinationRequest
	for _, r := range s.requests {
		if service == "" || r.Service == service {
			out = append(out, r)
		}
	}
	return out
}

// AirtableRecords returns a copy of a simulated table's records, in
// creation order.
func (s *Server) AirtableRecords(baseID, table string) []AirtableRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.tables[baseID+"/"+table]
	out := make([]AirtableRecord, len(recs))
	for i, r := range recs {
		out[i] = copyRecord(r)
	}
	return out
}

// SheetValues returns a copy of a simulated sheet's rows.
func (s *Server) SheetValues(spreadsheetID, sheet string) [][]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.sheets[spreadsheetID+"/"+sheet]
	out := make([][]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = append([]json.RawMessage(nil), r...)
	}
	return out
}

func copyRecord(r *AirtableRecord) AirtableRecord {
	c := AirtableRecord{ID: r.ID, CreatedTime: r.CreatedTime, Fields: make(map[string]json.RawMessage, len(r.Fields))}
	for k, v := range r.Fields {
		c.Fields[k] = v
	}
	return c
}

// destHandler wraps a destination endpoint: it reads the body, applies the
// service's fault and bearer-token check, serves, and records the request
// with the status answered.
func (s *Server) destHandler(service string, serve func(w http.ResponseWriter, r *http.Request, body []byte) int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		status := s.destGate(w, r, service)
		if status == 0 {
			status = serve(w, r, body)
		}
		rec := DestinationRequest{Service: service, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: status, At: time.Now().UTC()}
		if json.Valid(body) {
			rec.Body = body
		}
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
	}
}

// destGate answers an injected fault or a missing token, returning the
// status written (0 to serve the request).
func (s *Server) destGate(w http.ResponseWriter, r *http.Request, service string) int {
	s.mu.Lock()
	mode := s.faults[service]
	s.mu.Unlock()
	token, isBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	authed := isBearer && strings.TrimSpace(token) != ""
	if strings.HasPrefix(token, simTokenPrefix) {
		s.mu.Lock()
		authed = s.tokens[token]
		s.mu.Unlock()
	}
	switch {
	case mode == FaultOutage && service == Airtable:
		return airtableFail(w, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "The service is temporarily unavailable. Please retry shortly.")
	case mode == FaultOutage:
		return googleFail(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The service is currently unavailable.")
	case mode == FaultRateLimit && service == Airtable:
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"errors": []map[string]string{{"error": "RATE_LIMIT_REACHED", "message": "Rate limit exceeded. Please try again later"}}})
		return http.StatusTooManyRequests
	case mode == FaultRateLimit:
		return googleFail(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per minute per user'.")
	case !authed && service == Airtable:
		return airtableFail(w, http.StatusUnauthorized, "AUTHENTICATION_REQUIRED", "Authentication required")
	case !authed:
		return googleFail(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request is missing required authentication credential. Expected OAuth 2 access token.")
	}
	return 0
}

// airtableFail writes Airtable's error body {"error": {"type", "message"}}.
func airtableFail(w http.ResponseWriter, status int, typ, msg string) int {
	writeJSON(w, status, map[string]any{"error": map[string]string{"type": typ, "message": msg}})
	return status
}

// googleFail writes Google's error body {"error": {"code", "message", "status"}}.
func googleFail(w http.ResponseWriter, status int, code, msg string) int {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
	return status
}

// ExpireGoogleTokens revokes every access token the simulated token
// endpoint issued, as if an hour had passed.
func (s *Server) ExpireGoogleTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
}

// handleGoogleToken serves Google's OAuth 2.0 token endpoint for the
// refresh_token grant: a refresh token starting with "revoked" is refused
// with invalid_grant.
func (s *Server) handleGoogleToken(w http.ResponseWriter, r *http.Request) {
	status := s.googleToken(w, r)
	s.mu.Lock()
	s.requests = append(s.requests, DestinationRequest{Service: GoogleOAuth, Method: r.Method, Path: r.URL.Path, Status: status, At: time.Now().UTC()})
	s.mu.Unlock()
}

func (s *Server) googleToken(w http.ResponseWriter, r *http.Request) int {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "refresh_token" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Invalid grant_type: " + r.PostForm.Get("grant_type")})
		return http.StatusBadRequest
	}
	if r.PostForm.Get("client_id") == "" || r.PostForm.Get("client_secret") == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "The OAuth client was not found."})
		return http.StatusUnauthorized
	}
	rt := r.PostForm.Get("refresh_token")
	if rt == "" || strings.HasPrefix(rt, "revoked") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
		return http.StatusBadRequest
	}
	s.mu.Lock()
	s.nextID++
	tok := fmt.Sprintf("%s%d", simTokenPrefix, s.nextID)
	s.tokens[tok] = true
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": 3599,
		"scope": "https://www.googleapis.com/auth/spreadsheets", "token_type": "Bearer"})
	return http.StatusOK
}

// handleDestinationFaults serves POST /_sim/destinations/faults
// {"service": "airtable", "mode": "outage"}.
func (s *Server) handleDestinationFaults(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Service string `json:"service"`
		Mode    string `json:"mode"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeControlError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	if err := s.SetFault(req.Service, req.Mode); err != nil {
		writeControlError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// handleDestinationRequests serves GET /_sim/destinations/requests?service=.
func (s *Server) handleDestinationRequests(w http.ResponseWriter, r *http.Request) {
	reqs := s.Requests(r.URL.Query().Get("service"))
	if reqs == nil {
		reqs = []DestinationRequest{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": reqs})
}

// writeControlError writes a control endpoint's error.
func writeControlError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeJSON encodes v as the JSON response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
