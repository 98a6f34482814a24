package hermesstate_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// The cross-process race tests of issue 30: 8 Go processes (this test
// binary run again as TestCoordRaceHelper) and, on SQLite, python3
// processes running the statements Hermes v30 runs, race for one turn lease,
// one compression lock and one handoff until 1,000 acquisitions of each
// were made. Every winner writes the instants it held the prize between
// (after the acquisition returned, before the release was sent) to its own
// log; the parent checks that no two intervals overlap, that the count is
// exact, and that a non-holder's refresh and release were refused each time
// they were tried.

const (
	raceEnv        = "HERMESSTATE_RACE"
	raceGoProcs    = 8
	racePyProcs    = 2
	raceTotal      = 1000
	raceSession    = "race"
	raceTTLSeconds = 60
)

// raceConfig opens the store a race process uses (a SQLite path or a
// PostgreSQL schema).
func raceConfig(target string) hs.Config {
	if strings.HasPrefix(target, "pg:") {
		return hs.Config{Driver: hs.DriverPostgres, DSN: os.Getenv(pgtest.EnvDSN), Schema: strings.TrimPrefix(target, "pg:"), MaxOpenConns: 2}
	}
	return hs.Config{Path: target}
}

// TestCoordRaceHelper is one Go contender of the race tests (it does
// nothing when run directly). Env: target, kind, holder, wins, log file.
func TestCoordRaceHelper(t *testing.T) {
	spec := os.Getenv(raceEnv)
	if spec == "" {
		t.Skip("helper process of TestCoordinationRace")
	}
	parts := strings.Split(spec, "|")
	target, kind, holder, logPath := parts[0], parts[1], parts[2], parts[4]
	wins, _ := strconv.Atoi(parts[3])
	ctx := context.Background()
	st, err := hs.Open(ctx, raceConfig(target))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	w := bufio.NewWriter(logf)
	defer w.Flush()
	opt := repo.LeaseOptions{TTL: raceTTLSeconds * time.Second, HolderDead: func(string) bool { return false }}
	var refused int
	for won := 0; won < wins; {
		var ok bool
		switch kind {
		case "lease":
			ok, err = st.TurnLeases().TryAcquire(ctx, raceSession, holder, opt)
		case "lock":
			ok, err = st.CompressionLocks().TryAcquire(ctx, raceSession, holder, opt)
		case "handoff":
			ok, err = st.Handoffs().Claim(ctx, raceSession)
		}
		if err != nil {
			if errors.Is(err, hs.ErrBusy) {
				continue
			}
			t.Fatal(err)
		}
		if !ok {
			// A non-holder's refresh and release must be refused.
			if kind != "handoff" && rand.IntN(16) == 0 {
				var r1, r2 bool
				if kind == "lease" {
					r1, err = st.TurnLeases().Refresh(ctx, raceSession, holder, opt)
					if err == nil {
						r2, err = st.TurnLeases().Release(ctx, raceSession, holder)
					}
				} else {
					r1, err = st.CompressionLocks().Refresh(ctx, raceSession, holder, opt)
					if err == nil {
						r2, err = st.CompressionLocks().Release(ctx, raceSession, holder)
					}
				}
				if err != nil && !errors.Is(err, hs.ErrBusy) {
					t.Fatal(err)
				}
				if r1 || r2 {
					fmt.Fprintf(w, "VIOLATION non-holder %s refresh=%v release=%v\n", holder, r1, r2)
				}
				refused++
			}
			time.Sleep(time.Duration(200+rand.IntN(1500)) * time.Microsecond)
			continue
		}
		start := time.Now().UnixNano()
		time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		end := time.Now().UnixNano()
		fmt.Fprintf(w, "%d %d %s\n", start, end, holder)
		for {
			var rel bool
			switch kind {
			case "lease":
				rel, err = st.TurnLeases().Release(ctx, raceSession, holder)
			case "lock":
				rel, err = st.CompressionLocks().Release(ctx, raceSession, holder)
			case "handoff":
				if err = st.Handoffs().Complete(ctx, raceSession); err == nil {
					rel, err = st.Handoffs().Request(ctx, raceSession, "telegram")
				}
			}
			if errors.Is(err, hs.ErrBusy) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !rel {
				fmt.Fprintf(w, "VIOLATION %s could not release what it held\n", holder)
			}
			break
		}
		won++
	}
	fmt.Fprintf(w, "REFUSED %d\n", refused)
}

