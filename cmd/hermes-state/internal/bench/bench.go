// Package bench is hermesstate's side of the corpus benchmark against
// Hermes (../shared/bench/bench_hermes.py): the same corpus format, the same
// phases through the public API (append, append_diag, build, search,
// listing, conc), and JSON in bench_hermes.py's shape, so that
// bench_compare.py puts the two side by side. Each phase can run in its own
// OS process (Options.Spawn), as bench_hermes.py does, so its peak RSS is
// its own; the conc phase needs processes for its writers. Raw-SQL
// baselines on the same engine are measured in the same phase processes.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Phases in the order they run (bench_hermes.py's, plus append_sync_full:
// the append phase again with synchronous FULL, Hermes' setting).
var Phases = []string{"append", "append_sync_full", "append_diag", "build", "search", "listing", "conc"}

// Spawner returns a command that runs Worker(args) in a new process of
// this program (re-executing the binary with a hidden subcommand).
type Spawner func(ctx context.Context, args []string) *exec.Cmd

// Options configure Run.
type Options struct {
	// Corpus is a bench_hermes.py corpus file; empty generates the
	// built-in one (Gen) in the work directory.
	Corpus string
	Gen    GenOptions
	// Phases to run (default all, see Phases). search and listing use the
	// store the build phase made, or Store.
	Phases []string
	// Store is an existing store built from the same corpus for search
	// and listing (the build phase is then not needed). A store holding a
	// session the corpus does not have is refused (ErrConflict) before it
	// is opened for writing.
	Store string
	// Runs repeats the phases (default 1); Reps and Warmup time each
	// search/listing call (default 30 and 3).
	Runs, Reps, Warmup int
	// DiagN appends per append_diag variant (default 2,000); Procs x
	// ProcAppends the conc phase (default 4 x 500).
	DiagN, Procs, ProcAppends int
	// NoRaw leaves out the raw-SQL baselines.
	NoRaw bool
	// ProfileDir, when set, receives a CPU profile of every phase process
	// (PHASE.cpu.pprof, for go tool pprof).
	ProfileDir string
	// WorkDir is the parent of the per-run directories (default the system
	// temp dir); Keep keeps them.
	WorkDir string
	Keep    bool
	// Spawn runs phases in their own processes; nil runs them in this
	// process (the conc phase then fails: it needs processes).
	Spawn Spawner
	// Progress, when set, is called as a phase advances.
	Progress func(phase string, done, total int64)
	// Log, when set, receives one line per finished phase.
	Log io.Writer
	// Command, Commit and Cwd go into the meta block.
	Command, Commit string
	// PGDSN, when set, runs the phases against that PostgreSQL server
	// (pg.go): the store is schema PGSchema, the append and conc phases
	// get PGSchema_append and PGSchema_conc.
	PGDSN, PGSchema string
}

func (o Options) withDefaults() Options {
	if len(o.Phases) == 0 {
		o.Phases = Phases
		if o.PGDSN != "" {
			o.Phases = PGPhases
		}
	}
	if o.PGDSN != "" {
		o.NoRaw = true // the baselines run SQLite's statements
	}
	if o.Runs <= 0 {
		o.Runs = 1
	}
	if o.Reps <= 0 {
		o.Reps = 30
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 3
	}
	if o.DiagN <= 0 {
		o.DiagN = 2000
	}
	if o.Procs <= 0 {
		o.Procs = 4
	}
	if o.ProcAppends <= 0 {
		o.ProcAppends = 500
	}
	return o
}

// Doc is the JSON document: bench_hermes.py's shape.
type Doc struct {
	Meta Meta         `json:"meta"`
	Runs []*RunResult `json:"runs"`
}

// Meta describes the machine, the program and the corpus.
type Meta struct {
	Tool          string `json:"tool"`
	Command       string `json:"command"`
	Nproc         int    `json:"nproc"`
	CPUModel      string `json:"cpu_model"`
	Go            string `json:"go"`
	SQLiteVersion string `json:"sqlite_version"`
	// Engine is the SQLite engine of the store and of the raw baselines
	// ("go" or "c": HERMES_STATE_ENGINE, which bench --engine sets).
	Engine        string         `json:"engine"`
	Platform      string         `json:"platform"`
	ProjectCommit string         `json:"project_commit"`
	Params        map[string]any `json:"params"`
	Corpus        *CorpusStats   `json:"corpus"`
	TempFSType    string         `json:"temp_fs_type,omitempty"`
	// Backend is "postgres" for a PostgreSQL bench (empty: SQLite), with
	// the server's version and settings.
	Backend          string            `json:"backend,omitempty"`
	PostgresVersion  string            `json:"postgres_version,omitempty"`
	PostgresSettings map[string]string `json:"postgres_settings,omitempty"`
}

