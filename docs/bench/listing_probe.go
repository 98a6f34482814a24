//go:build ignore

// listing_probe times the six listings of issue 21 in-process (3 rounds of 20
// timed calls after 3 warm-ups; p50/p95 in ms per round) on a SQLite file or a
// PostgreSQL schema (BENCHMARKS.md, "Quiet machines"):
//
//	go run -tags sqlite_fts5 docs/bench/listing_probe.go STORE.db
//	go run docs/bench/listing_probe.go 'postgres://...' SCHEMA
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "listing_probe:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: listing_probe STORE.db | listing_probe postgres://... SCHEMA")
	}
	ctx := context.Background()
	cfg := hs.Config{Path: os.Args[1], MustExist: true}
	if strings.HasPrefix(os.Args[1], "postgres") {
		if len(os.Args) < 3 {
			return fmt.Errorf("a PostgreSQL DSN needs a schema")
		}
		cfg = hs.Config{Driver: hs.DriverPostgres, DSN: os.Args[1], Schema: os.Args[2], MustExist: true}
	}
	st, err := hs.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	cases := []struct {
		name string
		o    repo.RichOptions
	}{
		{"by started_at", repo.RichOptions{Limit: 20}},
		{"by started_at, source cli", repo.RichOptions{Limit: 20, Source: "cli"}},
		{"by started_at, offset 5000", repo.RichOptions{Limit: 20, Offset: 5000}},
		{"by activity", repo.RichOptions{Limit: 20, OrderByLastActive: true}},
		{"by activity, source cli", repo.RichOptions{Limit: 20, OrderByLastActive: true, Source: "cli"}},
		{"by activity, offset 5000", repo.RichOptions{Limit: 20, OrderByLastActive: true, Offset: 5000}},
	}
	res := make([][]string, len(cases))
	for round := 0; round < 3; round++ {
		for i, c := range cases {
			var lat []time.Duration
			n := 0
			for k := 0; k < 23; k++ {
				t := time.Now()
				rows, err := st.Listing().Rich(ctx, c.o)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				n = len(rows)
				if k >= 3 {
					lat = append(lat, time.Since(t))
				}
			}
			sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
			res[i] = append(res[i], fmt.Sprintf("%.2f/%.2f (%d rows)", ms(lat[len(lat)/2]), ms(lat[len(lat)*95/100]), n))
		}
	}
	for i, c := range cases {
		fmt.Printf("| %s | %s |\n", c.name, strings.Join(res[i], " · "))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