// hermesRacePy runs Hermes v30's statements (hermes_state_compression.py
// _claim_lease_row and the turn-lease key walk; hermes_state_gateway.py
// claim/complete/request_handoff) with python3's sqlite3: a writer
// connection with isolation_level=None whose transactions are BEGIN
// IMMEDIATE, retried on "database is locked" with jitter, as Hermes'
// _execute_write does.
const hermesRacePy = `
import random, sqlite3, sys, time
path, kind, holder, wins, log = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
sid = "race"
ttl = 60.0
c = sqlite3.connect(path, timeout=1.0, isolation_level=None)
c.row_factory = sqlite3.Row
out = open(log, "w")

def write(fn):
    while True:
        try:
            c.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                time.sleep(random.uniform(0.0002, 0.002)); continue
            raise
        try:
            r = fn(c)
            c.execute("COMMIT")
            return r
        except sqlite3.OperationalError as e:
            c.execute("ROLLBACK")
            if "locked" in str(e) or "busy" in str(e):
                time.sleep(random.uniform(0.0002, 0.002)); continue
            raise
        except BaseException:
            c.execute("ROLLBACK"); raise

def lease_key(conn, session_id):
    cur = conn.execute("SELECT id, parent_session_id, source, model_config, end_reason FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return cur["id"] if cur else session_id

def claim(table, key_col, strict):
    now = time.time(); exp = now + ttl
    def fn(conn):
        key = sid
        if table == "session_turn_leases":
            conn.execute("DELETE FROM session_turn_leases WHERE expires_at < ?", (now - 86400.0,))
            key = lease_key(conn, sid)
        row = conn.execute(f"SELECT holder, expires_at FROM {table} WHERE {key_col} = ?", (key,)).fetchone()
        if row is not None and (row["expires_at"] < now if strict else float(row["expires_at"]) <= now):
            conn.execute(f"DELETE FROM {table} WHERE {key_col} = ? AND holder = ?", (key, row["holder"]))
        conn.execute(f"INSERT OR IGNORE INTO {table} ({key_col}, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)", (key, holder, now, exp))
        owner = conn.execute(f"SELECT holder FROM {table} WHERE {key_col} = ?", (key,)).fetchone()
        return owner is not None and owner["holder"] == holder
    return write(fn)

def delete_own(table, key_col):
    def fn(conn):
        key = lease_key(conn, sid) if table == "session_turn_leases" else sid
        return conn.execute(f"DELETE FROM {table} WHERE {key_col} = ? AND holder = ?", (key, holder)).rowcount
    return write(fn)

def refresh_own(table, key_col):
    def fn(conn):
        key = lease_key(conn, sid) if table == "session_turn_leases" else sid
        return conn.execute(f"UPDATE {table} SET expires_at = ? WHERE {key_col} = ? AND holder = ?", (time.time() + ttl, key, holder)).rowcount
    return write(fn)

def one(sql, params):
    return write(lambda conn: conn.execute(sql, params).rowcount)

def autocommit(sql, params):
    # One statement on its own, retried while the file is busy (a loaded
    # machine can hold a writer past the busy timeout).
    while True:
        try:
            return c.execute(sql, params)
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                time.sleep(random.uniform(0.0002, 0.002)); continue
            raise

def broken_claim():
    # NOT Hermes: a claim outside a transaction, to show the check catches it.
    row = autocommit("SELECT holder FROM compression_locks WHERE session_id = ?", (sid,)).fetchone()
    if row is None:
        time.sleep(0.002)
        autocommit("INSERT OR REPLACE INTO compression_locks (session_id, holder, acquired_at, expires_at) VALUES (?, ?, ?, ?)", (sid, holder, time.time(), time.time() + ttl))
        return True
    return False

if kind == "broken":
    won = 0
    while won < wins:
        if not broken_claim():
            time.sleep(random.uniform(0.0002, 0.001)); continue
        start = time.time_ns(); time.sleep(0.003); end = time.time_ns()
        out.write("%d %d %s\n" % (start, end, holder))
        autocommit("DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", (sid, holder))
        won += 1
    out.close(); sys.exit(0)

table, key_col, strict = {"lease": ("session_turn_leases", "conversation_id", False), "lock": ("compression_locks", "session_id", True), "handoff": (None, None, None)}[kind]
won = 0; refused = 0
while won < wins:
    if kind == "handoff":
        ok = one("UPDATE sessions SET handoff_state = 'running' WHERE id = ? AND handoff_state = 'pending'", (sid,)) > 0
    else:
        ok = claim(table, key_col, strict)
    if not ok:
        if kind != "handoff" and random.random() < 0.0625:
            r1 = refresh_own(table, key_col); r2 = delete_own(table, key_col)
            if r1 or r2:
                out.write("VIOLATION non-holder %s refresh=%d release=%d\n" % (holder, r1, r2))
            refused += 1
        time.sleep(random.uniform(0.0002, 0.0017))
        continue
    start = time.time_ns()
    time.sleep(random.uniform(0, 0.0002))
    end = time.time_ns()
    out.write("%d %d %s\n" % (start, end, holder))
    if kind == "handoff":
        one("UPDATE sessions SET handoff_state = 'completed', handoff_error = NULL WHERE id = ?", (sid,))
        rel = one("UPDATE sessions SET handoff_state = 'pending', handoff_platform = ?, handoff_error = NULL WHERE id = ? AND (handoff_state IS NULL OR handoff_state IN ('completed', 'failed'))", ("telegram", sid))
    else:
        rel = delete_own(table, key_col)
    if rel != 1:
        out.write("VIOLATION %s could not release what it held\n" % holder)
    won += 1
out.write("REFUSED %d\n" % refused)
out.close()
`

