package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/finsync/finsync/internal/pgcluster"
	"github.com/finsync/finsync/storage"
)

// devPort is where the demo starts its private PostgreSQL cluster.
const devPort = "54329"

// findDatabase returns a URL of a database the demo can use: configured
// (DATABASE_URL) when set; else a "finsync" database on 127.0.0.1:5432;
// else a private cluster under dir when PostgreSQL's initdb and pg_ctl are
// installed (in binDir, FINSYNC_PG_BINDIR, when set). It returns a stop
// function for a cluster it started.
func findDatabase(ctx context.Context, configured, binDir, dir string, logf func(string, ...any)) (string, func(), error) {
	noop := func() {}
	if configured != "" {
		if err := storage.PingURL(ctx, configured); err != nil {
			return "", noop, fmt.Errorf("DATABASE_URL is set but unreachable: %w", err)
		}
		return configured, noop, nil
	}
	local := "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	if storage.PingURL(ctx, local) == nil {
		logf("using PostgreSQL at 127.0.0.1:5432")
		u, err := storage.EnsureDatabase(ctx, local, "finsync")
		return u, noop, err
	}
	tools, err := pgcluster.FindToolsIn(binDir)
	if err != nil {
		return "", noop, errors.New("no PostgreSQL found: set DATABASE_URL, run PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth), or install PostgreSQL's server binaries (initdb, pg_ctl) so finsync dev can start a private cluster under " + dir)
	}
	logf("starting a private PostgreSQL cluster under %s", dir)
	stop, err := startCluster(ctx, tools, dir)
	if err != nil {
		return "", noop, err
	}
	u, err := storage.EnsureDatabase(ctx, "postgres://postgres@127.0.0.1:"+devPort+"/postgres?sslmode=disable", "finsync")
	if err != nil {
		stop()
		return "", noop, err
	}
	return u, stop, nil
}

// startCluster initialises (once) and starts a cluster under dir on devPort,
// as the postgres system user when running as root (initdb refuses root).
func startCluster(ctx context.Context, tools pgcluster.Tools, dir string) (func(), error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(abs, "pgdata")
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		if err := tools.InitDB(ctx, data); err != nil {
			return nil, err
		}
	}
	logFile := filepath.Join(data, "server.log")
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1", devPort, data)
	if err := tools.Run(ctx, "pg_ctl", "-D", data, "-l", logFile, "-o", opts, "-w", "start"); err != nil {
		return nil, err
	}
	return func() { _ = tools.Run(context.Background(), "pg_ctl", "-D", data, "-m", "fast", "stop") }, nil
}
