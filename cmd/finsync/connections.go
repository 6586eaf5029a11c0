package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/linking/credinput"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// credentialHelp documents --credentials and --interval from what the
// adapters declare: each provider's credential keys (? marks optional
// ones), and the sync intervals that differ from the default.
func credentialHelp(reg *providers.Registry) (creds, intervals string) {
	var c, iv []string
	for _, d := range reg.Descriptions() {
		keys := make([]string, 0, len(d.Credentials))
		for _, f := range d.ConnectionFields() {
			k := f.Key
			if !f.Required {
				k += "?"
			}
			keys = append(keys, k)
		}
		c = append(c, d.Name+": "+strings.Join(keys, ", "))
		if d.SyncInterval > 0 {
			iv = append(iv, fmt.Sprintf("%s %s", d.Name, shortDuration(d.SyncInterval)))
		}
	}
	h := "time between periodic syncs (default " + shortDuration(worker.DefaultSyncInterval)
	if len(iv) > 0 {
		h += "; " + strings.Join(iv, ", ")
	}
	return strings.Join(c, "; "), h + ")"
}

// shortDuration writes d without trailing zero units (8h, not 8h0m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

func connectionJSON(c domain.BankConnection) map[string]any {
	return map[string]any{
		"id": c.ID, "userId": c.UserID, "provider": c.Provider, "institutionName": c.InstitutionName,
		"status": c.Status, "baseUrl": c.BaseURL, "lastSyncedAt": c.LastSyncedAt, "nextSyncAt": c.NextSyncAt,
		"lastProviderErrorCode": c.LastProviderErrorCode, "reconnectUrl": c.ReconnectURL,
	}
}

// linker is how the CLI puts credentials on connections (package linking,
// shared with the ops console), over st.
func (a *app) linker(st *storage.Store) (*linking.Linker, error) {
	box, err := a.cfg.Box()
	if err != nil {
		return nil, err
	}
	jobs, err := worker.NewInsertClient(st)
	if err != nil {
		return nil, err
	}
	return &linking.Linker{Store: st, Registry: a.reg, Box: box, Jobs: jobs}, nil
}

// simURL is FINSYNC_SIM_URL, or empty.
func (a *app) simURL() string {
	if a.cfg.SimURL == nil {
		return ""
	}
	return a.cfg.SimURL.String()
}

func (a *app) connectionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "connections", Short: "Manage provider connections"}
	var ac credinput.Add
	add := &cobra.Command{
		Use:   "add",
		Short: "Register a provider connection (credentials stored encrypted) and enqueue its first sync",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac.Stdin, ac.Warn = cmd.InOrStdin(), a.errOut
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				l, err := a.linker(st)
				if err != nil {
					return err
				}
				nc, err := ac.Build(cmd.Context(), l, a.simURL())
				if err != nil {
					return err
				}
				c, err := st.CreateConnection(cmd.Context(), nc)
				if err != nil {
					return err
				}
				if _, err := linking.EnqueueSync(cmd.Context(), l.Jobs, c.ID); err != nil {
					return err
				}
				return a.print(connectionJSON(c), fmt.Sprintf("connection %s (%s) added; first sync enqueued", c.ID, c.Provider))
			})
		},
	}
	f := add.Flags()
	f.StringVar(&ac.User, "user", "", "user id (required)")
	creds, intervals := credentialHelp(a.reg)
	f.StringVar(&ac.Provider, "provider", "", credinput.ProviderNames(a.reg)+" (required)")
	linkFlags(add, &ac.Input, creds, "provider API base URL (default: the provider's production URL)")
	f.StringVar(&ac.Institution, "institution", "", "institution name")
	f.DurationVar(&ac.Interval, "interval", 0, intervals)
	_ = add.MarkFlagRequired("user")
	_ = add.MarkFlagRequired("provider")

	var listUser string
	list := &cobra.Command{
		Use:   "list",
		Short: "List connections",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var uid *uuid.UUID
			if listUser != "" {
				id, err := uuid.Parse(listUser)
				if err != nil {
					return fmt.Errorf("--user: %w", err)
				}
				uid = &id
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				cs, err := st.ListConnectionsAnyUser(cmd.Context(), uid)
				if err != nil {
					return err
				}
				return a.printConnections(cs)
			})
		},
	}
	list.Flags().StringVar(&listUser, "user", "", "only this user's connections")
	cmd.AddCommand(add, list, a.reauthCmd(), a.setEnabledCmd("disable", false), a.setEnabledCmd("enable", true))
	return cmd
}