// python3OrSkip returns python3's path, skipping (failing under CI) when it
// is missing.
func python3OrSkip(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing: the race tests run Hermes' statements with python3's sqlite3")
		}
		t.Skip("python3 is missing: install it to race Hermes' statements against hermesstate")
	}
	return py
}

type holdInterval struct {
	start, end int64
	holder     string
}

// runRace races the contenders for one prize and checks the logs.
func runRace(t *testing.T, target, kind string, withPython bool) {
	dir := t.TempDir()
	py := ""
	pyProcs := 0
	if withPython {
		py = python3OrSkip(t)
		pyProcs = racePyProcs
		require.NoError(t, os.WriteFile(filepath.Join(dir, "hermes_race.py"), []byte(hermesRacePy), 0o600))
	}
	procs := raceGoProcs + pyProcs
	each := raceTotal / procs
	extra := raceTotal - each*procs
	type proc struct {
		cmd *exec.Cmd
		out *strings.Builder
		log string
	}
	var ps []proc
	start := time.Now()
	for i := 0; i < procs; i++ {
		wins := each
		if i < extra {
			wins++
		}
		var cmd *exec.Cmd
		logPath := filepath.Join(dir, fmt.Sprintf("log-%d", i))
		if i < raceGoProcs {
			holder := fmt.Sprintf("go-%d", i)
			cmd = exec.Command(os.Args[0], "-test.run=^TestCoordRaceHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), raceEnv+"="+strings.Join([]string{target, kind, holder, strconv.Itoa(wins), logPath}, "|"))
		} else {
			holder := fmt.Sprintf("py-%d", i)
			cmd = exec.Command(py, filepath.Join(dir, "hermes_race.py"), target, kind, holder, strconv.Itoa(wins), logPath)
		}
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		ps = append(ps, proc{cmd, out, logPath})
	}
	for i, p := range ps {
		require.NoError(t, p.cmd.Wait(), "contender %d:\n%s", i, p.out.String())
	}
	elapsed := time.Since(start)
	var ivs []holdInterval
	refused := 0
	for i, p := range ps {
		b, err := os.ReadFile(p.log)
		require.NoError(t, err, "contender %d wrote no log:\n%s", i, p.out.String())
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			switch {
			case strings.HasPrefix(line, "VIOLATION"):
				t.Errorf("contender %d: %s", i, line)
			case strings.HasPrefix(line, "REFUSED "):
				n, _ := strconv.Atoi(strings.TrimPrefix(line, "REFUSED "))
				refused += n
			case line != "":
				var iv holdInterval
				_, err := fmt.Sscanf(line, "%d %d %s", &iv.start, &iv.end, &iv.holder)
				require.NoError(t, err, line)
				ivs = append(ivs, iv)
			}
		}
	}
	require.Len(t, ivs, raceTotal)
	require.NoError(t, checkOneHolder(ivs))
	if kind != "handoff" {
		require.Positive(t, refused, "non-holders tried refresh and release")
	}
	t.Logf("%s on %s: %d acquisitions by %d processes (%d Go, %d python3 running Hermes' statements) in %s, %d non-holder refresh+release pairs refused",
		kind, targetKind(target), len(ivs), procs, raceGoProcs, pyProcs, elapsed.Round(time.Millisecond), refused)
}

