package process

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/finsync/finsync/storage"
)

// Waits between attempts to reach a database that is down at start-up.
const (
	awaitDatabaseFirst = 500 * time.Millisecond
	awaitDatabaseMax   = 5 * time.Second
)

// AwaitDatabase opens the store, waiting for the database while it is
// unreachable or restarting (storage.Unavailable) instead of exiting, so a
// process started during an outage serves as soon as the database is back
// rather than depending on a supervisor's restart backoff. Other errors (a
// bad URL, a missing database, bad credentials) end it at once, as does ctx.
func AwaitDatabase(ctx context.Context, url string, opts storage.Options, log *slog.Logger) (*storage.Store, error) {
	wait := awaitDatabaseFirst
	for {
		st, err := storage.Connect(ctx, url, opts)
		if err == nil {
			return st, nil
		}
		if !storage.Unavailable(err) || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("database unreachable; waiting for it", "error", err, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the database: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, awaitDatabaseMax)
	}
}

// readReplica opens the read replica named by FINSYNC_READ_DATABASE_URL,
// if any, and returns the store to serve with. The replica need not be up:
// its pool (of conns connections) connects lazily and, while it is down,
// reads go to the primary.
func (e Env) readReplica(ctx context.Context, primary *storage.Store, conns int32) (*storage.Store, *storage.Replica, error) {
	if e.Config.ReadDatabaseURL == "" {
		return primary, nil, nil
	}
	rep, err := primary.ConnectReplica(ctx, e.Config.ReadDatabaseURL,
		storage.ReplicaOptions{MaxLag: e.Config.ReadMaxLag, MaxConns: conns, Log: e.Log})
	if err != nil {
		return nil, nil, fmt.Errorf("FINSYNC_READ_DATABASE_URL: %w", err)
	}
	e.Log.Info("reads go to the replica while it is within the lag bound", "max_lag", rep.MaxLag().String())
	return primary.WithReplica(rep), rep, nil
}