// RunResult is one run: one object per phase, bench_hermes.py's keys.
type RunResult struct {
	StartedAt         string           `json:"started_at"`
	LoadAvgStart      string           `json:"load_avg_start"`
	Append            *AppendResult    `json:"append,omitempty"`
	AppendSyncFull    *AppendResult    `json:"append_sync_full,omitempty"`
	AppendDiag        *DiagResult      `json:"append_diag,omitempty"`
	Build             *BuildResult     `json:"build,omitempty"`
	Search            *SearchResult    `json:"search,omitempty"`
	Listing           *ListingResult   `json:"listing,omitempty"`
	StoreFileBytesEnd map[string]int64 `json:"store_file_bytes_end,omitempty"`
	Conc              *ConcResult      `json:"conc,omitempty"`
	LoadAvgEnd        string           `json:"load_avg_end"`
}

// params is what one phase process receives.
type params struct {
	Phase    string `json:"phase"`
	Corpus   string `json:"corpus"`
	DB       string `json:"db"`
	Result   string `json:"result"`
	Reps     int    `json:"reps"`
	Warmup   int    `json:"warmup"`
	Sync     string `json:"sync,omitempty"`
	DiagN    int    `json:"diag_n,omitempty"`
	Procs    int    `json:"procs,omitempty"`
	N        int    `json:"n,omitempty"`
	K        int    `json:"k,omitempty"`
	Go       string `json:"go,omitempty"`
	Ready    string `json:"ready,omitempty"`
	LongID   string `json:"long_id,omitempty"`
	Raw      bool   `json:"raw"`
	Profile  string `json:"profile,omitempty"`
	PGDSN    string `json:"pg_dsn,omitempty"`
	PGSchema string `json:"pg_schema,omitempty"`
	InProc   bool   `json:"-"`
	spawn    Spawner
	report   func(done, total int64)
}

type phaseFunc func(ctx context.Context, p *params) (any, error)

var phaseFuncs map[string]phaseFunc

func init() {
	phaseFuncs = map[string]phaseFunc{
		"append": func(ctx context.Context, p *params) (any, error) { return phaseAppend(ctx, p) },
		"append_diag": func(ctx context.Context, p *params) (any, error) {
			return phaseDiag(ctx, p)
		},
		"build":       func(ctx context.Context, p *params) (any, error) { return phaseBuild(ctx, p) },
		"search":      func(ctx context.Context, p *params) (any, error) { return phaseSearch(ctx, p) },
		"listing":     func(ctx context.Context, p *params) (any, error) { return phaseListing(ctx, p) },
		"conc":        func(ctx context.Context, p *params) (any, error) { return phaseConc(ctx, p) },
		"conc_worker": func(ctx context.Context, p *params) (any, error) { return concWorker(ctx, p) },
	}
}

