package pgcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TB is the part of testing.TB a Cluster needs; *testing.T and *testing.B
// satisfy it.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// StopMode is pg_ctl's shutdown mode.
type StopMode string

const (
	// Fast disconnects clients, rolls back their transactions and shuts
	// down cleanly.
	Fast StopMode = "fast"
	// Immediate kills the server without a shutdown checkpoint, as a crash
	// would; the next start runs crash recovery.
	Immediate StopMode = "immediate"
)

// testSettings make a cluster fit for streaming replication and fast enough
// for tests. fsync=off is safe here because only the server, never the
// machine, goes down in a test; synchronous_commit stays on so an
// acknowledged commit survives an Immediate stop.
const testSettings = `
# pgcluster
listen_addresses = '127.0.0.1'
wal_level = replica
max_wal_senders = 10
max_replication_slots = 10
wal_keep_size = '128MB'
hot_standby = on
max_connections = 100
shared_buffers = '32MB'
fsync = off
full_page_writes = off
`

// Cluster is a private PostgreSQL cluster in its own temporary directory,
// listening on 127.0.0.1 on a port of its own, trust authentication, user
// postgres. A Cluster is safe for use by one goroutine at a time for
// Stop/StartAgain; URL and Port may be called from any goroutine.
type Cluster struct {
	tools Tools
	dir   string // temporary directory holding data and the server log
	data  string
	log   string
	port  int

	mu      sync.Mutex
	running bool
	frozen  bool
}

// Start initialises a cluster in a new temporary directory, starts it on a
// free port and registers its shutdown and removal with tb.Cleanup. It
// fails tb when PostgreSQL's programs are missing or the server won't start.
// Caveats: as root, the temporary directory's parents ($TMPDIR) must be
// traversable by the postgres user; a test binary killed before its
// cleanup leaves the server running (pg_ctl -D <dir>/data stop ends it).
func Start(ctx context.Context, tb TB) *Cluster {
	tb.Helper()
	c, err := newCluster(tb)
	if err != nil {
		tb.Fatalf("pgcluster: %v", err)
	}
	if err := c.tools.InitDB(ctx, c.data, "--no-sync"); err != nil {
		tb.Fatalf("pgcluster: %v", err)
	}
	if err := c.configure(); err != nil {
		tb.Fatalf("pgcluster: %v", err)
	}
	if err := c.startOnFreePort(ctx); err != nil {
		tb.Fatalf("pgcluster: %v", err)
	}
	return c
}

// newCluster makes the temporary directory, readable by the server user,
// and registers the cleanup that stops the server and removes it.
func newCluster(tb TB) (*Cluster, error) {
	tools, err := FindTools()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgcluster-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	c := &Cluster{tools: tools, dir: dir, data: filepath.Join(dir, "data"), log: filepath.Join(dir, "server.log")}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Stop(ctx, Immediate); err != nil {
			tb.Logf("pgcluster: %v", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			tb.Logf("pgcluster: remove %s: %v", dir, err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open temporary directory: %w", err)
	}
	if err := tools.GiveToServerUser(dir); err != nil {
		return nil, err
	}
	return c, nil
}

// configure appends the test settings and a replication line to the
// cluster's configuration files.
func (c *Cluster) configure() error {
	if err := appendFile(filepath.Join(c.data, "postgresql.conf"), testSettings); err != nil {
		return err
	}
	return appendFile(filepath.Join(c.data, "pg_hba.conf"), "\nhost replication all 127.0.0.1/32 trust\n")
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// startOnFreePort picks a free port and starts the server there, trying
// again with another port when one is taken between the pick and the start.
func (c *Cluster) startOnFreePort(ctx context.Context) error {
	var err error
	for range 3 {
		c.port, err = freePort()
		if err != nil {
			return err
		}
		if err = c.StartAgain(ctx); err == nil {
			return nil
		}
	}
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Port is the TCP port the cluster listens on; it stays the same across
// Stop and StartAgain.
func (c *Cluster) Port() int { return c.port }

// DataDir is the cluster's data directory.
func (c *Cluster) DataDir() string { return c.data }

// URL is a connection URL for database db as user postgres.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Stop shuts the server down in the given mode (thawing it first if
// frozen) and waits until it has stopped. Stopping a stopped cluster does
// nothing.
func (c *Cluster) Stop(ctx context.Context, mode StopMode) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	if err := c.thawLocked(); err != nil {
		return err
	}
	if err := c.tools.Run(ctx, "pg_ctl", "-D", c.data, "-m", string(mode), "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("stop cluster on port %d: %w", c.port, err)
	}
	c.running = false
	return nil
}

// StartAgain starts the server on its port and data directory and waits
// until it accepts connections (after crash recovery, following an
// Immediate stop). Starting a running cluster does nothing.
func (c *Cluster) StartAgain(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return nil
	}
	opts := fmt.Sprintf("-p %d -k %s", c.port, c.data)
	if err := c.tools.Run(ctx, "pg_ctl", "-D", c.data, "-l", c.log, "-o", opts, "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("start cluster on port %d: %w; server log: %s", c.port, err, c.logTail())
	}
	c.running = true
	return nil
}

// Restart stops the server in the given mode and starts it again.
func (c *Cluster) Restart(ctx context.Context, mode StopMode) error {
	if err := c.Stop(ctx, mode); err != nil {
		return err
	}
	return c.StartAgain(ctx)
}

// logTail is the end of the server log, for error messages.
func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return "(none)"
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}

// Replica takes a base backup of the running cluster (pg_basebackup -R,
// WAL streamed) into a new temporary directory and starts it as a hot
// standby streaming from this cluster, on a free port of its own. Cleanup
// is registered with tb. Caveat: the standby follows this cluster's port;
// if the primary is stopped, the standby keeps serving reads of what it has
// and reconnects when the primary returns.
func (c *Cluster) Replica(ctx context.Context, tb TB) *Cluster {
	tb.Helper()
	r, err := newCluster(tb)
	if err != nil {
		tb.Fatalf("pgcluster: %v", err)
	}
	if err := c.tools.Run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres",
		"-D", r.data, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		tb.Fatalf("pgcluster: base backup: %v", err)
	}
	if err := r.startOnFreePort(ctx); err != nil {
		tb.Fatalf("pgcluster: %v", err)
	}
	return r
}

// Running reports whether the cluster was last started and not stopped.
func (c *Cluster) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}
