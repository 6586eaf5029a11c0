package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/secrets"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// Email is the demo user's address.
const Email = "demo@finsync.dev"

// Demo destinations: a simulated Airtable table and a simulated Google
// Sheet, following every manual account of the demo user.
const (
	demoAirtableBase = "appFinsyncDemo"
	demoSheetID      = "finsync-demo"
)

// seeded is what seed made.
type seeded struct {
	UserID      uuid.UUID
	Key         string
	Connections []uuid.UUID
	Jobs        map[uuid.UUID]int64
	// Asked is when the demo syncs were enqueued.
	Asked time.Time
	// MetricsURL serves the process's metrics, API's and worker's (empty:
	// none).
	MetricsURL string
}

// seed creates (once) the demo user, a manual account and one simulator
// connection per provider of reg, enqueues their syncs, and issues a fresh
// API key on every run.
func seed(ctx context.Context, st *storage.Store, box *secrets.Box, reg *providers.Registry, simRoot string) (seeded, error) {
	d := seeded{Jobs: map[uuid.UUID]int64{}}
	u, err := st.CreateUser(ctx, Email, domain.PlanPro, true)
	if errors.Is(err, storage.ErrConflict) {
		u, err = st.GetUserByEmail(ctx, Email)
	} else if err == nil {
		bal := domain.MustMoney("250.00")
		_, err = st.CreateManualAccount(ctx, u.ID, uuid.Nil, storage.ManualAccount{
			Name: "Cash wallet", Type: "depository", Subtype: "cash", Currency: "USD", CurrentBalance: &bal,
		})
	}
	if err != nil {
		return d, fmt.Errorf("seed demo user: %w", err)
	}
	d.UserID = u.ID
	if err := seedConnections(ctx, st, box, reg, simRoot, &d); err != nil {
		return d, err
	}
	if err := seedDestinations(ctx, st, box, simRoot, d.UserID); err != nil {
		return d, fmt.Errorf("seed demo destinations: %w", err)
	}
	ic, err := st.IssueCredential(ctx, storage.NewCredential{UserID: u.ID, Kind: storage.CredentialAPIKey, Name: "demo"})
	if err != nil {
		return d, fmt.Errorf("seed demo key: %w", err)
	}
	d.Key = ic.Secret
	return d, nil
}

// seedConnections makes sure the demo user has one connection per
// provider, pointed at this run's simulator, and enqueues their syncs.
func seedConnections(ctx context.Context, st *storage.Store, box *secrets.Box, reg *providers.Registry, simRoot string, d *seeded) error {
	existing, err := st.ListConnectionsAnyUser(ctx, &d.UserID)
	if err != nil {
		return err
	}
	have := map[string]uuid.UUID{}
	for _, c := range existing {
		have[c.Provider] = c.ID
	}
	if err := seedSettings(ctx, st, box, reg); err != nil {
		return err
	}
	for _, p := range reg.Descriptions() {
		p := p.Name
		id, ok := have[p]
		if !ok {
			sealed, err := box.Seal(allsim.OwnCredentials(p, "demo-"+p))
			if err != nil {
				return err
			}
			c, err := st.CreateConnection(ctx, storage.NewConnection{UserID: d.UserID, Provider: p, BaseURL: allsim.BaseURL(p, simRoot), SealedCredentials: sealed})
			if err != nil {
				return err
			}
			id = c.ID
		} else if err := refreshConnection(ctx, st, box, id, p, simRoot); err != nil {
			return err
		}
		d.Connections = append(d.Connections, id)
	}
	client, err := worker.NewInsertClient(st)
	if err != nil {
		return err
	}
	d.Asked = time.Now()
	d.Jobs, err = linking.EnqueueSyncs(ctx, client, d.Connections)
	return err
}

// seedSettings stores, sealed with this checkout's demo key, the
// provider-level settings the simulator accepts for every provider that
// has them, so that the demo connections carry only their own
// credentials, as an operator's would.
func seedSettings(ctx context.Context, st *storage.Store, box *secrets.Box, reg *providers.Registry) error {
	for _, d := range reg.Descriptions() {
		settings := allsim.Settings(d.Name)
		if settings == nil {
			continue
		}
		sealed, err := box.Seal(settings)
		if err != nil {
			return err
		}
		if err := st.SetProviderSettings(ctx, d.Name, sealed); err != nil {
			return fmt.Errorf("seed demo %s settings: %w", d.Name, err)
		}
	}
	return nil
}

// refreshConnection points an existing demo connection at this run's
// simulator and seals its (deterministic) credentials with this checkout's
// demo key, so a new clone against the same database can still sync it. It
// is a re-link (storage.ReauthConnection): this run's simulator starts
// again at its first day, so the cursor and adapter state of an earlier
// run, which may have advanced its simulator, are dropped and the next
// sync reads the link from its start, matching what is stored.
func refreshConnection(ctx context.Context, st *storage.Store, box *secrets.Box, id uuid.UUID, provider, simRoot string) error {
	sealed, err := box.Seal(allsim.OwnCredentials(provider, "demo-"+provider))
	if err != nil {
		return err
	}
	if _, err := st.ReauthConnection(ctx, id, sealed, allsim.BaseURL(provider, simRoot)); err != nil {
		return fmt.Errorf("refresh demo connection: %w", err)
	}
	return nil
}

// seedDestinations makes sure the demo user has an Airtable and a Google
// Sheets destination pointed at this run's simulator.
func seedDestinations(ctx context.Context, st *storage.Store, box *secrets.Box, simRoot string, userID uuid.UUID) error {
	existing, err := st.ListDestinations(ctx, userID)
	if err != nil {
		return err
	}
	configs := map[string]string{
		destinations.KindAirtable: fmt.Sprintf(`{"baseUrl":%q,"baseId":%q,"table":"Accounts","token":"patDemoToken"}`, simRoot, demoAirtableBase),
		destinations.KindGoogleSheets: fmt.Sprintf(`{"baseUrl":%q,"spreadsheetId":%q,"sheet":"Accounts","refreshToken":"1//demo","clientId":"finsync-demo","clientSecret":"demo-secret","tokenUrl":%q}`,
			simRoot, demoSheetID, simRoot+"/token"),
	}
	have := map[string]uuid.UUID{}
	for _, d := range existing {
		have[d.Kind] = d.ID
	}
	for kind, cfg := range configs {
		public, secret, err := destinations.SplitConfig(kind, json.RawMessage(cfg))
		if err != nil {
			return err
		}
		sealed, err := box.Seal(secret)
		if err != nil {
			return err
		}
		if id, ok := have[kind]; ok {
			// Point it at this run's simulator, sealed with this checkout's demo key.
			if err := st.ReconfigureDestination(ctx, id, public, sealed); err != nil {
				return fmt.Errorf("refresh demo destination: %w", err)
			}
			continue
		}
		d, err := st.CreateDestination(ctx, storage.NewDestination{UserID: userID, Kind: kind, Name: "demo " + kind, Config: public, SealedSecret: sealed})
		if err != nil {
			return err
		}
		if err := st.SetAllAccounts(ctx, d.ID, true); err != nil {
			return err
		}
	}
	return nil
}
