package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// TestProviderSettingsSetOnce: with Enable Banking's application set once
// for the provider (sealed), a connection that stores only its session
// syncs; one that carries the whole form still does; settings sealed with
// another key stop the connection (no retries) under their own code.
func TestProviderSettingsSetOnce(t *testing.T) {
	e := newSyncEnv(t)
	e.syncer.Now = e.sim.WallNow
	ctx := context.Background()
	sealed, err := e.box.Seal(allsim.Settings("enablebanking"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetProviderSettings(ctx, "enablebanking", sealed); err != nil {
		t.Fatal(err)
	}
	own := allsim.OwnCredentials("enablebanking", "settings")
	if strings.Contains(string(own), "PRIVATE KEY") || !strings.Contains(string(own), "session_id") {
		t.Fatalf("own credentials %s", own)
	}
	ownSealed, err := e.box.Seal(own)
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.st.CreateConnection(ctx, storage.NewConnection{UserID: e.user.ID, Provider: "enablebanking",
		BaseURL: allsim.BaseURL("enablebanking", e.root), SealedCredentials: ownSealed})
	if err != nil {
		t.Fatal(err)
	}
	e.mustSync(c)
	if n := e.count(`SELECT count(*) FROM accounts WHERE bank_connection_id = $1`, c.ID); n != 3 {
		t.Fatalf("%d accounts stored with the session alone, want 3", n)
	}
	e.mustSync(e.connect("enablebanking", "whole-form"))

	other, err := secrets.FromHex(strings.Repeat("2e", 32))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Seal(allsim.Settings("enablebanking"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetProviderSettings(ctx, "enablebanking", foreign); err != nil {
		t.Fatal(err)
	}
	var cancelErr *river.JobCancelError
	if err := e.sync(c); !errors.As(err, &cancelErr) {
		t.Fatalf("unreadable settings: want a cancelled job, got %v", err)
	}
	got, _ := e.st.GetConnectionAnyUser(ctx, c.ID)
	if got.Status != domain.ConnectionError || got.LastProviderErrorCode == nil || *got.LastProviderErrorCode != worker.CodeSettingsUnreadable {
		t.Fatalf("connection: %+v", got)
	}
	if got.LastProviderErrorMessage != nil && strings.Contains(*got.LastProviderErrorMessage, "PRIVATE") {
		t.Fatal("the settings show in the connection's error")
	}
}
