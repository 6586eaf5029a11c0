// Command profserve serves finsync's API the way `finsync serve` does (same
// pool options, api.New with request logging to stderr and a Prometheus
// registry, the credential listener running) and writes a CPU profile of
// the whole serving time, for `go tool pprof`. It is the profiling half of
// the read-path load benchmark (BENCHMARKS.md); the figures themselves are
// always taken from the real binary.
//
//	go run ./bench/profserve -cpuprofile cpu.pprof   # then load it, stop with Ctrl-C or SIGTERM
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/finsync/finsync/api"
	"github.com/finsync/finsync/config"
	"github.com/finsync/finsync/providers/all"
	"github.com/finsync/finsync/storage"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18482", "API listen address")
	dbURL := flag.String("database-url", "postgres://postgres@127.0.0.1:5432/finsync_bench?sslmode=disable", "PostgreSQL URL")
	cpuProfile := flag.String("cpuprofile", "cpu.pprof", "CPU profile to write")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dbURL, *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "profserve:", err)
		os.Exit(1)
	}
}

// run serves the API until ctx ends, profiling the CPU all along.
func run(ctx context.Context, addr, dbURL, profile string) error {
	f, err := os.Create(profile)
	if err != nil {
		return fmt.Errorf("create profile: %w", err)
	}
	defer f.Close()
	pool, err := storage.Open(ctx, dbURL, storage.Options{})
	if err != nil {
		return err
	}
	defer pool.Close()
	st := storage.New(pool)
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv, err := api.New(api.Config{Providers: all.NewRegistry().Profiles(), Store: st, Log: log, CursorKey: []byte("load-benchmark-cursor-key-0123456789"), Metrics: reg,
		PageCacheBytes: config.DefaultPageCacheMB << 20})
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("start profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { srv.Run(ctx); return nil })
	g.Go(func() error { return api.Serve(ctx, addr, srv.Handler, log) })
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