// Worker runs one phase in this process from the arguments the
// orchestrator gave its Spawner ("--phase NAME --params JSON"), writing
// progress lines to stdout and the result to the result file. It returns
// an error when the arguments are malformed or the phase fails.
func Worker(ctx context.Context, args []string, spawn Spawner, stdout io.Writer) error {
	var name, raw string
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--phase":
			name = args[i+1]
		case "--params":
			raw = args[i+1]
		}
	}
	fn := phaseFuncs[name]
	if fn == nil {
		return fmt.Errorf("bench: unknown phase %q", name)
	}
	p := &params{}
	if err := json.Unmarshal([]byte(raw), p); err != nil {
		return fmt.Errorf("bench: phase parameters: %w", err)
	}
	p.spawn = spawn
	setPG(p)
	var last time.Time
	p.report = func(done, total int64) {
		if done == total || time.Since(last) > 100*time.Millisecond {
			last = time.Now()
			fmt.Fprintf(stdout, "progress %d %d\n", done, total)
		}
	}
	if p.Profile != "" && name != "conc_worker" {
		f, err := os.Create(p.Profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	res, err := fn(ctx, p)
	if err != nil {
		return err
	}
	if res == nil {
		return nil
	}
	return writeJSON(p.Result, res)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// runPhase runs one phase (in a new process when o.Spawn is set) and
// decodes its result into out.
func runPhase(ctx context.Context, o *Options, p *params, out any) error {
	start := time.Now()
	p.Raw = !o.NoRaw
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return err
		}
		p.Profile = filepath.Join(o.ProfileDir, p.Phase+".cpu.pprof")
	}
	p.Reps, p.Warmup = o.Reps, o.Warmup
	p.PGDSN, p.PGSchema = o.PGDSN, o.PGSchema
	if err := os.MkdirAll(filepath.Dir(p.DB), 0o755); err != nil {
		return err
	}
	p.Result = filepath.Join(filepath.Dir(p.DB), "_"+p.Phase+"_result.json")
	report := func(done, total int64) {
		if o.Progress != nil {
			o.Progress(p.Phase, done, total)
		}
	}
	name := p.Phase
	if name == "append_sync_full" {
		name = "append"
	}
	if o.Spawn == nil {
		p.report = report
		setPG(p)
		res, err := phaseFuncs[name](ctx, p)
		if err != nil {
			return fmt.Errorf("bench: phase %s: %w", p.Phase, err)
		}
		if err := writeJSON(p.Result, res); err != nil {
			return err
		}
	} else {
		raw, _ := json.Marshal(p)
		cmd := o.Spawn(ctx, []string{"--phase", name, "--params", string(raw)})
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("bench: start phase %s: %w", p.Phase, err)
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var done, total int64
			if n, _ := fmt.Sscanf(sc.Text(), "progress %d %d", &done, &total); n == 2 {
				report(done, total)
			}
		}
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("bench: phase %s: %w: %s", p.Phase, err, lastLines(stderr.String(), 5))
		}
	}
	b, err := os.ReadFile(p.Result)
	if err != nil {
		return fmt.Errorf("bench: phase %s wrote no result: %w", p.Phase, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return err
	}
	// phase_wall_s: set on the decoded struct through its PhaseWall field.
	if w, ok := out.(interface{ setWall(float64) }); ok {
		w.setWall(round2(time.Since(start).Seconds()))
	}
	if o.Log != nil {
		fmt.Fprintf(o.Log, "  %s: done in %.2f s\n", p.Phase, time.Since(start).Seconds())
	}
	return nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

// PhaseInfo is embedded in every phase result.
type PhaseInfo struct {
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	PhaseWallS float64 `json:"phase_wall_s"`
}

func (p *PhaseInfo) setWall(s float64) { p.PhaseWallS = s }

// Run runs the benchmark and returns the document. It returns an error when
// the corpus cannot be read or generated, a phase fails, or ctx ends.
func Run(ctx context.Context, o Options) (*Doc, error) {
	o = o.withDefaults()
	if err := o.checkPhases(); err != nil {
		return nil, err
	}
	var pgVersion string
	var pgSet map[string]string
	if o.PGDSN != "" {
		if err := o.pgCheck(ctx); err != nil {
			return nil, err
		}
		var err error
		if pgVersion, pgSet, err = pgMeta(ctx, o.PGDSN); err != nil {
			return nil, err
		}
	}
	base, err := os.MkdirTemp(o.WorkDir, "hermesstate-bench-")
	if err != nil {
		return nil, err
	}
	if !o.Keep {
		defer os.RemoveAll(base)
	}
	corpus, cst, err := o.corpus(base)
	if err != nil {
		return nil, err
	}
	if o.Store != "" && !o.want("build") && o.PGDSN == "" {
		if err := checkOwnStore(ctx, o.Store, corpus); err != nil {
			return nil, err
		}
	}
	sets, err := corpusMeta(corpus)
	if err != nil {
		return nil, err
	}
	doc := &Doc{Meta: Meta{Tool: "hermes-state bench", Command: o.Command, Nproc: runtime.NumCPU(), CPUModel: cpuModel(),
		Go: runtime.Version(), SQLiteVersion: sqliteVersion(), Engine: engineName(), Platform: runtime.GOOS + "/" + runtime.GOARCH + " " + kernel(),
		ProjectCommit: o.Commit, Corpus: cst, TempFSType: fsType(base),
		Params: map[string]any{"corpus": cst.Path, "sets": sets, "phases": o.Phases, "runs": o.Runs, "reps": o.Reps,
			"warmup": o.Warmup, "diag_n": o.DiagN, "procs": o.Procs, "proc_appends": o.ProcAppends, "raw_sql": !o.NoRaw,
			"store": o.Store}}}
	if o.PGDSN != "" {
		doc.Meta.Backend, doc.Meta.PostgresVersion, doc.Meta.PostgresSettings = "postgres", pgVersion, pgSet
		doc.Meta.Params["pg_schema"] = o.PGSchema
	}
	longID, err := longSessionID(corpus)
	if err != nil {
		return nil, err
	}
	for i := 0; i < o.Runs; i++ {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "run %d/%d in %s\n", i+1, o.Runs, base)
		}
		dir := filepath.Join(base, "run"+strconv.Itoa(i+1))
		r, err := o.runOnce(ctx, dir, corpus, longID)
		if o.PGDSN != "" && (!o.Keep || i < o.Runs-1) {
			if derr := o.pgDrop(context.WithoutCancel(ctx)); err == nil {
				err = derr
			}
		}
		if err != nil {
			return nil, err
		}
		doc.Runs = append(doc.Runs, r)
		if !o.Keep {
			os.RemoveAll(dir)
		}
	}
	return doc, nil
}

