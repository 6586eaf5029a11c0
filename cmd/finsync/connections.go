package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/api/ops"
	"github.com/finsync/finsync/domain"
	"github.com/finsync/finsync/linking"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/providers/all/allsim"
	"github.com/finsync/finsync/providers/sim/simkit"
	"github.com/finsync/finsync/storage"
	"github.com/finsync/finsync/worker"
)

// registry is every adapter finsync ships, with what each declares.
func registry() *providers.Registry { return all.NewRegistry() }

// providerHelp documents --provider and --credentials from what the adapters
// declare.
func providerHelp(reg *providers.Registry) (names, creds, intervals string) {
	var n, c, iv []string
	for _, d := range reg.Descriptions() {
		n = append(n, d.Name)
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
	return strings.Join(n, ", "), strings.Join(c, "; "), strings.Join(iv, ", ")
}

// intervalHelp documents --interval: the default and the providers' own.
func intervalHelp(providerIntervals string) string {
	h := "time between periodic syncs (default " + shortDuration(worker.DefaultSyncInterval)
	if providerIntervals != "" {
		h += "; " + providerIntervals
	}
	return h + ")"
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

// credentialInput is the credential flags `connections add` and
// `connections reauth` share: where the credentials come from (a file,
// standard input, the command line, or the simulator), the base URL, and
// whether to try them with the provider first.
type credentialInput struct {
	credentials, baseURL, simURL, simName string
	// credentialsFile is --credentials-file.
	credentialsFile string
	useSim, check   bool
	// stdin is where `--credentials -` reads; warn receives the warning
	// about credentials given on the command line.
	stdin io.Reader
	warn  io.Writer
}

// addConnection is `connections add`.
type addConnection struct {
	credentialInput
	user, provider, institution string
	interval                    time.Duration
}

// maxCredentialsBytes bounds credentials read from a file or standard
// input (a provider's JSON object is a few hundred bytes).
const maxCredentialsBytes = 64 << 10

// inlineCredentialsWarning is printed when credentials are given on the
// command line.
const inlineCredentialsWarning = "warning: --credentials JSON shows the credentials to every user of this machine " +
	"(the process list) and in your shell's history; use --credentials-file PATH or --credentials - (standard input)\n"

// readCredentials returns the credentials of --credentials-file PATH,
// --credentials - (standard input) or --credentials JSON (with a warning:
// the command line is visible in the process list); nil when none is
// given.
func (ac *credentialInput) readCredentials() ([]byte, error) {
	switch {
	case ac.credentialsFile != "" && ac.credentials != "":
		return nil, fmt.Errorf("give either --credentials or --credentials-file, not both")
	case ac.credentialsFile != "":
		f, err := os.Open(ac.credentialsFile)
		if err != nil {
			return nil, fmt.Errorf("--credentials-file: %w", err)
		}
		defer f.Close()
		return readBounded("--credentials-file", f)
	case ac.credentials == "-":
		if ac.stdin == nil {
			return nil, fmt.Errorf("--credentials -: no standard input")
		}
		return readBounded("--credentials -", ac.stdin)
	case ac.credentials != "":
		if ac.warn != nil {
			fmt.Fprint(ac.warn, inlineCredentialsWarning)
		}
		return []byte(ac.credentials), nil
	}
	return nil, nil
}

// readBounded reads r whole, refusing more than maxCredentialsBytes, and
// trims the surrounding white space (a file's final newline).
func readBounded(flag string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxCredentialsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(b) > maxCredentialsBytes {
		return nil, fmt.Errorf("%s: longer than %d KiB", flag, maxCredentialsBytes>>10)
	}
	return bytes.TrimSpace(b), nil
}

// linker is how the CLI puts credentials on connections (package linking,
// shared with the ops console), over st.
func (a *app) linker(st *storage.Store) (*linking.Linker, error) {
	box, err := a.box()
	if err != nil {
		return nil, err
	}
	jobs, err := worker.NewInsertClient(st)
	if err != nil {
		return nil, err
	}
	return &linking.Linker{Store: st, Registry: registry(), Box: box, Jobs: jobs}, nil
}

// given reads what the flags give for a connection of the described
// provider: the credentials of --credentials-file, --credentials - or
// --credentials JSON, or with --sim the simulator's (by the provider's link
// flow where it has one, signed with the stored settings), and the base URL
// (--base-url, else the simulator's with --sim; empty means the caller's
// default).
func (ci *credentialInput) given(ctx context.Context, a *app, desc providers.Description, settings []byte) (linking.Given, error) {
	g := linking.Given{BaseURL: ci.baseURL, Check: ci.check}
	if ci.baseURL != "" {
		if err := linking.CheckBaseURL(ci.baseURL); err != nil {
			return g, flagged(err)
		}
	}
	if !ci.useSim {
		creds, err := ci.readCredentials()
		if err != nil {
			return g, err
		}
		if len(creds) == 0 {
			return g, fmt.Errorf("credentials are required: --credentials-file PATH, --credentials - (standard input) or --credentials JSON (a JSON object), or --sim")
		}
		g.Credentials = creds
		return g, nil
	}
	root := ci.simURL
	if root == "" {
		root = a.cfg.SimURL
	}
	if root == "" {
		return g, fmt.Errorf("--sim needs --sim-url or FINSYNC_SIM_URL")
	}
	name := ci.simName
	if name == "" {
		name = uuid.NewString()
	}
	creds, err := allsim.Link(ctx, &http.Client{Timeout: linking.CallTimeout}, desc.Name, root, name, settings)
	if err != nil {
		return g, fmt.Errorf("--sim: %w", err)
	}
	g.Credentials, g.FromLinkFlow = creds, true
	if g.BaseURL == "" {
		g.BaseURL = allsim.BaseURL(desc.Name, root)
	}
	return g, nil
}

// flagged names the flag at fault in a refusal of package linking
// (--credentials, --base-url, --check); other errors pass as they are.
func flagged(err error) error {
	var in *linking.InputError
	if errors.As(err, &in) && in.Field != "" {
		return fmt.Errorf("--%s: %w", in.Field, err)
	}
	return err
}

// build checks the flags and the credentials (against the provider's
// declared schema, and with --check by one call to the provider) and
// returns the connection to store; nothing is stored when it fails.
func (ac *addConnection) build(ctx context.Context, a *app, l *linking.Linker) (storage.NewConnection, error) {
	var nc storage.NewConnection
	var err error
	if nc.UserID, err = uuid.Parse(ac.user); err != nil {
		return nc, fmt.Errorf("--user: %w", err)
	}
	desc, ok := l.Registry.Describe(ac.provider)
	if !ok {
		names, _, _ := providerHelp(l.Registry)
		return nc, fmt.Errorf("--provider must be one of %s", names)
	}
	nc.Provider, nc.InstitutionName = ac.provider, ac.institution
	settings, err := l.Settings(ctx, desc)
	if err != nil {
		return nc, err
	}
	g, err := ac.given(ctx, a, desc, settings)
	if err != nil {
		return nc, err
	}
	var creds []byte
	if creds, nc.BaseURL, err = l.Resolve(ctx, desc, settings, g, desc.DefaultBaseURL); err != nil {
		return nc, flagged(err)
	}
	if ac.interval > 0 {
		nc.SyncInterval = &ac.interval
	}
	nc.SealedCredentials, err = l.Box.Seal(creds)
	return nc, err
}

func (a *app) connectionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "connections", Short: "Manage provider connections"}
	var ac addConnection
	add := &cobra.Command{
		Use:   "add",
		Short: "Register a provider connection (credentials stored encrypted) and enqueue its first sync",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ac.stdin, ac.warn = cmd.InOrStdin(), a.errOut
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				l, err := a.linker(st)
				if err != nil {
					return err
				}
				nc, err := ac.build(cmd.Context(), a, l)
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
	f.StringVar(&ac.user, "user", "", "user id (required)")
	names, creds, intervals := providerHelp(registry())
	f.StringVar(&ac.provider, "provider", "", names+" (required)")
	ac.addFlags(add, creds, "provider API base URL (default: the provider's production URL)")
	f.StringVar(&ac.institution, "institution", "", "institution name")
	f.DurationVar(&ac.interval, "interval", 0, intervalHelp(intervals))
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
				cs, err := st.ListAllConnections(cmd.Context(), uid)
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

// addFlags registers the credential flags on cmd; creds lists each
// provider's credential keys, baseHelp documents --base-url.
func (ci *credentialInput) addFlags(cmd *cobra.Command, creds, baseHelp string) {
	f := cmd.Flags()
	f.StringVar(&ci.credentials, "credentials", "", "provider credentials as a JSON object with the keys ("+creds+"; ? marks optional ones); "+
		"- reads them from standard input. Given inline, they show in the process list: prefer a file or standard input")
	f.StringVar(&ci.credentialsFile, "credentials-file", "", "read the credentials (the JSON object of --credentials) from this file")
	f.StringVar(&ci.baseURL, "base-url", "", baseHelp)
	f.BoolVar(&ci.useSim, "sim", false, "use credentials the simulator accepts (by the provider's link flow where it has one)")
	f.BoolVar(&ci.check, "check", false, "first fetch the connection's accounts once from the provider; store nothing if that fails")
	f.StringVar(&ci.simURL, "sim-url", "", "the simulator's root URL (default $FINSYNC_SIM_URL)")
	f.StringVar(&ci.simName, "sim-name", "", "names the simulated connection (same name, same data, but a link flow's session is new data each time; NAME"+
		simkit.RelinkSeparator+"N is the same data linked again for the Nth time, under new ids, for the simulators of providers that "+
		"re-issue ids on a re-link: others take it as a new name)")
}

// reauthCmd is `connections reauth ID`: the user linked the bank again
// (a new Plaid Item, a new consent), and the connection takes the new
// credentials.
func (a *app) reauthCmd() *cobra.Command {
	var ci credentialInput
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
			ci.stdin, ci.warn = cmd.InOrStdin(), a.errOut
			return a.withStore(cmd.Context(), func(st *storage.Store) error {
				c, err := ci.reauth(cmd.Context(), a, st, id)
				if err != nil {
					return err
				}
				return a.print(connectionJSON(c), fmt.Sprintf("connection %s (%s) has new credentials; sync enqueued", c.ID, c.Provider))
			})
		},
	}
	_, creds, _ := providerHelp(registry())
	ci.addFlags(cmd, creds, "provider API base URL (default: the connection's own)")
	return cmd
}

