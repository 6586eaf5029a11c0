package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/destinations"
	"github.com/finsync/finsync/storage"
)

// destinationJSON is a destination as printed: its settings, never its
// credentials.
func destinationJSON(d storage.Destination) map[string]any {
	accounts := d.AccountIDs
	if accounts == nil {
		accounts = []uuid.UUID{}
	}
	return map[string]any{
		"id": d.ID, "userId": d.UserID, "kind": d.Kind, "name": d.Name, "config": d.Config,
		"allAccounts": d.AllAccounts, "accountIds": accounts, "createdAt": d.CreatedAt.UTC(),
		"pendingEvents": d.Pending, "failedEvents": d.Failed, "lastError": d.LastError,
	}
}

func (a *app) destinationsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "destinations", Short: "Manage the tools to which manual-account changes are propagated"}
	cmd.AddCommand(a.addDestinationCmd(), a.linkDestinationCmd(true), a.linkDestinationCmd(false), a.listDestinationsCmd())
	return cmd
}

// newDestination validates a destination and seals its credentials.
func (a *app) newDestination(user, kind, name, config string) (storage.NewDestination, error) {
	var nd storage.NewDestination
	var err error
	if nd.UserID, err = uuid.Parse(user); err != nil {
		return nd, fmt.Errorf("--user: %w", err)
	}
	public, secret, err := destinations.SplitConfig(kind, json.RawMessage(config))
	if err != nil {
		return nd, fmt.Errorf("--config: %w", err)
	}
	box, err := a.cfg.Box()
	if err != nil {
		return nd, err
	}
	if nd.SealedSecret, err = box.Seal(secret); err != nil {
		return nd, fmt.Errorf("seal credentials: %w", err)
	}
	nd.Kind, nd.Name, nd.Config = kind, name, public
	return nd, nil
}

func (a *app) addDestinationCmd() *cobra.Command {
	var user, kind, name, config string
	var all bool
	add := &cobra.Command{
		Use:   "add",
		Short: "Register a destination (credentials stored encrypted)",
		Long: `Register a destination. --config by kind:
  webhook:        {"url": "https://...", "secret": "..."}
  airtable:       {"baseId": "app...", "table": "Accounts", "token": "pat...", "baseUrl": "https://api.airtable.com", "mergeField": "Account ID"}
  google_sheets:  {"spreadsheetId": "...", "sheet": "Accounts", "baseUrl": "https://sheets.googleapis.com",
                   "refreshToken": "1//...", "clientId": "...", "clientSecret": "..."}  (or a short-lived "accessToken": "ya29...")
Airtable tables need the fields ` + strings.Join(destinations.Headers(), ", ") + `.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			nd, err := a.newDestination(user, kind, name, config)
			if err != nil {
				return err
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				d, err := st.CreateDestination(cmd.Context(), nd)
				if err != nil {
					return err
				}
				if all {
					if err := st.SetAllAccounts(cmd.Context(), d.ID, true); err != nil {
						return err
					}
					d.AllAccounts = true
				}
				return a.print(destinationJSON(d), fmt.Sprintf("destination %s (%s) added", d.ID, d.Kind))
			})
		},
	}
	f := add.Flags()
	f.StringVar(&user, "user", "", "user id (required)")
	f.StringVar(&kind, "kind", "", "airtable, google_sheets or webhook (required)")
	f.StringVar(&config, "config", "", "settings and credentials as a JSON object (required)")
	f.StringVar(&name, "name", "", "a name to recognise the destination")
	f.BoolVar(&all, "all-accounts", false, "propagate every manual account of the user, including future ones")
	for _, n := range []string{"user", "kind", "config"} {
		_ = add.MarkFlagRequired(n)
	}
	return add
}

func (a *app) linkDestinationCmd(link bool) *cobra.Command {
	verb, short := "unlink", "Stop propagating an account's changes to a destination"
	if link {
		verb, short = "link", "Propagate an account's changes to a destination"
	}
	var account string
	var all bool
	cmd := &cobra.Command{
		Use:   verb + " DEST_ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dest, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("destination id: %w", err)
			}
			if all == (account != "") {
				return fmt.Errorf("give exactly one of --account or --all")
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				if err := applyLink(cmd, st, dest, account, all, link); err != nil {
					return err
				}
				d, err := st.GetDestination(cmd.Context(), dest)
				if err != nil {
					return err
				}
				what := "account " + account
				if all {
					what = "all accounts"
				}
				return a.print(map[string]any{"destinationId": d.ID, "accountId": account, "allAccounts": all, "linked": link},
					fmt.Sprintf("destination %s: %s %sed", d.ID, what, verb))
			})
		},
	}
	cmd.Flags().StringVar(&account, "account", "", "the manual account's id")
	cmd.Flags().BoolVar(&all, "all", false, "every manual account of the user, including future ones")
	return cmd
}

// applyLink links or unlinks one account, or all of them.
func applyLink(cmd *cobra.Command, st *storage.Store, dest uuid.UUID, account string, all, link bool) error {
	if all {
		return st.SetAllAccounts(cmd.Context(), dest, link)
	}
	acct, err := uuid.Parse(account)
	if err != nil {
		return fmt.Errorf("--account: %w", err)
	}
	if link {
		return st.LinkAccount(cmd.Context(), dest, acct)
	}
	return st.UnlinkAccount(cmd.Context(), dest, acct)
}

func (a *app) listDestinationsCmd() *cobra.Command {
	var user string
	list := &cobra.Command{
		Use:   "list",
		Short: "List a user's destinations and their linked accounts",
		RunE: func(cmd *cobra.Command, _ []string) error {
			uid, err := uuid.Parse(user)
			if err != nil {
				return fmt.Errorf("--user: %w", err)
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				ds, err := st.ListDestinations(cmd.Context(), uid)
				if err != nil {
					return err
				}
				return a.printDestinations(ds)
			})
		},
	}
	list.Flags().StringVar(&user, "user", "", "user id (required)")
	_ = list.MarkFlagRequired("user")
	return list
}

func (a *app) printDestinations(ds []storage.Destination) error {
	return printList(a, "destinations", ds, destinationJSON, "ID\tKIND\tNAME\tACCOUNTS\tPENDING\tFAILED\tCREATED",
		func(d storage.Destination) string {
			accts := fmt.Sprintf("%d linked", len(d.AccountIDs))
			if d.AllAccounts {
				accts = "all"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%s", d.ID, d.Kind, d.Name, accts, d.Pending, d.Failed, d.CreatedAt.UTC().Format(time.RFC3339))
		})
}