// want reports whether phase ph is to run.
func (o *Options) want(ph string) bool { return slices.Contains(o.Phases, ph) }

// checkPhases refuses unknown phases and phases whose prerequisites are
// missing.
func (o *Options) checkPhases() error {
	for _, ph := range o.Phases {
		if !slices.Contains(Phases, ph) {
			return fmt.Errorf("bench: unknown phase %q (phases: %s)", ph, strings.Join(Phases, ", "))
		}
	}
	if (o.want("search") || o.want("listing")) && !o.want("build") && o.Store == "" && o.PGDSN == "" {
		return errors.New("bench: the search and listing phases need the build phase or an existing store (Store)")
	}
	if o.want("conc") && o.Spawn == nil {
		return errors.New("bench: the conc phase needs worker processes (Spawn)")
	}
	return nil
}

// corpus returns the corpus file (the given one, or the built-in corpus
// generated under base) and its statistics.
func (o *Options) corpus(base string) (string, *CorpusStats, error) {
	if o.Corpus != "" {
		cst, err := Stats(o.Corpus)
		return o.Corpus, cst, err
	}
	corpus := filepath.Join(base, "corpus.jsonl")
	if o.Log != nil {
		fmt.Fprintln(o.Log, "generating the built-in corpus ...")
	}
	cst, err := GenerateCorpus(corpus, o.Gen)
	return corpus, cst, err
}

// runOnce runs every selected phase once, in dir.
func (o *Options) runOnce(ctx context.Context, dir, corpus, longID string) (*RunResult, error) {
	r := &RunResult{StartedAt: time.Now().UTC().Format("2006-01-02T15:04:05Z"), LoadAvgStart: loadAvg()}
	store := filepath.Join(dir, "store", "state.db")
	if o.Store != "" && !o.want("build") {
		store = o.Store
	}
	mk := func(ph, sub string) *params {
		db := filepath.Join(dir, sub, "state.db")
		if sub == "store" {
			db = store
		}
		return &params{Phase: ph, Corpus: corpus, DB: db, LongID: longID}
	}
	for _, ph := range o.Phases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		switch ph {
		case "append":
			p := mk(ph, "append")
			p.Sync = "NORMAL"
			r.Append = &AppendResult{}
			err = runPhase(ctx, o, p, r.Append)
		case "append_sync_full":
			p := mk(ph, "append_full")
			p.Sync = "FULL"
			r.AppendSyncFull = &AppendResult{}
			err = runPhase(ctx, o, p, r.AppendSyncFull)
		case "append_diag":
			p := mk(ph, "diag")
			p.DiagN = o.DiagN
			r.AppendDiag = &DiagResult{}
			err = runPhase(ctx, o, p, r.AppendDiag)
		case "build":
			r.Build = &BuildResult{}
			err = runPhase(ctx, o, mk(ph, "store"), r.Build)
		case "search":
			r.Search = &SearchResult{}
			err = runPhase(ctx, o, mk(ph, "store"), r.Search)
		case "listing":
			r.Listing = &ListingResult{}
			err = runPhase(ctx, o, mk(ph, "store"), r.Listing)
			if err == nil {
				r.StoreFileBytesEnd = fileSizes(store)
				if o.PGDSN != "" {
					r.StoreFileBytesEnd = pgSchemaBytes(ctx, store)
				}
			}
		case "conc":
			p := mk(ph, "conc")
			p.Procs, p.N = o.Procs, o.ProcAppends
			r.Conc = &ConcResult{}
			err = runPhase(ctx, o, p, r.Conc)
		}
		if err != nil {
			return nil, err
		}
	}
	r.LoadAvgEnd = loadAvg()
	return r, nil
}

// longSessionID is the id of the corpus's "long" session ("" when none).
func longSessionID(corpus string) (string, error) {
	var id string
	err := ReadCorpus(corpus, map[string]bool{"long": true}, func(s *CorpusSession, _ []CorpusMessage) error {
		if id == "" {
			id = s.ID
		}
		return nil
	})
	return id, err
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if _, v, ok := strings.Cut(l, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// fsType is the type of the file system holding path (from /proc/mounts).
func fsType(path string) string {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return "?"
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	best, typ := "", "?"
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(real, f[1]) && len(f[1]) > len(best) {
			best, typ = f[1], f[2]
		}
	}
	return typ
}
