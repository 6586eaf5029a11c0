// Command naive is the baseline of the read-path load benchmark: a bare
// net/http server with a pgx pool and one handler for GET /v2/transactions,
// written the obvious way. It authenticates the Bearer key with one SELECT
// per request, runs the same SQL as finsync's default transaction listing
// (without the listing version finsync reads with it for its page cache),
// scans into pgx's own column types and encodes with encoding/json a body
// of the same shape as finsync's. See BENCHMARKS.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18481", "listen address")
	dbURL := flag.String("database-url", "postgres://postgres@127.0.0.1:5432/finsync_bench?sslmode=disable", "PostgreSQL URL")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the serving time to this file")
	cacheAuth := flag.Bool("cache-auth", false, "look each key up once and remember its user (measures the listing alone)")
	flag.Parse()
	if *cpuProfile != "" {
		stopProfile, err := startProfile(*cpuProfile)
		if err != nil {
			log.Fatalf("naive: %v", err)
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dbURL, *cacheAuth); err != nil {
		log.Printf("naive: %v", err)
		os.Exit(1) //nolint:gocritic // the profile is of no use after a failure
	}
}

// startProfile starts a CPU profile into path and returns its stop.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// run serves until ctx ends.
func run(ctx context.Context, addr, dbURL string, cacheAuth bool) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("open database pool: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /v2/transactions", &handler{pool: pool, cacheAuth: cacheAuth})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("naive: listening on %s", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
