package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/finsync/finsync/linking/credinput"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/storage"
)

func (a *app) providersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "providers", Short: "List providers and set the settings a provider shares across its connections"}
	var in credinput.Input
	configure := &cobra.Command{
		Use:   "configure NAME",
		Short: "Set a provider's settings (for Enable Banking its application id and private key), stored encrypted, for every connection",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			desc, ok := a.reg.Describe(args[0])
			if !ok {
				return fmt.Errorf("provider must be one of %s", credinput.ProviderNames(a.reg))
			}
			in.Stdin, in.Warn = cmd.InOrStdin(), a.errOut
			settings, err := in.Settings(desc)
			if err != nil {
				return err
			}
			box, err := a.cfg.Box()
			if err != nil {
				return err
			}
			sealed, err := box.Seal(settings)
			if err != nil {
				return err
			}
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				if err := st.SetProviderSettings(cmd.Context(), desc.Name, sealed); err != nil {
					return err
				}
				return a.print(map[string]any{"provider": desc.Name, "configured": true},
					fmt.Sprintf("%s settings stored (encrypted); its connections use them from their next sync", desc.Name))
			})
		},
	}
	f := configure.Flags()
	f.StringVar(&in.Credentials, "credentials", "", "the settings as a JSON object; - reads them from standard input (inline, they show in the process list)")
	f.StringVar(&in.CredentialsFile, "credentials-file", "", "read the settings (a JSON object) from this file")
	f.BoolVar(&in.UseSim, "sim", false, "store the settings the simulator accepts (its demo application)")

	clearCmd := &cobra.Command{
		Use:   "clear NAME",
		Short: "Remove a provider's settings (connections that rely on them fail until they are set again)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				if err := st.DeleteProviderSettings(cmd.Context(), args[0]); err != nil {
					return err
				}
				return a.print(map[string]any{"provider": args[0], "configured": false}, args[0]+" settings removed")
			})
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the providers, their settings' keys and whether they are set (never their values)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				set, err := st.ListProviderSettings(cmd.Context())
				if err != nil {
					return err
				}
				return a.printProviders(set)
			})
		},
	}
	cmd.AddCommand(configure, clearCmd, list)
	return cmd
}

// printProviders lists every registered provider with its settings' keys
// and when they were set.
func (a *app) printProviders(set []storage.ProviderSettingsInfo) error {
	when := map[string]time.Time{}
	for _, s := range set {
		when[s.Provider] = s.UpdatedAt
	}
	toJSON := func(d providers.Description) map[string]any {
		m := map[string]any{"provider": d.Name, "settings": settingKeys(d), "configured": !when[d.Name].IsZero()}
		if t := when[d.Name]; !t.IsZero() {
			m["updatedAt"] = t
		}
		return m
	}
	return printList(a, "providers", a.reg.Descriptions(), toJSON, "PROVIDER\tSETTINGS\tSET AT", func(d providers.Description) string {
		at := "-"
		if t := when[d.Name]; !t.IsZero() {
			at = t.UTC().Format(time.RFC3339)
		} else if len(d.Settings) > 0 {
			at = "not set"
		}
		return fmt.Sprintf("%s\t%s\t%s", d.Name, strings.Join(settingKeys(d), ", "), at)
	})
}

func settingKeys(d providers.Description) []string {
	keys := []string{}
	for _, f := range d.Settings {
		keys = append(keys, f.Key)
	}
	return keys
}
