package main

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/useradmin"
)

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
			if err := useradmin.CheckNewUser(email, plan); err != nil {
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
				if err := useradmin.CheckPlan(newPlan); err != nil {
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

// bindCredentialFlags registers the flags keys create and oauth-tokens
// issue share.
func bindCredentialFlags(cmd *cobra.Command, r *useradmin.CredentialRequest) {
	cmd.Flags().StringVar(&r.User, "user", "", "user id (required)")
	cmd.Flags().StringVar(&r.Accounts, "accounts", "", "comma-separated account ids to limit the credential to (default: all, including future ones)")
	cmd.Flags().StringVar(&r.Expires, "expires", "", "expiry time, RFC 3339")
	_ = cmd.MarkFlagRequired("user")
}

func (a *app) issue(cmd *cobra.Command, r *useradmin.CredentialRequest, kind, label string) error {
	nc, err := r.Credential(kind)
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
	var f useradmin.CredentialRequest
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an API key (printed once) and turn the user's storage mode on",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.issue(cmd, &f, storage.CredentialAPIKey, "API key")
		},
	}
	bindCredentialFlags(create, &f)
	create.Flags().StringVar(&f.Name, "name", "", "a name to recognise the key by")
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
	var f useradmin.CredentialRequest
	issue := &cobra.Command{
		Use:   "issue",
		Short: "Issue an OAuth access token to an app (printed once)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.App == "" {
				return fmt.Errorf("--app is required")
			}
			return a.issue(cmd, &f, storage.CredentialOAuthToken, "OAuth access token")
		},
	}
	bindCredentialFlags(issue, &f)
	issue.Flags().StringVar(&f.App, "app", "", "the authorized app's name (required)")
	cmd.AddCommand(issue)
	return cmd
}
