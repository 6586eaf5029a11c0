package pgcluster_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/finsync/finsync/internal/pgcluster"
)

func connect(t *testing.T, ctx context.Context, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func count(t *testing.T, ctx context.Context, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatalf("count notes: %v", err)
	}
	return n
}

// TestStopStartKeepsPortAndData stops the cluster in both modes and starts it
// again: same port, committed rows still there, connections refused while
// it is down.
func TestStopStartKeepsPortAndData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := pgcluster.Start(ctx, t)
	url := c.URL("postgres")
	conn := connect(t, ctx, url)
	if _, err := conn.Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY); INSERT INTO notes VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	port := c.Port()
	for i, mode := range []pgcluster.StopMode{pgcluster.Fast, pgcluster.Immediate} {
		if err := c.Stop(ctx, mode); err != nil {
			t.Fatalf("stop %s: %v", mode, err)
		}
		if c.Running() {
			t.Fatalf("Running after stop %s", mode)
		}
		if _, err := pgx.Connect(ctx, url); err == nil {
			t.Fatalf("connected while stopped (%s)", mode)
		}
		if err := c.StartAgain(ctx); err != nil {
			t.Fatalf("start after %s: %v", mode, err)
		}
		if c.Port() != port {
			t.Fatalf("port moved from %d to %d", port, c.Port())
		}
		conn := connect(t, ctx, url)
		if _, err := conn.Exec(ctx, `INSERT INTO notes VALUES ($1)`, i+2); err != nil {
			t.Fatalf("insert after %s restart: %v", mode, err)
		}
		if n := count(t, ctx, conn); n != i+2 {
			t.Fatalf("after %s restart: %d rows, want %d", mode, n, i+2)
		}
	}
}

// TestReplicaStreams creates a hot standby and sees a row committed on the
// primary arrive there; the standby refuses writes.
func TestReplicaStreams(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	primary := pgcluster.Start(ctx, t)
	pconn := connect(t, ctx, primary.URL("postgres"))
	if _, err := pconn.Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY); INSERT INTO notes VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	replica := primary.Replica(ctx, t)
	if replica.Port() == primary.Port() {
		t.Fatalf("replica shares the primary's port %d", primary.Port())
	}
	rconn := connect(t, ctx, replica.URL("postgres"))
	var inRecovery bool
	if err := rconn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil || !inRecovery {
		t.Fatalf("replica in recovery = %v, %v; want true", inRecovery, err)
	}
	if _, err := pconn.Exec(ctx, `INSERT INTO notes VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for count(t, ctx, rconn) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("row committed on the primary never reached the replica")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := rconn.Exec(ctx, `INSERT INTO notes VALUES (3)`); err == nil {
		t.Fatal("replica accepted a write")
	}
}

// TestCleanupRemovesDirectory checks that a finished test leaves no data
// directory or server behind.
func TestCleanupRemovesDirectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var data, url string
	t.Run("cluster", func(t *testing.T) {
		c := pgcluster.Start(ctx, t)
		data, url = c.DataDir(), c.URL("postgres")
	})
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data directory %s still there: %v", data, err)
	}
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatal("server still accepts connections after cleanup")
	}
}

// TestFreezeHangsConnections freezes the server: a connection attempt and
// a query on an open connection both hang until their deadline, and both
// work again after Thaw.
func TestFreezeHangsConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := pgcluster.Start(ctx, t)
	open := connect(t, ctx, c.URL("postgres"))
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if _, err := pgx.Connect(short, c.URL("postgres")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("connect to a frozen server: %v, want a deadline error", err)
	}
	short2, cancelShort2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort2()
	if _, err := open.Exec(short2, `SELECT 1`); err == nil {
		t.Fatal("a query on a frozen server returned")
	}
	if err := c.Thaw(); err != nil {
		t.Fatal(err)
	}
	again := connect(t, ctx, c.URL("postgres"))
	if _, err := again.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatalf("query after thaw: %v", err)
	}
}