// checkOneHolder returns an error naming the first two holders whose
// intervals overlap.
func checkOneHolder(ivs []holdInterval) error {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	for i := 1; i < len(ivs); i++ {
		if prev, iv := ivs[i-1], ivs[i]; iv.start < prev.end {
			return fmt.Errorf("two holders at once: %s held [%d, %d], %s from %d", prev.holder, prev.start, prev.end, iv.holder, iv.start)
		}
	}
	return nil
}

// TestCoordinationRaceDetectsTwoHolders: the race check fails when the claim
// is not atomic: python3 contenders running a claim outside a transaction
// (read, then INSERT OR REPLACE) are caught holding the lease together.
func TestCoordinationRaceDetectsTwoHolders(t *testing.T) {
	py := python3OrSkip(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	prepareRaceStore(t, hs.Config{Path: path})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hermes_race.py"), []byte(hermesRacePy), 0o600))
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for i := 0; i < 4; i++ {
		cmd := exec.Command(py, filepath.Join(dir, "hermes_race.py"), path, "broken", fmt.Sprintf("broken-%d", i), "50", filepath.Join(dir, fmt.Sprintf("log-%d", i)))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		cmds = append(cmds, cmd)
		outs = append(outs, out)
	}
	var ivs []holdInterval
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "contender %d:\n%s", i, outs[i].String())
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("log-%d", i)))
		require.NoError(t, err)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var iv holdInterval
			if _, err := fmt.Sscanf(line, "%d %d %s", &iv.start, &iv.end, &iv.holder); err == nil {
				ivs = append(ivs, iv)
			}
		}
	}
	require.Len(t, ivs, 200)
	require.Error(t, checkOneHolder(ivs), "a non-atomic claim lets two holders in, and the check sees it")
}

func targetKind(target string) string {
	if strings.HasPrefix(target, "pg:") {
		return "PostgreSQL"
	}
	return "SQLite (" + engineName() + ")"
}

func engineName() string {
	if e := os.Getenv("HERMES_STATE_ENGINE"); e != "" {
		return e
	}
	return "default engine"
}

func prepareRaceStore(t *testing.T, cfg hs.Config) {
	ctx := fixturetest.Ctx(t)
	st, err := hs.Open(ctx, cfg)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: raceSession, Source: "cli"})
	require.NoError(t, err)
	ok, err := st.Handoffs().Request(ctx, raceSession, "telegram")
	require.NoError(t, err)
	require.True(t, ok)
}

// TestCoordinationRace: 8 Go processes and 2 python3 processes running
// Hermes' statements race on one SQLite file for one turn lease, one
// compression lock and one handoff, 1,000 acquisitions each: never two
// holders, non-holders' refresh and release refused.
func TestCoordinationRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	prepareRaceStore(t, hs.Config{Path: path})
	for _, kind := range []string{"lease", "lock", "handoff"} {
		t.Run(kind, func(t *testing.T) { runRace(t, path, kind, true) })
	}
}

// TestCoordinationRacePostgres: the same race with 8 Go processes on one
// PostgreSQL schema.
func TestCoordinationRacePostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	prepareRaceStore(t, hs.Config{Driver: hs.DriverPostgres, DSN: dsn, Schema: schema})
	// The three prizes are independent rows: on PostgreSQL, whose commits
	// wait for their own flush, they race at the same time.
	for _, kind := range []string{"lease", "lock", "handoff"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			runRace(t, "pg:"+schema, kind, false)
		})
	}
}

// TestCoordKillHelper acquires a lease (or lock) in its own process,
// reports it, and waits to be killed (it does nothing when run directly).
func TestCoordKillHelper(t *testing.T) {
	spec := os.Getenv(raceEnv + "_KILL")
	if spec == "" {
		t.Skip("helper process of TestCoordinationSIGKILL")
	}
	parts := strings.Split(spec, "|")
	target, kind, holder := parts[0], parts[1], parts[2]
	ttl, _ := time.ParseDuration(parts[3])
	ctx := context.Background()
	st, err := hs.Open(ctx, raceConfig(target))
	if err != nil {
		t.Fatal(err)
	}
	if holder == "" {
		holder = repo.HolderID("kill-test")
	}
	opt := repo.LeaseOptions{TTL: ttl}
	var ok bool
	if kind == "lease" {
		ok, err = st.TurnLeases().TryAcquire(ctx, raceSession, holder, opt)
	} else {
		ok, err = st.CompressionLocks().TryAcquire(ctx, raceSession, holder, opt)
	}
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	fmt.Println("HELD " + holder)
	time.Sleep(time.Hour)
}

