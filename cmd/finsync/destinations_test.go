package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

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
