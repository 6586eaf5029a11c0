// Command finsync is the one binary of finsync: the HTTP API, the sync
// worker, the provider simulator, the zero-config demo, migrations, the
// operator commands for users, keys and connections, and the OpenAPI
// documents. It parses its flags and configuration and hands them to the
// packages that do the work.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/internal/requestid"
	"github.com/finsync/finsync/process"
	"github.com/finsync/finsync/providers"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "finsync:", err)
		os.Exit(exitStatus(err))
	}
}

// exitStatus is the process's exit status for a command that failed with
// err: its own when it has one (`sync --wait`'s held-back syncs), else 1.
func exitStatus(err error) int {
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}

// app carries what every command shares: the configuration (loaded before
// any command runs), the provider registry (built once), the output
// streams and --json.
type app struct {
	cfg    config.Config
	reg    *providers.Registry
	out    io.Writer
	errOut io.Writer
	json   bool
}

func newRoot(out, errOut io.Writer) *cobra.Command {
	a := &app{reg: all.NewRegistry(), out: out, errOut: errOut}
	var databaseURL string
	root := &cobra.Command{
		Use:           "finsync",
		Short:         "Keep people's financial data in sync and serve it back",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every command refuses to start on an invalid setting rather
		// than running with a default the operator did not ask for.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			overrides := map[string]string{}
			if cmd.Flags().Changed("database-url") {
				overrides["DATABASE_URL"] = databaseURL
			}
			var err error
			a.cfg, err = config.Load(config.Environment(overrides))
			return err
		},
	}
	root.PersistentFlags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (env DATABASE_URL)")
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print results as one JSON object")
	root.AddCommand(
		a.migrateCmd(),
		a.serveCmd(),
		a.usersCmd(),
		a.keysCmd(),
		a.oauthTokensCmd(),
		a.devCmd(),
		a.connectionsCmd(),
		a.providersCmd(),
		a.syncCmd(),
		a.workerCmd(),
		a.simCmd(),
		a.destinationsCmd(),
		a.openapiCmd(),
	)
	strictGroups(root)
	return root
}

// strictGroups makes every command below c that only groups subcommands
// (connections, users, ...) refuse an unknown one with an error (cobra
// would print the group's help and exit 0); without arguments it prints
// its help, as before.
func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictGroups(sub)
		if sub.HasSubCommands() && !sub.Runnable() {
			sub.Args = cobra.NoArgs
			sub.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
}

// print writes v as JSON with --json, or the human text otherwise.
func (a *app) print(v any, human string) error {
	if a.json {
		return json.NewEncoder(a.out).Encode(v)
	}
	_, err := fmt.Fprintln(a.out, human)
	return err
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

func (a *app) logger() *slog.Logger {
	return slog.New(requestid.NewHandler(slog.NewJSONHandler(a.errOut, &slog.HandlerOptions{Level: a.cfg.LogLevel})))
}

// env is what the long-running processes are built from.
func (a *app) env() process.Env {
	return process.Env{Config: a.cfg, Registry: a.reg, Log: a.logger()}
}

// withStore opens the database for one command.
func (a *app) withStore(ctx context.Context, fn func(st *storage.Store) error) error {
	st, err := storage.Connect(ctx, a.cfg.DatabaseURLOrDefault(), storage.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}
