package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// runMainEnv makes a Go test binary behave as this CLI (see TestMain in
// stress_test.go); the stress command sets it for its workers so that it
// can re-execute whichever binary it runs in.
const runMainEnv = "HERMES_STATE_RUN_MAIN"

// stressStoreEnv passes a PostgreSQL DSN to the workers (the environment is
// readable by the same user only, a command line by everyone).
const stressStoreEnv = "HERMES_STATE_STRESS_DSN"

// StressReport is the JSON the stress command prints.
type StressReport struct {
	DB string `json:"db"`
	// Temporary: DB is the store stress made for this run (no --db was
	// given), removed when the run ends.
	Temporary      bool  `json:"temporary"`
	Procs          int   `json:"procs"`
	AppendsPerProc int   `json:"appends_per_proc"`
	BusyTimeoutMS  int64 `json:"busy_timeout_ms"`
	// Acknowledged: appends whose Append call returned nil.
	Acknowledged int `json:"acknowledged"`
	// Found: acknowledged messages present in the file (at least once).
	Found int `json:"found"`
	// Lost: acknowledged messages missing from the file.
	Lost int `json:"lost"`
	// Duplicates: messages present more than once (extra copies).
	Duplicates int `json:"duplicates"`
	// UnacknowledgedFound: messages whose Append failed but that are in the
	// file anyway (a failure reported for a write that committed).
	UnacknowledgedFound int `json:"unacknowledged_found"`
	// Errors counts failed appends by kind (busy, conflict, storage, ...).
	Errors      map[string]int `json:"errors"`
	ErrorsTotal int            `json:"errors_total"`
	// ReadErrors counts failed reads (searches) by kind.
	ReadErrors map[string]int `json:"read_errors"`
	// CountersConsistent: message_count equals the row count for every
	// session written to.
	CountersConsistent bool     `json:"counters_consistent"`
	CounterMismatches  []string `json:"counter_mismatches,omitempty"`
	// Latency of one Append call (one transaction), in milliseconds.
	LatencyMS Percentiles `json:"latency_ms"`
	// SlowAppends counts appends that took longer than 100 ms and 250 ms.
	SlowAppends map[string]int `json:"slow_appends"`
	// ReadLatencyMS: latency of the searches done between appends.
	ReadLatencyMS Percentiles `json:"read_latency_ms"`
	Reads         int         `json:"reads"`
	// SearchMisses: searches for the unique word of the worker's last
	// acknowledged message that did not return exactly that message.
	SearchMisses int     `json:"search_misses"`
	ElapsedS     float64 `json:"elapsed_s"`
	// ThroughputPerS: acknowledged appends per second of wall time, all
	// processes together.
	ThroughputPerS float64  `json:"throughput_per_s"`
	WorkerFailures []string `json:"worker_failures,omitempty"`
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(ns []int64) Percentiles {
	if len(ns) == 0 {
		return Percentiles{}
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return round3(float64(s[i]) / 1e6)
	}
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: round3(float64(s[len(s)-1]) / 1e6)}
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// workerLine is one line a worker prints on stdout.
type workerLine struct {
	T       string `json:"t"` // ready, ack, err, read, done
	Session string `json:"session,omitempty"`
	Seq     int    `json:"seq,omitempty"`
	ID      int64  `json:"id,omitempty"`
	NS      int64  `json:"ns,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Msg     string `json:"msg,omitempty"`
}

func errKind(err error) string {
	for _, k := range []struct {
		e    error
		name string
	}{{hs.ErrBusy, "busy"}, {hs.ErrConflict, "conflict"}, {hs.ErrNotFound, "not_found"}, {hs.ErrInvalid, "invalid"},
		{hs.ErrCorrupt, "corrupt"}, {hs.ErrClosed, "closed"}, {hs.ErrStorage, "storage"}, {context.Canceled, "canceled"}} {
		if errors.Is(err, k.e) {
			return k.name
		}
	}
	return "other"
}

// stressContent is the text of message seq of worker w in run: unique, so
// the verification can find every message by its content.
func stressContent(run string, w, seq int) string {
	return fmt.Sprintf("stress %s w%d #%d: the deployment on kubernetes keeps failing, check the pod logs (%s)", run, w, seq, stressToken(run, w, seq))
}

// stressToken is a word that occurs in one message only, for the
// read-your-writes search.
func stressToken(run string, w, seq int) string { return fmt.Sprintf("tok%sx%dx%d", run, w, seq) }

var stressContentRE = regexp.MustCompile(`^stress (\S+) w(\d+) #(\d+):`)

type stressOpts struct {
	procs, appends, readEvery int
	busy                      time.Duration
	// others lets stress write into a store that holds sessions it did
	// not create (--beside-others).
	others bool
}

func stressCmd(a *app) *cobra.Command {
	var o stressOpts
	cmd := &cobra.Command{
		Use:   "stress",
		Short: "Hammer --db from several OS processes and check that no acknowledged write is lost",
		Long: `Without --db, stress makes its own temporary store and removes it at the end; it never
writes into the default store ($HERMES_HOME/state.db). Given --db, it refuses a store that holds
sessions it did not create (source other than "stress") unless --beside-others is given: it then
adds its own sessions beside the others' and checks only its own.

stress starts --procs worker processes (this binary, re-executed) that each append
--appends messages, one transaction each, alternating between a session of their own and one
session all workers share, and search for their own last acknowledged message in between
(read your writes). It then checks the file: every
acknowledged message present exactly once, message_count equal to the row count of every
session, and reports errors by kind and latency percentiles (JSON with --json).
It exits non-zero when a message was lost or duplicated, a counter is wrong, or an append failed.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := atLeast(cmd, "procs", o.procs, 1); err != nil {
				return err
			}
			if err := atLeast(cmd, "search-every", o.readEvery, 0); err != nil {
				return err
			}
			return atLeast(cmd, "appends", o.appends, 1)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := runStress(cmd.Context(), a, o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if err := a.printJSON(rep); err != nil {
					return err
				}
			} else {
				w := a.text()
				printStress(w, rep)
				if err := w.Flush(); err != nil {
					return err
				}
			}
			if rep.Lost > 0 || rep.Duplicates > 0 || rep.ErrorsTotal > 0 || !rep.CountersConsistent || len(rep.WorkerFailures) > 0 || rep.SearchMisses > 0 {
				return fmt.Errorf("stress: %d lost, %d duplicates, %d errors, %d search misses, counters consistent: %v, %d worker failures",
					rep.Lost, rep.Duplicates, rep.ErrorsTotal, rep.SearchMisses, rep.CountersConsistent, len(rep.WorkerFailures))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&o.procs, "procs", 4, "number of worker processes")
	cmd.Flags().IntVar(&o.appends, "appends", 1000, "messages each worker appends (one transaction each)")
	cmd.Flags().DurationVar(&o.busy, "busy-timeout", hs.DefaultBusyTimeout, "SQLite busy timeout of each worker's writer connection (the store retries beyond it)")
	cmd.Flags().IntVar(&o.readEvery, "search-every", 10, "after every N appends, search for the worker's last acknowledged message; 0 disables")
	cmd.Flags().BoolVar(&o.others, "beside-others", false, "write into the --db store even though it holds sessions stress did not create (a store other programs use)")
	return cmd
}

func printStress(w io.Writer, r *StressReport) {
	if r.Temporary {
		fmt.Fprintf(w, "store: %s (made for this run, removed at its end; give --db to keep one)\n", r.DB)
	} else {
		fmt.Fprintf(w, "store: %s\n", r.DB)
	}
	fmt.Fprintf(w, "%d procs x %d appends (busy timeout %d ms) in %.2fs: %.0f appends/s\n", r.Procs, r.AppendsPerProc, r.BusyTimeoutMS, r.ElapsedS, r.ThroughputPerS)
	fmt.Fprintf(w, "acknowledged %d, found %d, lost %d, duplicates %d, unacknowledged found %d, errors %d %v\n",
		r.Acknowledged, r.Found, r.Lost, r.Duplicates, r.UnacknowledgedFound, r.ErrorsTotal, r.Errors)
	fmt.Fprintf(w, "append latency ms: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f; %d over 100 ms, %d over 250 ms\n", r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, r.LatencyMS.Max,
		r.SlowAppends["over_100ms"], r.SlowAppends["over_250ms"])
	fmt.Fprintf(w, "searches %d (%d misses), latency ms: p50 %.2f  p99 %.2f  max %.2f; counters consistent: %v\n", r.Reads, r.SearchMisses, r.ReadLatencyMS.P50, r.ReadLatencyMS.P99, r.ReadLatencyMS.Max, r.CountersConsistent)
	for _, f := range r.WorkerFailures {
		fmt.Fprintln(w, "worker failure: "+f)
	}
}

type stressWorker struct {
	n       int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan workerLine
	stderr  bytes.Buffer
	readErr error
}

// stressKey names one message: worker and sequence number.
type stressKey struct{ w, seq int }

// stressRun is one run of the stress command: its options, the store the
// workers share, what they reported.
type stressRun struct {
	o         stressOpts
	cfg       hs.Config
	temporary bool     // cfg.Path is a store of this run's own
	id        string   // the run id written into every message
	shared    string   // the session every worker appends to
	where     []string // the store flags the workers get
	env       []string // the workers' environment
	workers   []*stressWorker
	sessions  map[string]bool // every session written to
	acked     map[stressKey]bool
	lat       []int64 // append latencies, ns
	rlat      []int64 // search latencies, ns
	rep       *StressReport
}

// runStress runs the workers against the store --db names, in steps:
// prepare the store, start the workers, release them together, collect
// what they report, wait for them, then check the file.
func runStress(ctx context.Context, a *app, o stressOpts) (*StressReport, error) {
	r := &stressRun{o: o, cfg: a.config(), id: strconv.FormatInt(time.Now().UnixNano(), 36),
		acked: map[stressKey]bool{}}
	r.cfg.BusyTimeout = o.busy
	if a.dbPath == "" {
		// No --db: a store of its own, never the default store.
		dir, err := stressTempDir()
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		r.cfg.Path, r.temporary = filepath.Join(dir, "state.db"), true
	} else if !o.others {
		if err := refuseOthers(ctx, r.cfg); err != nil {
			return nil, err
		}
	}
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.start(wctx); err != nil {
		return nil, err
	}
	r.awaitReady()
	began := time.Now()
	for _, w := range r.workers {
		_, _ = io.WriteString(w.stdin, "go\n")
	}
	r.collect()
	elapsed := time.Since(began)
	r.wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.summarise(elapsed)
	if err := r.verify(ctx); err != nil {
		return nil, err
	}
	return r.rep, nil
}

// prepare creates and migrates the store once, before the workers race to
// open it, creates the session every worker shares, and works out how the
// workers open exactly this store: the file, or the PostgreSQL DSN (passed
// in the environment, not on a command line others can read) and schema.
func (r *stressRun) prepare(ctx context.Context) error {
	st, err := hs.Open(ctx, r.cfg)
	if err != nil {
		return err
	}
	shared, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "stress", DisplayName: "shared by all stress workers"})
	if err != nil {
		st.Close()
		return err
	}
	r.shared = shared.ID
	r.sessions = map[string]bool{shared.ID: true}
	path := st.Path()
	r.where = []string{"--db", st.Path()}
	r.env = append(os.Environ(), runMainEnv+"=1")
	if st.Driver() == hs.DriverPostgres {
		path, r.where = st.Location(), []string{"--schema", st.Schema()}
		r.env = append(r.env, stressStoreEnv+"="+r.cfg.DSN)
	}
	r.rep = &StressReport{DB: path, Temporary: r.temporary, Procs: r.o.procs, AppendsPerProc: r.o.appends, BusyTimeoutMS: r.o.busy.Milliseconds(),
		Errors: map[string]int{}, ReadErrors: map[string]int{}}
	return st.Close()
}

// stressTempPrefix starts the name of the directory of stress's own store.
const stressTempPrefix = "hermes-state-stress-"

// stressTempDir makes the private directory (0700, in the system temp
// directory) of the store stress makes when no --db is given; those that
// stress processes killed before removing theirs left are removed.
func stressTempDir() (string, error) {
	safefile.RemoveStale(os.TempDir(), stressTempPrefix)
	dir, err := os.MkdirTemp("", safefile.TempName(stressTempPrefix)+"-")
	if err != nil {
		return "", fileError("stress: cannot make its temporary store in", os.TempDir(), err)
	}
	return dir, nil
}

// refuseOthers refuses a store that holds sessions stress did not create
// (a source other than "stress"): stress appends thousands of test
// messages, which do not belong in a store people or agents use. The
// store is looked at read-only (nothing is adopted or written); one that
// does not exist yet passes.
func refuseOthers(ctx context.Context, cfg hs.Config) error {
	cfg.ReadOnly = true
	st, err := hs.Open(ctx, cfg)
	if errors.Is(err, hs.ErrNoStore) {
		return nil // a new store: stress creates it
	}
	if err != nil {
		return err
	}
	defer st.Close()
	all, err := st.Sessions().Count(ctx, "")
	if err != nil {
		return err
	}
	own, err := st.Sessions().Count(ctx, "stress")
	if err != nil {
		return err
	}
	if others := all - own; others > 0 {
		return failf(hs.ErrConflict, "%s holds %s that stress did not create: stress writes thousands of test messages and does not write into a store in use; leave --db out (stress then makes its own temporary store), give --db a new file, or add --beside-others to write beside them",
			st.Location(), plural(others, "session", ""))
	}
	return nil
}

// start starts the worker processes (this executable, re-executed).
func (r *stressRun) start(ctx context.Context) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("stress: cannot find this executable to start workers: %w", err)
	}
	r.workers = make([]*stressWorker, r.o.procs)
	for i := range r.workers {
		w := &stressWorker{n: i, lines: make(chan workerLine, 1024)}
		args := append(append([]string{}, r.where...), "stress-worker", "--run", r.id, "--worker", strconv.Itoa(i),
			"--appends", strconv.Itoa(r.o.appends), "--busy-timeout", r.o.busy.String(), "--shared", r.shared,
			"--search-every", strconv.Itoa(r.o.readEvery))
		w.cmd = exec.CommandContext(ctx, exe, args...)
		w.cmd.Env = r.env
		// A worker dies with this process (Linux), and exits on its own
		// when its stdin, which this process holds open until the worker
		// is done, reaches EOF (everywhere).
		w.cmd.SysProcAttr = workerSysProcAttr()
		w.cmd.Stderr = &w.stderr
		out, err := w.cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if w.stdin, err = w.cmd.StdinPipe(); err != nil {
			return err
		}
		if err := w.cmd.Start(); err != nil {
			return fmt.Errorf("stress: start worker %d: %w", i, err)
		}
		go w.read(out)
		r.workers[i] = w
	}
	return nil
}

// read turns the worker's stdout into lines.
func (w *stressWorker) read(out io.Reader) {
	defer close(w.lines)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l workerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			w.readErr = fmt.Errorf("unparsable worker output %q", sc.Text())
			continue
		}
		w.lines <- l
	}
}

// awaitReady is the barrier: every worker has opened the store (or is
// reported as failed).
func (r *stressRun) awaitReady() {
	for _, w := range r.workers {
		l, ok := <-w.lines
		if !ok || l.T != "ready" {
			r.rep.WorkerFailures = append(r.rep.WorkerFailures, fmt.Sprintf("worker %d did not start: %s", w.n, tail(w.stderr.String())))
			continue
		}
		r.sessions[l.Session] = true
	}
}

// collect tallies what every worker reports until all are done.
func (r *stressRun) collect() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range w.lines {
				mu.Lock()
				r.tally(w.n, l)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// tally counts one line of worker n.
func (r *stressRun) tally(n int, l workerLine) {
	switch l.T {
	case "ack":
		r.acked[stressKey{n, l.Seq}] = true
		r.lat = append(r.lat, l.NS)
	case "err":
		r.rep.Errors[l.Kind]++
		r.lat = append(r.lat, l.NS)
	case "read":
		r.rlat = append(r.rlat, l.NS)
		r.rep.Reads++
		if l.Kind != "" {
			r.rep.ReadErrors[l.Kind]++
		} else if l.Msg != "" {
			r.rep.SearchMisses++
		}
	}
}

// wait lets the workers go and waits for them to exit.
func (r *stressRun) wait() {
	for _, w := range r.workers {
		_ = w.stdin.Close()
	}
	for _, w := range r.workers {
		if err := w.cmd.Wait(); err != nil {
			r.rep.WorkerFailures = append(r.rep.WorkerFailures, fmt.Sprintf("worker %d: %v: %s", w.n, err, tail(w.stderr.String())))
		}
		if w.readErr != nil {
			r.rep.WorkerFailures = append(r.rep.WorkerFailures, fmt.Sprintf("worker %d: %v", w.n, w.readErr))
		}
	}
}

// summarise fills the counts, latencies and throughput of the report.
func (r *stressRun) summarise(elapsed time.Duration) {
	rep := r.rep
	rep.Acknowledged = len(r.acked)
	for _, n := range rep.Errors {
		rep.ErrorsTotal += n
	}
	rep.LatencyMS = percentiles(r.lat)
	rep.SlowAppends = map[string]int{"over_100ms": 0, "over_250ms": 0}
	for _, ns := range r.lat {
		if ns > 100e6 {
			rep.SlowAppends["over_100ms"]++
		}
		if ns > 250e6 {
			rep.SlowAppends["over_250ms"]++
		}
	}
	rep.ReadLatencyMS = percentiles(r.rlat)
	rep.ElapsedS = round3(elapsed.Seconds())
	if elapsed > 0 {
		rep.ThroughputPerS = math.Round(float64(rep.Acknowledged) / elapsed.Seconds())
	}
}

// verify checks the store: every acknowledged message present exactly
// once, message_count equal to the rows of every session written to.
func (r *stressRun) verify(ctx context.Context) error {
	st, err := hs.Open(ctx, r.cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	rep := r.rep
	seen := map[stressKey]int{}
	rep.CountersConsistent = true
	for sid := range r.sessions {
		msgs, err := st.Messages().List(ctx, sid)
		if err != nil {
			return err
		}
		s, err := st.Sessions().Get(ctx, sid)
		if err != nil {
			return err
		}
		if s.MessageCount != int64(len(msgs)) {
			rep.CountersConsistent = false
			rep.CounterMismatches = append(rep.CounterMismatches, fmt.Sprintf("%s: message_count %d, rows %d", sid, s.MessageCount, len(msgs)))
		}
		for _, m := range msgs {
			if k, ok := r.messageKey(m.Content); ok {
				seen[k]++
			}
		}
	}
	for k, n := range seen {
		if n > 1 {
			rep.Duplicates += n - 1
		}
		if !r.acked[k] {
			rep.UnacknowledgedFound++
		}
	}
	for k := range r.acked {
		if seen[k] > 0 {
			rep.Found++
		} else {
			rep.Lost++
		}
	}
	return nil
}

// messageKey reads which worker wrote content, in this run.
func (r *stressRun) messageKey(content *string) (stressKey, bool) {
	if content == nil {
		return stressKey{}, false
	}
	g := stressContentRE.FindStringSubmatch(*content)
	if g == nil || g[1] != r.id {
		return stressKey{}, false
	}
	wn, _ := strconv.Atoi(g[2])
	seq, _ := strconv.Atoi(g[3])
	return stressKey{wn, seq}, true
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// stressWorkerCmd is the hidden worker of stress: it opens --db, prints
// "ready", waits for a line on stdin, appends, and prints one JSON line
// per append after the call returned (an "ack" only once Append returned
// nil, that is after COMMIT).
func stressWorkerCmd(a *app) *cobra.Command {
	var run, shared string
	var worker, appends, readEvery int
	var busy time.Duration
	cmd := &cobra.Command{
		Use:    "stress-worker",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			if dsn := os.Getenv(stressStoreEnv); dsn != "" {
				a.dbPath = dsn
			}
			cfg := a.config()
			cfg.BusyTimeout = busy
			st, err := hs.Open(ctx, cfg)
			if err != nil {
				return err
			}
			a.store = st
			own, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "stress", DisplayName: fmt.Sprintf("stress worker %d", worker)})
			if err != nil {
				return err
			}
			out := bufio.NewWriter(a.out)
			enc := json.NewEncoder(out)
			emit := func(l workerLine) {
				_ = enc.Encode(l)
				_ = out.Flush()
			}
			emit(workerLine{T: "ready", Session: own.ID})
			in := bufio.NewReader(os.Stdin)
			if _, err := in.ReadString('\n'); err != nil {
				return fmt.Errorf("stress-worker: no go signal: %w", err)
			}
			// The parent holds stdin open until this worker is done: EOF
			// means it is gone, and so must this worker be.
			go func() {
				_, _ = io.Copy(io.Discard, in)
				cancel()
			}()
			lastAck, lastID := -1, int64(0)
			for seq := 0; seq < appends; seq++ {
				if ctx.Err() != nil {
					return fmt.Errorf("stress-worker: the stress process is gone; stopping after %d appends", seq)
				}
				sid := own.ID
				if seq%2 == 1 && shared != "" {
					sid = shared
				}
				role := "user"
				if seq%4 >= 2 {
					role = "assistant"
				}
				t0 := time.Now()
				id, err := st.Messages().Append(ctx, sid, repo.MessageInput{Role: role, Content: models.Text(stressContent(run, worker, seq))})
				ns := time.Since(t0).Nanoseconds()
				if err != nil {
					emit(workerLine{T: "err", Seq: seq, NS: ns, Kind: errKind(err), Msg: err.Error()})
				} else {
					emit(workerLine{T: "ack", Seq: seq, ID: id, NS: ns, Session: sid})
					lastAck, lastID = seq, id
				}
				if readEvery > 0 && seq%readEvery == readEvery-1 && lastAck >= 0 {
					// Read your writes: the last acknowledged message must
					// be found by its unique word, from this process.
					t0 := time.Now()
					hits, err := st.Search().Messages(ctx, stressToken(run, worker, lastAck), repo.SearchOptions{Limit: 5})
					l := workerLine{T: "read", NS: time.Since(t0).Nanoseconds()}
					if err != nil {
						l.Kind, l.Msg = errKind(err), err.Error()
					} else if len(hits) != 1 || hits[0].ID != lastID {
						l.Msg = fmt.Sprintf("search for message %d found %d hits", lastID, len(hits))
					}
					emit(l)
				}
			}
			emit(workerLine{T: "done"})
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run id written into every message")
	cmd.Flags().StringVar(&shared, "shared", "", "session id every worker also appends to")
	cmd.Flags().IntVar(&worker, "worker", 0, "worker number")
	cmd.Flags().IntVar(&appends, "appends", 1000, "messages to append")
	cmd.Flags().IntVar(&readEvery, "search-every", 10, "search after every N appends; 0 disables")
	cmd.Flags().DurationVar(&busy, "busy-timeout", hs.DefaultBusyTimeout, "SQLite busy timeout")
	return cmd
}
