package main

import (
	"github.com/spf13/cobra"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/demo"
	"github.com/finsync/finsync/storage"
)

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply finsync's and River's database migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := storage.Connect(cmd.Context(), a.cfg.DatabaseURLOrDefault(), storage.Options{})
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Migrate(cmd.Context()); err != nil {
				return err
			}
			return a.print(map[string]any{"migrated": true}, "migrations applied")
		},
	}
}

func (a *app) serveCmd() *cobra.Command {
	var addr, metricsAddr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.env().Serve(cmd.Context(), addr, metricsAddr)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "API listen address")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9090", "ops address for /metrics, /livez and /readyz (empty disables)")
	return cmd
}

func (a *app) workerCmd() *cobra.Command {
	var metricsAddr string
	var unlimited bool
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the sync and rule workers and the periodic sync scheduler",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.env().Work(cmd.Context(), metricsAddr, unlimited)
		},
	}
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:9091", "ops address for /metrics, /livez and /readyz (empty disables)")
	cmd.Flags().BoolVar(&unlimited, "no-provider-rate-limits", false, "turn local provider rate limits off (only for the simulator)")
	return cmd
}

func (a *app) simCmd() *cobra.Command {
	var addr string
	var seed int64
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Serve the simulator of every provider's API on one port",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return api.Serve(cmd.Context(), addr, demo.Simulator(seed), a.logger())
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8090", "listen address")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the simulated data")
	return cmd
}

func (a *app) devCmd() *cobra.Command {
	o := demo.Options{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Zero-config demo: database, simulator, demo data, API and worker in one process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Env, o.Out, o.ErrOut, o.JSON = a.env(), a.out, a.errOut, a.json
			return demo.Run(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Addr, "addr", "127.0.0.1:8080", "API listen address")
	cmd.Flags().StringVar(&o.MetricsAddr, "metrics-addr", "127.0.0.1:9090", "ops address for /metrics (the API's and the worker's), /livez and /readyz (empty disables)")
	cmd.Flags().StringVar(&o.SimAddr, "sim-addr", "127.0.0.1:8090", "provider simulator listen address")
	cmd.Flags().StringVar(&o.Dir, "dir", ".finsync", "where the demo keeps its encryption key and, when needed, a private PostgreSQL cluster")
	return cmd
}
