package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
)

// withStore opens the database for one command.
func (a *app) withStore(ctx context.Context, fn func(st *storage.Store) error) error {
	st, err := storage.Connect(ctx, a.cfg.databaseURL(), storage.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

func validPlan(p string) error {
	switch p {
	case domain.PlanNone, domain.PlanStandard, domain.PlanPro, domain.PlanTrial:
		return nil
	}
	return fmt.Errorf("--plan must be one of none, standard, pro, trial")
}

func userJSON(u domain.User) map[string]any {
	return map[string]any{"id": u.ID, "email": u.Email, "plan": u.Plan, "planActive": u.PlanActive, "storageMode": u.StorageMode}
}

func (a *app) usersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Manage users"}
	var email, plan string
	var storageMode bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a user",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.Contains(email, "@") {
				return fmt.Errorf("--email must be an email address")
			}
			if err := validPlan(plan); err != nil {
				return err
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				u, err := st.CreateUser(cmd.Context(), email, plan, storageMode)
				if err != nil {
					return err
				}
				return a.print(userJSON(u), fmt.Sprintf("user %s (%s, plan %s, storage mode %v)", u.ID, u.Email, u.Plan, u.StorageMode))
			})
		},
	}
	create.Flags().StringVar(&email, "email", "", "email address (required)")
	create.Flags().StringVar(&plan, "plan", domain.PlanStandard, "plan: none, standard, pro or trial")
	create.Flags().BoolVar(&storageMode, "storage-mode", false, "turn storage mode on")
	_ = create.MarkFlagRequired("email")

	var newPlan string
	var newStorageMode, planActive bool
	update := &cobra.Command{
		Use:   "update ID",
		Short: "Change a user's plan or storage mode",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("user id: %w", err)
			}
			var up storage.UserUpdate
			if cmd.Flags().Changed("plan") {
				if err := validPlan(newPlan); err != nil {
					return err
				}
				up.Plan = &newPlan
			}
			if cmd.Flags().Changed("storage-mode") {
				up.StorageMode = &newStorageMode
			}
			if cmd.Flags().Changed("plan-active") {
				up.PlanActive = &planActive
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				u, err := st.UpdateUser(cmd.Context(), id, up)
				if err != nil {
					return err
				}
				return a.print(userJSON(u), fmt.Sprintf("user %s (%s, plan %s, active %v, storage mode %v)", u.ID, u.Email, u.Plan, u.PlanActive, u.StorageMode))
			})
		},
	}
	update.Flags().StringVar(&newPlan, "plan", "", "plan: none, standard, pro or trial")
	update.Flags().BoolVar(&newStorageMode, "storage-mode", false, "storage mode on or off")
	update.Flags().BoolVar(&planActive, "plan-active", true, "whether the subscription is active")
	cmd.AddCommand(create, update)
	return cmd
}

// credentialFlags are shared by keys create and oauth-tokens issue.
type credentialFlags struct {
	user, accounts, expires, name, app string
}

func (f *credentialFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.user, "user", "", "user id (required)")
	cmd.Flags().StringVar(&f.accounts, "accounts", "", "comma-separated account ids to limit the credential to (default: all, including future ones)")
	cmd.Flags().StringVar(&f.expires, "expires", "", "expiry time, RFC 3339")
	_ = cmd.MarkFlagRequired("user")
}

func (f *credentialFlags) credential(kind string) (storage.NewCredential, error) {
	nc := storage.NewCredential{Kind: kind, Name: f.name, AppName: f.app}
	var err error
	if nc.UserID, err = uuid.Parse(f.user); err != nil {
		return nc, fmt.Errorf("--user: %w", err)
	}
	if f.accounts != "" {
		nc.AccountIDs = []uuid.UUID{}
		for _, s := range strings.Split(f.accounts, ",") {
			id, err := uuid.Parse(strings.TrimSpace(s))
			if err != nil {
				return nc, fmt.Errorf("--accounts: %q: %w", s, err)
			}
			nc.AccountIDs = append(nc.AccountIDs, id)
		}
	}
	if f.expires != "" {
		t, err := time.Parse(time.RFC3339, f.expires)
		if err != nil {
			return nc, fmt.Errorf("--expires: %w", err)
		}
		nc.ExpiresAt = &t
	}
	return nc, nil
}

func (a *app) issue(cmd *cobra.Command, f *credentialFlags, kind, label string) error {
	nc, err := f.credential(kind)
	if err != nil {
		return err
	}
	return a.withStore(cmd.Context(), func(st *storage.Store) error {
		ic, err := st.IssueCredential(cmd.Context(), nc)
		if err != nil {
			return err
		}
		field := "key"
		if kind == storage.CredentialOAuthToken {
			field = "token"
		}
		return a.print(map[string]any{"id": ic.ID, field: ic.Secret, "prefix": ic.DisplayPrefix},
			fmt.Sprintf("%s %s\n%s (shown once; store it now)", label, ic.ID, ic.Secret))
	})
}

func (a *app) keysCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage API keys, and make and rotate the service's encryption and cursor keys"}
	var f credentialFlags
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key (printed once) and turn the user's storage mode on",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.issue(cmd, &f, storage.CredentialAPIKey, "API key")
		},
	}
	f.bind(create)
	create.Flags().StringVar(&f.name, "name", "", "a name to recognise the key by")
	disable := &cobra.Command{
		Use:   "disable ID",
		Short: "Disable an API key or OAuth token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("key id: %w", err)
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				if err := st.DisableCredential(cmd.Context(), id); err != nil {
					return err
				}
				return a.print(map[string]any{"id": id, "enabled": false}, "disabled "+id.String())
			})
		},
	}
	cmd.AddCommand(create, disable)
	cmd.AddCommand(a.serviceKeyCmds()...)
	return cmd
}

func (a *app) oauthTokensCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "oauth-tokens", Short: "Manage OAuth access tokens of authorized apps"}
	var f credentialFlags
	issue := &cobra.Command{
		Use:   "issue",
		Short: "Issue an OAuth access token to an app (printed once)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.app == "" {
				return fmt.Errorf("--app is required")
			}
			return a.issue(cmd, &f, storage.CredentialOAuthToken, "OAuth access token")
		},
	}
	f.bind(issue)
	issue.Flags().StringVar(&f.app, "app", "", "the authorized app's name (required)")
	cmd.AddCommand(issue)
	return cmd
}
