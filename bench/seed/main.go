// Command seed fills a fresh PostgreSQL database for the read-path load
// benchmark: pro-plan users in storage mode, each with one connection, 2-3
// accounts, a few categories and a year of transactions, plus one API key
// per user written to a keys file. See BENCHMARKS.md.
//
//	go run ./bench/seed -database-url postgres://postgres@127.0.0.1:5432/finsync_bench?sslmode=disable \
//	    -users 1000 -transactions 1000000 -keys keys.txt
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"time"
)

// options are the command line.
type options struct {
	databaseURL  string
	users        int
	transactions int
	keysFile     string
	recreate     bool
	seed         uint64
}

// parseOptions reads the command line; usage and errors go to out.
func parseOptions(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.databaseURL, "database-url", "postgres://postgres@127.0.0.1:5432/finsync_bench?sslmode=disable", "database to fill; its name must contain \"bench\" when -recreate is on")
	fs.IntVar(&o.users, "users", 1000, "number of users")
	fs.IntVar(&o.transactions, "transactions", 1_000_000, "number of transactions, spread evenly over the users")
	fs.StringVar(&o.keysFile, "keys", "keys.txt", "file to write the API keys to, one per line")
	fs.BoolVar(&o.recreate, "recreate", true, "drop and create the database first")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed of the generated data")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.users < 1 || o.transactions < 0 {
		return o, errors.New("-users must be at least 1 and -transactions not negative")
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "seed:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, log.New(os.Stderr, "seed: ", log.Ltime)); err != nil {
		log.Fatalf("seed: %v", err)
	}
}

// run creates (or reuses) the database, fills it and writes the keys.
func run(ctx context.Context, o options, lg *log.Logger) error {
	if o.recreate {
		if err := recreateDatabase(ctx, o.databaseURL); err != nil {
			return err
		}
	}
	sd, err := openSeeder(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer sd.close()
	start := time.Now()
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	users := newUsers(rng, o.users)
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"migrate", sd.migrate},
		{"users, connections, accounts, categories", func(ctx context.Context) error { return sd.insertOwners(ctx, users) }},
		{"transactions", func(ctx context.Context) error {
			return sd.insertTransactions(ctx, newTxSource(rng, users, o.transactions, time.Now().UTC()))
		}},
		{"transfer detection", func(ctx context.Context) error { return sd.detectTransfers(ctx, users) }},
		{"API keys", func(ctx context.Context) error { return sd.issueKeys(ctx, users, o.keysFile) }},
		{"vacuum analyze", sd.analyze},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		lg.Printf("%s done in %s", s.name, time.Since(t).Round(time.Millisecond))
	}
	lg.Printf("seeded %d users and %d transactions in %s; keys in %s", o.users, o.transactions, time.Since(start).Round(time.Second), o.keysFile)
	return nil
}

// benchName reports whether a database name is clearly a benchmark's, so
// that -recreate never drops anything else.
func benchName(name string) bool { return strings.Contains(name, "bench") }
