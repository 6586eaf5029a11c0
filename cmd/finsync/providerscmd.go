package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/storage"
)

// configureProvider is `providers configure NAME`.
type configureProvider struct {
	in credentialInput // its --credentials flags, readers and --sim
}

// settingsOf returns the settings to store for desc: the simulator's with
// --sim, else those read from --credentials-file, --credentials - or
// --credentials JSON, checked against the provider's declared Settings.
func (cp *configureProvider) settingsOf(desc providers.Description) ([]byte, error) {
	if len(desc.Settings) == 0 {
		return nil, fmt.Errorf("%s has no provider settings: its connections carry all their credentials", desc.Name)
	}
	raw, err := cp.in.readCredentials()
	switch {
	case err != nil:
		return nil, err
	case cp.in.useSim && raw != nil:
		return nil, errors.New("give either --sim or the settings, not both")
	case cp.in.useSim:
		return allsim.Settings(desc.Name), nil
	case raw == nil:
		return nil, errors.New("settings are required: --credentials-file PATH, --credentials - (standard input), --credentials JSON, or --sim")
	}
	if err := desc.CheckSettings(raw); err != nil {
		return nil, fmt.Errorf("--credentials: %w", err)
	}
	return raw, nil
}

func (a *app) providersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "providers", Short: "List providers and set the settings a provider shares across its connections"}
	var cp configureProvider
	configure := &cobra.Command{
		Use:   "configure NAME",
		Short: "Set a provider's settings (for Enable Banking its application id and private key), stored encrypted, for every connection",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := registry()
			desc, ok := reg.Describe(args[0])
			if !ok {
				names, _, _ := providerHelp(reg)
				return fmt.Errorf("provider must be one of %s", names)
			}
			cp.in.stdin, cp.in.warn = cmd.InOrStdin(), a.errOut
			settings, err := cp.settingsOf(desc)
			if err != nil {
				return err
			}
			box, err := a.box()
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
	f.StringVar(&cp.in.credentials, "credentials", "", "the settings as a JSON object; - reads them from standard input (inline, they show in the process list)")
	f.StringVar(&cp.in.credentialsFile, "credentials-file", "", "read the settings (a JSON object) from this file")
	f.BoolVar(&cp.in.useSim, "sim", false, "store the settings the simulator accepts (its demo application)")

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
	return printList(a, "providers", registry().Descriptions(), toJSON, "PROVIDER\tSETTINGS\tSET AT", func(d providers.Description) string {
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
