package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/bench"
)

func benchCmd(a *app) *cobra.Command {
	var o bench.Options
	var phases, jsonOut string
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run the corpus benchmark (bench_hermes.py's phases through the public API) and write its JSON",
		Long: `bench loads a corpus in bench_hermes.py's format (--corpus; by default it generates a smaller
built-in one) and runs the phases of ../shared/bench/bench_hermes.py through this library, each in its
own process on a fresh store: append (one message per call), append_sync_full (the same with
synchronous FULL, Hermes' setting), append_diag (where the append time goes), build (create + batch +
title per session), search (11 queries, limit 20, warm-ups + timed calls), listing (list 20 by
started_at and by last activity, replay and export of the 200-message session) and conc (OS processes
appending into one file). With --db postgres://... --schema S the phases append, build, search,
listing and conc run against that server: the store is the new schema S (ANALYZEd after the build),
the append and conc phases use S_append and S_conc; the bench refuses schemas that already hold
tables and drops the ones it made at the end (unless --keep). On SQLite every phase runs on a store it
makes itself (under --workdir): a SQLite --db is refused, and --store must hold only the corpus's
sessions (a store the build phase made), checked read-only before it is opened. Raw-SQL baselines on the same engine are measured in the same processes.
--json OUT writes bench_hermes.py's JSON shape, so that
  python3 ../shared/bench/bench_compare.py HERMES.json OUT
prints the side-by-side table. The full corpus: python3 bench_hermes.py --corpus-only --corpus FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if phases != "" {
				for _, p := range strings.Split(phases, ",") {
					if p = strings.TrimSpace(p); p != "" {
						o.Phases = append(o.Phases, p)
					}
				}
			}
			if a.engine != "" {
				// The phase processes inherit the engine (stores and raw
				// baselines alike).
				if err := (hs.Config{Engine: a.engine}).Validate(); err != nil {
					return err
				}
				if err := os.Setenv(hs.EngineEnv, a.engine); err != nil {
					return err
				}
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench: cannot find this executable to start phase processes: %w", err)
			}
			o.Spawn = benchSpawner(exe)
			if hs.IsPostgresDSN(a.dbPath) {
				// --db postgres://... --schema S: the phases run against
				// that server (schemas S, S_append, S_conc).
				o.PGDSN, o.PGSchema = a.dbPath, a.schema
			} else if a.dbPath != "" {
				// The SQLite phases each make a store of their own: a
				// --db file would be neither used nor protected.
				return usagef(cmd, "bench makes its own SQLite stores (under --workdir) and never writes into --db %s; --db applies to a PostgreSQL server (postgres://...); for the search and listing phases over a store the build phase made, give --store FILE", a.dbPath)
			}
			o.Command = "hermes-state " + strings.Join(os.Args[1:], " ")
			o.Commit = projectCommit()
			o.Log = a.errOut
			progress, finish := a.stepProgress() // a bar per phase
			o.Progress = progress
			doc, err := bench.Run(cmd.Context(), o)
			finish()
			if err != nil {
				if strings.HasPrefix(err.Error(), "bench: unknown phase") || strings.Contains(err.Error(), "need") {
					return invalidf("%s", err.Error())
				}
				return err
			}
			if jsonOut != "" {
				b, err := json.MarshalIndent(doc, "", " ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
					return err
				}
				fmt.Fprintf(a.errOut, "wrote %s\n", jsonOut)
			}
			w := a.text()
			printBench(w, doc)
			return w.Flush()
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Corpus, "corpus", "", "corpus file in bench_hermes.py's format (default: generate the built-in corpus)")
	fl.IntVar(&o.Gen.Sessions, "sessions", 2000, "built-in corpus: store sessions")
	fl.IntVar(&o.Gen.PerSession, "per-session", 20, "built-in corpus: messages per store session")
	fl.IntVar(&o.Gen.LongN, "long-n", 200, "built-in corpus: messages of the long session")
	fl.IntVar(&o.Gen.AppendN, "append-n", 5000, "built-in corpus: appends in all")
	fl.IntVar(&o.Gen.AppendSessions, "append-sessions", 5, "built-in corpus: sessions the appends go to")
	fl.Int64Var(&o.Gen.Seed, "seed", 20260712, "built-in corpus: random seed")
	fl.StringVar(&phases, "phases", "", "comma-separated phases (default all: "+strings.Join(bench.Phases, ",")+")")
	fl.StringVar(&o.Store, "store", "", "existing store built from the same corpus, for search and listing without the build phase")
	fl.IntVar(&o.Runs, "runs", 1, "runs of all phases")
	fl.IntVar(&o.Reps, "reps", 30, "timed calls per search query and listing call")
	fl.IntVar(&o.Warmup, "warmup", 3, "warm-up calls before the timed ones")
	fl.IntVar(&o.DiagN, "diag-n", 2000, "appends per append_diag variant")
	fl.IntVar(&o.Procs, "procs", 4, "conc: writer processes")
	fl.IntVar(&o.ProcAppends, "proc-appends", 500, "conc: appends per process")
	fl.BoolVar(&o.NoRaw, "no-raw", false, "leave out the raw-SQL baselines")
	fl.StringVar(&o.ProfileDir, "cpuprofile", "", "write a CPU profile of every phase process into this directory (PHASE.cpu.pprof)")
	fl.StringVar(&o.WorkDir, "workdir", "", "parent of the run directories (default the system temp dir)")
	fl.BoolVar(&o.Keep, "keep", false, "keep the run directories (stores, generated corpus)")
	fl.StringVar(&jsonOut, "json", "", "write the results as JSON (bench_hermes.py's shape) to this file")
	return c
}

// benchSpawner re-executes this binary as "bench-worker ARGS" (a test
// binary too: runMainEnv makes its TestMain run main).
func benchSpawner(exe string) bench.Spawner {
	return func(ctx context.Context, args []string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, append([]string{"bench-worker"}, args...)...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		return cmd
	}
}

func benchWorkerCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "bench-worker",
		Short:              "One phase of the bench command (started by bench)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			return bench.Worker(cmd.Context(), args, benchSpawner(exe), a.out)
		},
	}
}

// projectCommit is the VCS revision the binary was built from, else the
// one of the git checkout in the working directory ("" when unknown).
func projectCommit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value[:min(12, len(s.Value))]
			}
		}
	}
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// printBench writes a short summary of every run: each figure, with the
// raw-SQL baseline of the same run beside it where there is one.
func printBench(w io.Writer, d *bench.Doc) {
	c := d.Meta.Corpus
	engine := "SQLite " + d.Meta.SQLiteVersion + " (" + d.Meta.Engine + " engine)"
	if d.Meta.Backend == "postgres" {
		engine = d.Meta.PostgresVersion
		if i := strings.Index(engine, " on "); i > 0 {
			engine = engine[:i]
		}
		engine += fmt.Sprintf(" (schema %v)", d.Meta.Params["pg_schema"])
	}
	fmt.Fprintf(w, "corpus %s: %d sessions, %d messages (sha256 %.16s…); %s, %s\n", c.Path, c.Sessions, c.Messages, c.SHA256, engine, d.Meta.Go)
	ratio := func(a, b float64) string {
		if b == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2fx raw)", a/b)
	}
	for i, r := range d.Runs {
		fmt.Fprintf(w, "run %d, load average %s -> %s\n", i+1, r.LoadAvgStart, r.LoadAvgEnd)
		for _, ap := range []struct {
			name string
			r    *bench.AppendResult
		}{{"append (synchronous NORMAL)", r.Append}, {"append (synchronous FULL)", r.AppendSyncFull}} {
			if ap.r == nil {
				continue
			}
			fmt.Fprintf(w, "  %s: %.0f msg/s, %.0f cpu-µs/msg, p50 %.2f ms, p99 %.2f ms, max %.1f ms", ap.name, ap.r.MessagesPerS,
				ap.r.CPUUSPerMessage, ap.r.Latency.MedianMS, ap.r.Latency.P99MS, ap.r.Latency.MaxMS)
			if ap.r.RawSQL != nil {
				fmt.Fprintf(w, "; raw SQL %.0f msg/s, %.0f cpu-µs/msg", ap.r.RawSQL.MessagesPerS, ap.r.RawSQL.CPUUSPerMessage)
			}
			fmt.Fprintln(w)
		}
		if dg := r.AppendDiag; dg != nil {
			fmt.Fprintf(w, "  append_diag msg/s: API FULL %.0f, API NORMAL %.0f, API without search triggers %.0f, bare INSERT without search triggers %.0f",
				dg.APISyncFull.MessagesPerS, dg.APISyncNormal.MessagesPerS, dg.APISyncNormalNoFTSTriggers.MessagesPerS, dg.BareInsertSyncNormalNoFTS.MessagesPerS)
			if dg.RawInsertSyncNormalAllTriggers != nil {
				fmt.Fprintf(w, ", raw INSERT with every trigger %.0f", dg.RawInsertSyncNormalAllTriggers.MessagesPerS)
			}
			fmt.Fprintln(w)
		}
		if b := r.Build; b != nil {
			fmt.Fprintf(w, "  build: %d sessions, %d messages in %.1f s (create %.1f, batch %.1f, title %.1f); file %.1f MB\n", b.Sessions, b.Messages,
				b.Seconds, b.SecondsCreateSession, b.SecondsReplaceMessages, b.SecondsSetSessionTitle, float64(b.FileBytesAfterClose["state.db"]+b.FileBytesAfterClose["schema_total"])/1e6)
		}
		if s := r.Search; s != nil {
			names := make([]string, 0, len(s.Queries))
			for _, q := range bench.Queries {
				if _, ok := s.Queries[q.Name]; ok {
					names = append(names, q.Name)
				}
			}
			for _, n := range names {
				q := s.Queries[n]
				fmt.Fprintf(w, "  search %-18s %-14q p50 %7.2f ms  p95 %7.2f ms  %2d returned, %6d matching, %s", n, q.Query, q.MedianMS, q.P95MS, q.ResultsReturned, q.MatchingRows, q.Path)
				if q.RawSQLMedianMS != nil {
					fmt.Fprintf(w, "; raw SQL p50 %.2f ms%s", *q.RawSQLMedianMS, ratio(q.MedianMS, *q.RawSQLMedianMS))
				}
				fmt.Fprintln(w)
			}
		}
		if l := r.Listing; l != nil {
			raw := func(k string) float64 {
				if t, ok := l.RawSQL[k]; ok {
					b, _ := json.Marshal(t)
					var v struct {
						M float64 `json:"median_ms"`
					}
					_ = json.Unmarshal(b, &v)
					return v.M
				}
				return 0
			}
			for _, x := range []struct {
				name string
				t    *bench.ListTiming
				raw  string
			}{{"list 20 by started_at", l.ListStarted, "list_started_at"}, {"list 20 by last activity", l.ListLastActive, "list_last_active_index"},
				{"replay of the long session", l.Conversation, "replay_200"}, {"export of the long session", l.Export, "export_200"}} {
				fmt.Fprintf(w, "  %-28s p50 %7.2f ms  p95 %7.2f ms  cpu %6.2f ms/call", x.name, x.t.MedianMS, x.t.P95MS, x.t.CPUMSPerCall)
				if rv := raw(x.raw); rv > 0 {
					fmt.Fprintf(w, "; raw SQL p50 %.2f ms%s", rv, ratio(x.t.MedianMS, rv))
				}
				if rv := raw("list_last_active_full"); rv > 0 && x.raw == "list_last_active_index" {
					fmt.Fprintf(w, "; raw SQL computing every session %.2f ms", rv)
				}
				fmt.Fprintln(w)
			}
		}
		if cc := r.Conc; cc != nil && cc.Latency != nil {
			fmt.Fprintf(w, "  conc %dx%d: %.0f appends/s, p50 %.2f p95 %.2f p99 %.2f max %.1f ms; acknowledged %d, found %d, lost %d, errors %d, integrity %s\n",
				cc.Procs, cc.AppendsPerProc, cc.ThroughputAppendsPerS, cc.Latency.MedianMS, cc.Latency.P95MS, cc.Latency.P99MS, cc.Latency.MaxMS,
				cc.Acknowledged, cc.Found, cc.Lost, cc.Errors, cc.IntegrityCheck)
		}
	}
}