// reauth puts the flags' credentials on connection id and enqueues its
// sync, as linking.Linker.Reauth does for every caller (the ops console's
// re-auth form too). Unknown connections and credentials that are not the
// connection's provider's are refused, nothing stored.
func (ci *credentialInput) reauth(ctx context.Context, a *app, st *storage.Store, id uuid.UUID) (domain.BankConnection, error) {
	conn, err := st.ConnectionByID(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return conn, fmt.Errorf("connection %s not found", id)
	}
	if err != nil {
		return conn, err
	}
	l, err := a.linker(st)
	if err != nil {
		return conn, err
	}
	desc, ok := l.Registry.Describe(conn.Provider)
	if !ok {
		return conn, fmt.Errorf("connection %s: provider %q has no adapter in this build", id, conn.Provider)
	}
	var settings []byte
	if ci.useSim {
		if settings, err = l.Settings(ctx, desc); err != nil {
			return conn, err
		}
	}
	g, err := ci.given(ctx, a, desc, settings)
	if err != nil {
		return conn, fmt.Errorf("connection %s (%s): %w", id, conn.Provider, err)
	}
	res, err := l.Reauth(ctx, id, g)
	if errors.Is(err, storage.ErrNotFound) {
		return conn, fmt.Errorf("connection %s not found", id)
	}
	return res.Connection, flagged(err)
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

// printList prints items as {"<key>": [...]} with --json, else as a table
// with the header and one tab-separated row per item.
func printList[T any](a *app, key string, items []T, toJSON func(T) map[string]any, header string, row func(T) string) error {
	if a.json {
		out := make([]map[string]any, len(items))
		for i, it := range items {
			out[i] = toJSON(it)
		}
		return a.print(map[string]any{key: out}, "")
	}
	w := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header)
	for _, it := range items {
		fmt.Fprintln(w, row(it))
	}
	return w.Flush()
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

// enqueueSyncs asks for a sync of each connection now and returns the job
// following each (linking.EnqueueSync: a sync already waiting runs at once
// instead of a second one being added).
func enqueueSyncs(ctx context.Context, client *storage.JobClient, ids []uuid.UUID) (map[uuid.UUID]int64, error) {
	jobs := make(map[uuid.UUID]int64, len(ids))
	for _, id := range ids {
		job, err := linking.EnqueueSync(ctx, client, id)
		if err != nil {
			return nil, err
		}
		jobs[id] = job
	}
	return jobs, nil
}

// providerNames lists the registry's providers, for the ops console's
// provider filter.
func providerNames(reg *providers.Registry) []string {
	var names []string
	for _, d := range reg.Descriptions() {
		names = append(names, d.Name)
	}
	return names
}

// opsReauth is the ops console's re-auth (its connection page's form):
// exactly `connections reauth ID --credentials JSON [--base-url URL]`,
// through l. A refusal of the input is the operator's (shown on the page,
// never holding a credential); an unknown connection stays
// storage.ErrNotFound; anything else is the console's to report.
func opsReauth(l *linking.Linker) ops.ReauthFunc {
	return func(ctx context.Context, r ops.ReauthRequest) (ops.ReauthResult, error) {
		res, err := l.Reauth(ctx, r.ConnectionID, linking.Given{Credentials: r.Credentials, BaseURL: r.BaseURL})
		var in *linking.InputError
		if errors.As(err, &in) {
			return ops.ReauthResult{Refused: in.Error()}, nil
		}
		if err != nil {
			return ops.ReauthResult{}, err
		}
		return ops.ReauthResult{JobID: res.JobID}, nil
	}
}