// linkFlags registers the credential flags of in on cmd; creds
// lists each provider's credential keys, baseHelp documents --base-url.
func linkFlags(cmd *cobra.Command, in *credinput.Input, creds, baseHelp string) {
	f := cmd.Flags()
	f.StringVar(&in.Credentials, "credentials", "", "provider credentials as a JSON object with the keys ("+creds+"; ? marks optional ones); "+
		"- reads them from standard input. Given inline, they show in the process list: prefer a file or standard input")
	f.StringVar(&in.CredentialsFile, "credentials-file", "", "read the credentials (the JSON object of --credentials) from this file")
	f.StringVar(&in.BaseURL, "base-url", "", baseHelp)
	f.BoolVar(&in.UseSim, "sim", false, "use credentials the simulator accepts (by the provider's link flow where it has one)")
	f.BoolVar(&in.Check, "check", false, "first fetch the connection's accounts once from the provider; store nothing if that fails")
	f.StringVar(&in.SimURL, "sim-url", "", "the simulator's root URL (default $FINSYNC_SIM_URL)")
	f.StringVar(&in.SimName, "sim-name", "", "names the simulated connection (same name, same data, but a link flow's session is new data each time; NAME"+
		simkit.RelinkSeparator+"N is the same data linked again for the Nth time, under new ids, for the simulators of providers that "+
		"re-issue ids on a re-link: others take it as a new name)")
}

// reauthCmd is `connections reauth ID`: the user linked the bank again
// (a new Plaid Item, a new consent), and the connection takes the new
// credentials.
func (a *app) reauthCmd() *cobra.Command {
	var in credinput.Input
	cmd := &cobra.Command{
		Use:   "reauth ID",
		Short: "Put new credentials on an existing connection (after the user linked the bank again) and sync it now; its id, accounts and transactions stay",
		Long: "Put new credentials on an existing connection, sealed like every credential, and enqueue its sync at once.\n" +
			"The connection keeps its id; the sync matches the accounts and transactions the provider re-issued to the stored ones,\n" +
			"which keep their ids, categories and rule outcomes (docs/relink.md). On its first successful sync the connection is\n" +
			"active again, its error cleared. The credentials must be the connection's provider's.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("connection id: %w", err)
			}
			in.Stdin, in.Warn = cmd.InOrStdin(), a.errOut
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				c, err := in.Reauth(cmd.Context(), st, func() (*linking.Linker, error) { return a.linker(st) }, id, a.simURL())
				if err != nil {
					return err
				}
				return a.print(connectionJSON(c), fmt.Sprintf("connection %s (%s) has new credentials; sync enqueued", c.ID, c.Provider))
			})
		},
	}
	creds, _ := credentialHelp(a.reg)
	linkFlags(cmd, &in, creds, "provider API base URL (default: the connection's own)")
	return cmd
}

func (a *app) printConnections(cs []domain.BankConnection) error {
	return printList(a, "connections", cs, connectionJSON, "ID\tUSER\tPROVIDER\tSTATUS\tLAST SYNCED\tERROR",
		func(c domain.BankConnection) string {
			last, errCode := "never", ""
			if c.LastSyncedAt != nil {
				last = c.LastSyncedAt.UTC().Format(time.RFC3339)
			}
			if c.LastProviderErrorCode != nil {
				errCode = *c.LastProviderErrorCode
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", c.ID, c.UserID, c.Provider, c.Status, last, errCode)
		})
}

func (a *app) setEnabledCmd(verb string, enabled bool) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " ID",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a connection",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("connection id: %w", err)
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				c, err := st.SetConnectionEnabled(cmd.Context(), id, enabled)
				if err != nil {
					return err
				}
				return a.print(connectionJSON(c), fmt.Sprintf("connection %s is %s", c.ID, c.Status))
			})
		},
	}
}
