package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// fakeSim is a minimal provider: one endpoint answering the simulated day.
type fakeSim struct{}

func (fakeSim) Name() string          { return "fake" }
func (fakeSim) Prefix() string        { return "/fake/" }
func (fakeSim) ExtraFaults() []string { return []string{sim.FaultInstitutionDown} }
func (fakeSim) BaseURL(root string) string {
	return root + "/fake"
}
func (fakeSim) Credentials(name string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"key":%q}`, name))
}
func (fakeSim) CredentialKey(c map[string]string) string { return c["key"] }
func (fakeSim) WriteFault(w http.ResponseWriter, _ *http.Request, mode string) {
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"fake":"`+mode+`"}`)
}
func (fakeSim) Route(h *sim.Simulator, mux *http.ServeMux) {
	mux.HandleFunc("GET /fake/day", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"day":%d,"padding":"%0100d"}`, h.Clock(), 0)
	})
}

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostServesAGivenProvider checks that the host mounts the provider it
// is given, moves its clock, applies faults through the provider's own
// error bodies, and refuses providers and modes it does not know.
func TestHostServesAGivenProvider(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, fakeSim{}, fakeSim{})
	if code, body := get(t, srv.URL+"/fake/day"); code != http.StatusOK || body[:8] != `{"day":0` {
		t.Fatalf("day: %d %s", code, body)
	}
	if err := s.Advance(2); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, srv.URL+"/fake/day"); body[:8] != `{"day":2` {
		t.Fatalf("after advance: %s", body)
	}
	if err := s.SetFault(sim.Fault{Provider: "fake", Mode: sim.FaultOutage}); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, srv.URL+"/fake/day"); code != http.StatusServiceUnavailable || body != `{"fake":"outage"}` {
		t.Fatalf("outage: %d %s", code, body)
	}
	if err := s.SetFault(sim.Fault{Provider: "fake", Mode: sim.FaultMalformed}); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, srv.URL+"/fake/day"); code != http.StatusOK || json.Valid([]byte(body)) || body == "" {
		t.Fatalf("malformed: %d %s", code, body)
	}
	if err := s.SetFault(sim.Fault{Provider: "fake", Mode: sim.FaultInstitutionDown}); err != nil {
		t.Fatalf("extra fault refused: %v", err)
	}
	if !s.TakeFault("fake", sim.FaultInstitutionDown) || s.TakeFault("fake", sim.FaultInstitutionDown) {
		t.Fatal("TakeFault did not take the fault exactly once")
	}
	if err := s.SetFault(sim.Fault{Provider: "fake", Mode: sim.FaultMutation}); err == nil {
		t.Fatal("unsupported mode accepted")
	}
	if err := s.SetFault(sim.Fault{Provider: "other", Mode: sim.FaultOutage}); err == nil {
		t.Fatal("unknown provider accepted")
	}
	if err := s.SetConnection(sim.ConnectionSettings{Provider: "other", Credential: "x"}); err == nil {
		t.Fatal("connection of an unknown provider accepted")
	}
	if code, _ := get(t, srv.URL+"/elsewhere"); code != http.StatusNotFound {
		t.Fatalf("unclaimed path: %d", code)
	}
}

func TestProvidersLookUpByName(t *testing.T) {
	ps := sim.Providers{fakeSim{}}
	if key, err := ps.CredentialKey("fake", ps.Credentials("fake", "n")); err != nil || key != "n" {
		t.Fatalf("key %q, %v", key, err)
	}
	if _, err := ps.CredentialKey("other", nil); err == nil {
		t.Fatal("key of an unknown provider")
	}
	if got := ps.BaseURL("fake", "http://h/"); got != "http://h/fake" {
		t.Fatalf("base URL %q", got)
	}
	if got := ps.BaseURL("other", "http://h/"); got != "http://h" {
		t.Fatalf("base URL of an unknown provider %q", got)
	}
}
