package allsim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim"
	"github.com/finsync/finsync/providers/sim/simtest"
)

// providerProbe is one authenticated request per provider used to observe
// faults.
type providerProbe struct {
	provider string
	method   string
	path     string
	body     any
	hdr      map[string]string
}

// probes builds one probe per provider with valid credentials.
func probes(t *testing.T, srvURL string) []providerProbe {
	t.Helper()
	p := creds(t, "plaid", "faults")
	g := creds(t, "gocardless", "faults")
	access, _ := gcLogin(t, srvURL, g)
	var req gcRequisitionBody
	simtest.DoJSON(t, http.MethodGet, srvURL+"/api/v2/requisitions/"+g["requisition_id"]+"/", nil, map[string]string{"Authorization": "Bearer " + access}, &req)
	st := creds(t, "stripe", "faults")
	m := creds(t, "mercury", "faults")
	return []providerProbe{
		{"plaid", http.MethodPost, "/accounts/get", map[string]string{"client_id": p["client_id"], "secret": p["secret"], "access_token": p["access_token"]}, nil},
		{"gocardless", http.MethodGet, "/api/v2/accounts/" + req.Accounts[0] + "/balances/", nil, map[string]string{"Authorization": "Bearer " + access}},
		{"stripe", http.MethodGet, "/v1/balance", nil, map[string]string{"Authorization": "Bearer " + st["api_key"]}},
		{"mercury", http.MethodGet, "/api/v1/accounts", nil, map[string]string{"Authorization": "Bearer " + m["token"]}},
	}
}

// send performs a probe and returns the status, headers and raw body.
func (p providerProbe) send(t *testing.T, srvURL string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if p.body != nil {
		b, _ := json.Marshal(p.body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(p.method, srvURL+p.path, rd)
	for k, v := range p.hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestFaults(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{DailyQuota: -1}, allsim.Providers()...)
	tests := []struct {
		mode   string
		status map[string]int
		check  func(t *testing.T, provider string, h http.Header, body []byte)
	}{
		{sim.FaultOutage, map[string]int{"plaid": 500, "gocardless": 503, "stripe": 500, "mercury": 503}, func(t *testing.T, p string, _ http.Header, b []byte) {
			if !json.Valid(b) {
				t.Fatalf("%s: outage body is not JSON: %s", p, b)
			}
		}},
		{sim.FaultRateLimit, map[string]int{"plaid": 429, "gocardless": 429, "stripe": 429, "mercury": 429}, func(t *testing.T, p string, h http.Header, b []byte) {
			switch p {
			case "gocardless":
				if h.Get("HTTP_X_RATELIMIT_RESET") == "" {
					t.Fatal("gocardless 429 without rate-limit headers")
				}
			case "stripe", "mercury":
				if h.Get("Retry-After") == "" {
					t.Fatalf("%s 429 without Retry-After", p)
				}
			case "plaid":
				if !strings.Contains(string(b), `"RATE_LIMIT_EXCEEDED"`) {
					t.Fatalf("plaid 429 body %s", b)
				}
			}
		}},
		{sim.FaultLoginRequired, map[string]int{"plaid": 400, "gocardless": 401, "stripe": 401, "mercury": 401}, func(t *testing.T, p string, _ http.Header, b []byte) {
			want := map[string]string{"plaid": "ITEM_LOGIN_REQUIRED", "gocardless": "AccessExpiredError", "stripe": "api_key_expired", "mercury": "errors"}[p]
			if !strings.Contains(string(b), want) {
				t.Fatalf("%s: body %s lacks %s", p, b, want)
			}
		}},
		{sim.FaultMalformed, map[string]int{"plaid": 200, "gocardless": 200, "stripe": 200, "mercury": 200}, func(t *testing.T, p string, _ http.Header, b []byte) {
			if json.Valid(b) || len(b) == 0 {
				t.Fatalf("%s: malformed body is valid JSON: %s", p, b)
			}
		}},
	}
	ps := probes(t, srv.URL)
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			for _, p := range ps {
				if err := s.SetFault(sim.Fault{Provider: p.provider, Mode: tt.mode}); err != nil {
					t.Fatal(err)
				}
				status, h, body := p.send(t, srv.URL)
				if status != tt.status[p.provider] {
					t.Fatalf("%s: status %d, want %d (%s)", p.provider, status, tt.status[p.provider], body)
				}
				tt.check(t, p.provider, h, body)
				if err := s.SetFault(sim.Fault{Provider: p.provider, Mode: sim.FaultNone}); err != nil {
					t.Fatal(err)
				}
				if status, _, body := p.send(t, srv.URL); status != http.StatusOK {
					t.Fatalf("%s after clearing: %d %s", p.provider, status, body)
				}
			}
		})
	}
}

func TestFaultLatencyAndInstitution(t *testing.T) {
	s, srv := simtest.New(t, sim.Options{}, allsim.Providers()...)
	ps := probes(t, srv.URL)
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/_sim/faults", sim.Fault{Provider: "stripe", Mode: sim.FaultLatency, LatencyMs: 120}, nil, nil)
	start := time.Now()
	if status, _, _ := ps[2].send(t, srv.URL); status != http.StatusOK || time.Since(start) < 120*time.Millisecond {
		t.Fatalf("latency: status %d after %v", status, time.Since(start))
	}
	p := creds(t, "plaid", "faults")
	var item struct {
		Item struct {
			InstitutionID string `json:"institution_id"`
		} `json:"item"`
	}
	simtest.DoJSON(t, http.MethodPost, srv.URL+"/item/get", map[string]string{"client_id": p["client_id"], "secret": p["secret"], "access_token": p["access_token"]}, nil, &item)
	other := "ins_0"
	if err := s.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultInstitutionDown, InstitutionID: other}); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := ps[0].send(t, srv.URL); status != http.StatusOK {
		t.Fatalf("another institution's outage affected this item: %d", status)
	}
	if err := s.SetFault(sim.Fault{Provider: "plaid", Mode: sim.FaultInstitutionDown, InstitutionID: item.Item.InstitutionID}); err != nil {
		t.Fatal(err)
	}
	if status, _, body := ps[0].send(t, srv.URL); status != http.StatusBadRequest || !strings.Contains(string(body), "INSTITUTION_DOWN") {
		t.Fatalf("institution down: %d %s", status, body)
	}
	var e map[string]string
	if resp := simtest.DoJSON(t, http.MethodPost, srv.URL+"/_sim/faults", sim.Fault{Provider: "stripe", Mode: sim.FaultMutation}, nil, &e); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("mutation on stripe accepted: %d", resp.StatusCode)
	}
	var st sim.State
	simtest.DoJSON(t, http.MethodGet, srv.URL+"/_sim/state", nil, nil, &st)
	if st.Faults["plaid"].Mode != sim.FaultInstitutionDown || st.Today != "2026-03-10" {
		t.Fatalf("state = %+v", st)
	}
}
