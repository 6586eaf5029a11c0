// Command finsync is the one binary of finsync: the HTTP API, the sync
// worker, the provider simulator, the zero-config demo, migrations, the
// operator commands for users, keys and connections, and the OpenAPI
// documents.
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

	"github.com/spf13/cobra"

	"github.com/finsync/finsync/internal/requestid"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "finsync:", err)
		os.Exit(exitStatus(err))
	}
}

// exitError is an error that ends the process with a status of its own
// rather than 1 (see `sync --wait`).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitStatus is the process's exit status for a command that failed with err.
func exitStatus(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// app carries what every command shares: configuration and output streams.
type app struct {
	cfg    config
	out    io.Writer
	errOut io.Writer
	json   bool
}

func newRoot(out, errOut io.Writer) *cobra.Command {
	a := &app{cfg: configFromEnv(), out: out, errOut: errOut}
	root := &cobra.Command{
		Use:           "finsync",
		Short:         "Keep people's financial data in sync and serve it back",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every command refuses to start on an invalid setting rather
		// than running with a default the operator did not ask for.
		PersistentPreRunE: func(*cobra.Command, []string) error { return a.cfg.check() },
	}
	root.PersistentFlags().StringVar(&a.cfg.DatabaseURL, "database-url", a.cfg.DatabaseURL, "PostgreSQL URL (env DATABASE_URL)")
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
		enc := json.NewEncoder(a.out)
		return enc.Encode(v)
	}
	_, err := fmt.Fprintln(a.out, human)
	return err
}

func (a *app) logger() *slog.Logger {
	return slog.New(requestid.NewHandler(slog.NewJSONHandler(a.errOut, &slog.HandlerOptions{Level: a.cfg.LogLevel})))
}