// TestCoordinationSIGKILL: a holder killed with SIGKILL keeps its lease
// (and lock) until the row expires, not before, and loses it at expiry —
// for a Go contender and for python3 running Hermes' claim; a holder in
// Hermes' structured form (pid=N:pidns=…) of a process that is gone is
// reclaimed at once, by Hermes' rule.
func TestCoordinationSIGKILL(t *testing.T) {
	py := python3OrSkip(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	prepareRaceStore(t, hs.Config{Path: path})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hermes_race.py"), []byte(hermesRacePy), 0o600))
	ctx := fixturetest.Ctx(t)
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()

	spawn := func(kind, holder string, ttl time.Duration) (*exec.Cmd, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCoordKillHelper$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), raceEnv+"_KILL="+strings.Join([]string{path, kind, holder, ttl.String()}, "|"))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if h, ok := strings.CutPrefix(sc.Text(), "HELD "); ok {
				go func() {
					for sc.Scan() {
					}
				}()
				return cmd, h
			}
		}
		_ = cmd.Wait()
		t.Fatalf("the %s helper did not acquire", kind)
		return nil, ""
	}
	// python3 running Hermes' claim for one attempt: prints True/False.
	hermesTry := func(kind string) bool {
		script := strings.Replace(hermesRacePy, "won = 0; refused = 0", "print(claim(table, key_col, strict) if kind != 'handoff' else False); sys.exit(0)\nwon = 0; refused = 0", 1)
		out, err := exec.Command(py, "-c", script, path, kind, "py-after-kill", "1", filepath.Join(dir, "py-kill-log")).CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out)) == "True"
	}
	goOpt := repo.LeaseOptions{TTL: time.Minute}

	for _, kind := range []string{"lease", "lock"} {
		t.Run(kind, func(t *testing.T) {
			try := func(holder string) bool {
				var ok bool
				var err error
				if kind == "lease" {
					ok, err = st.TurnLeases().TryAcquire(ctx, raceSession, holder, goOpt)
				} else {
					ok, err = st.CompressionLocks().TryAcquire(ctx, raceSession, holder, goOpt)
				}
				require.NoError(t, err)
				return ok
			}
			release := func(holder string) {
				if kind == "lease" {
					_, err = st.TurnLeases().Release(ctx, raceSession, holder)
				} else {
					_, err = st.CompressionLocks().Release(ctx, raceSession, holder)
				}
				require.NoError(t, err)
			}
			// An opaque holder: kept until expiry.
			const ttl = 1500 * time.Millisecond
			cmd, _ := spawn(kind, "opaque-"+kind, ttl)
			acquired := time.Now()
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			require.False(t, try("go-after-kill"), "a killed holder keeps its lease until expiry")
			require.False(t, hermesTry(kind), "Hermes' claim keeps it too")
			time.Sleep(time.Until(acquired.Add(ttl + 300*time.Millisecond)))
			require.True(t, try("go-after-kill"), "taken over at expiry")
			release("go-after-kill")
			// After expiry Hermes takes it as well.
			cmd, _ = spawn(kind, "opaque2-"+kind, ttl)
			acquired = time.Now()
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			require.False(t, hermesTry(kind))
			time.Sleep(time.Until(acquired.Add(ttl + 300*time.Millisecond)))
			require.True(t, hermesTry(kind), "Hermes takes an expired lease over")
			clearPrize(t, st, kind)

			// A structured holder of this namespace: reclaimed once its
			// process is gone (Hermes' _compression_lock_holder_process_is_dead).
			if regexpNS.FindString(repo.HolderID("")) == "" {
				t.Log("no PID namespace id here: the structured-holder half is not run")
				return
			}
			cmd, holder := spawn(kind, "", time.Minute)
			require.False(t, try("go-after-kill"), "alive: refused")
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			require.True(t, repo.LocalHolderDead(holder))
			require.True(t, try("go-after-kill"), "a dead structured holder is reclaimed before expiry")
			release("go-after-kill")
		})
	}
}

// clearPrize clears the prize a python3 claim left.
func clearPrize(t *testing.T, st *hs.Store, kind string) {
	t.Helper()
	db := hermesstatetest.SQL(t, st)
	table := map[string]string{"lease": "session_turn_leases", "lock": "compression_locks"}[kind]
	_, err := db.Exec("DELETE FROM " + table)
	require.NoError(t, err)
}
