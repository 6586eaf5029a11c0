package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/storage/storagetest"
)

func TestDestinationCommands(t *testing.T) {
	t.Setenv("FINSYNC_ENCRYPTION_KEY", strings.Repeat("0b", 32))
	pool, dbURL := storagetest.NewDB(t)
	fx := storagetest.NewFixtures(t, pool)
	user := fx.User(domain.PlanPro, true).ID
	acct, err := storage.New(pool).CreateManualAccount(context.Background(), user, uuid.Nil, storage.ManualAccount{Name: "Cash", Type: "cash", Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}

	d := run(t, dbURL, "destinations", "add", "--user", user.String(), "--kind", "webhook", "--name", "crm",
		"--config", `{"url":"https://hooks.example.com/finsync","secret":"s3cret"}`)
	id := d["id"].(string)
	cfg := d["config"].(map[string]any)
	if d["kind"] != "webhook" || cfg["url"] != "https://hooks.example.com/finsync" || cfg["secret"] != nil {
		t.Fatalf("added %v (the secret must not be printed)", d)
	}
	var sealed []byte
	if err := pool.QueryRow(context.Background(), `SELECT sealed_secret FROM destinations WHERE id = $1`, id).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("s3cret")) {
		t.Fatal("the secret is stored in clear")
	}
	run(t, dbURL, "destinations", "link", id, "--account", acct.ID.String())
	list := run(t, dbURL, "destinations", "list", "--user", user.String())
	ds := list["destinations"].([]any)
	if len(ds) != 1 || len(ds[0].(map[string]any)["accountIds"].([]any)) != 1 {
		t.Fatalf("list %v", list)
	}
	run(t, dbURL, "destinations", "unlink", id, "--account", acct.ID.String())
	list = run(t, dbURL, "destinations", "list", "--user", user.String())
	if n := len(list["destinations"].([]any)[0].(map[string]any)["accountIds"].([]any)); n != 0 {
		t.Fatalf("after unlink: %v", list)
	}

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"unknown kind", []string{"add", "--user", user.String(), "--kind", "ftp", "--config", `{}`}},
		{"webhook without secret", []string{"add", "--user", user.String(), "--kind", "webhook", "--config", `{"url":"https://x.example"}`}},
		{"airtable without base", []string{"add", "--user", user.String(), "--kind", "airtable", "--config", `{"table":"A","token":"pat"}`}},
		{"unknown field", []string{"add", "--user", user.String(), "--kind", "webhook", "--config", `{"url":"https://x.example","secret":"s","extra":1}`}},
		{"unlink twice", []string{"unlink", id, "--account", acct.ID.String()}},
		{"link and all", []string{"link", id, "--account", acct.ID.String(), "--all"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRoot(&out, &errOut)
			root.SetArgs(append([]string{"--database-url", dbURL, "destinations"}, tt.args...))
			if err := root.ExecuteContext(context.Background()); err == nil {
				t.Fatalf("accepted: %s", out.String())
			}
		})
	}
}

// TestDevPropagatesToDemoDestinations runs `finsync dev`, creates a manual
// account through the API, and finds it in the simulated Airtable table and
// Google Sheet.
func TestDevPropagatesToDemoDestinations(t *testing.T) {
	_, dbURL := storagetest.NewDB(t)
	t.Setenv("DATABASE_URL", dbURL)
	var out, errOut syncBuffer
	root := newRoot(&out, &errOut)
	root.SetArgs([]string{"--json", "dev", "--addr", freeAddr(t), "--sim-addr", freeAddr(t), "--metrics-addr", freeAddr(t), "--dir", t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("dev did not stop")
		}
	}()
	var demo struct {
		BaseURL    string `json:"baseUrl"`
		SimURL     string `json:"simulatorUrl"`
		Key        string `json:"key"`
		MetricsURL string `json:"metricsUrl"`
	}
	deadline := time.Now().Add(90 * time.Second)
	for json.Unmarshal([]byte(out.String()), &demo) != nil || demo.Key == "" {
		if time.Now().After(deadline) {
			t.Fatalf("dev printed no demo within 90s; stderr:\n%s", errOut.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, demo.BaseURL+"/v2/accounts", strings.NewReader(`{"name":"Jar","type":"cash","currency":"USD","currentBalance":12.5}`))
	req.Header.Set("Authorization", "Bearer "+demo.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Account struct {
			ID string `json:"id"`
		} `json:"account"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if created.Account.ID == "" {
		t.Fatalf("create account: %d", resp.StatusCode)
	}
	for _, u := range []string{"/v0/appFinsyncDemo/Accounts", "/v4/spreadsheets/finsync-demo/values/Accounts"} {
		deadline := time.Now().Add(20 * time.Second)
		for !simHolds(t, demo.SimURL+u, created.Account.ID) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never received account %s", u, created.Account.ID)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The one process serves the worker's metrics beside the API's. The
	// delivery job records its lag after the destination has the row, and
	// the jobs count is cached for seconds: scrape until both show.
	want := []string{
		`finsync_sync_duration_seconds_count{outcome="ok",provider="plaid"}`,
		`finsync_destination_delivery_lag_seconds{kind="airtable"}`,
		`finsync_river_jobs{kind="deliver_destination",state="completed"}`,
		`finsync_http_request_duration_seconds_count{method="POST",route="/v2/accounts",status="201"}`,
	}
	var m map[string]float64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		m = scrape(t, demo.MetricsURL)
		missing := 0
		for _, series := range want {
			if _, ok := m[series]; !ok {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, series := range want {
		if _, ok := m[series]; !ok {
			t.Errorf("dev's /metrics has no %s", series)
		}
	}
	if n := m[`finsync_sync_duration_seconds_count{outcome="ok",provider="plaid"}`]; n < 1 {
		t.Errorf("%v successful plaid syncs counted, want the demo's", n)
	}
}

// scrape reads a /metrics page into its samples, by series.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d %v", url, resp.StatusCode, err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape %s: %q: %v", url, line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// simHolds reports whether a simulated destination's listing mentions s.
func simHolds(t *testing.T, url, s string) bool {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer demo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return bytes.Contains(body, []byte(s))
}
