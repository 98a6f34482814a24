// Package doctor checks, repairs and salvages a SQLite state.db: the report
// behind `hermes-state doctor`, the bounded repair steps of `repair`, the
// salvage of `recover` and the housekeeping of `maintain`.
//
// It works on a file path and opens its own connections, so it can report on
// a file the store refuses to open. It sits above repo and migrations and
// below the root package, which wraps it (hermesstate.Doctor, Repair,
// Recover); use those unless you need the report's parts.
//
// Doctor never changes the file it examines: every read is an ordinary
// query, and the FTS5 'integrity-check' commands (which SQLite runs as
// INSERT statements) run inside a transaction that is rolled back.
package doctor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/repo"
)

// Severity grades a finding.
type Severity string

// Severities. Info is never "wrong"; Warning and Error make Report.OK false
// (and the CLI exit non-zero).
const (
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
)

func (s Severity) rank() int {
	switch s {
	case Error:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Check names, used in Finding.Check.
const (
	CheckFile       = "file"
	CheckSQLite     = "sqlite"
	CheckJournal    = "journal_mode"
	CheckIntegrity  = "integrity"
	CheckIndex      = "index"
	CheckFTS        = "fts"
	CheckForeignKey = "foreign_keys"
	CheckSchema     = "schema"
	CheckCounters   = "counters"
	CheckActivity   = "activity"
	CheckSpace      = "space"
	CheckMigrations = "migrations"
	CheckRepair     = "repair"
	// CheckPlace: where the file lies keeps it from being opened or
	// written (a full disk, a read-only mount, no permission), which is
	// not damage of the file.
	CheckPlace = "place"
)

// Fix commands named by findings.
const (
	FixRepair  = "hermes-state repair"
	FixRecover = "hermes-state recover --from <this file> --to <new file>"
	FixMigrate = "hermes-state migrate"
	FixVacuum  = "hermes-state maintain --vacuum"
	FixCkpt    = "hermes-state maintain (checkpoint), or stop the process that keeps a read transaction open"
)

// Finding is one thing doctor found.
type Finding struct {
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Object is the table, index, trigger or session concerned, if any.
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
	// Fix is the command that fixes it; empty for information.
	Fix string `json:"fix,omitempty"`
}

// Options configures Check.
type Options struct {
	// Path of the SQLite file.
	Path string
	// Full runs PRAGMA integrity_check instead of quick_check.
	Full bool
	// JournalMode is the configured mode ("wal" or "delete"). Empty means
	// not configured: the file's own mode is then never a problem (a
	// writable open would switch it to WAL, the default, and doctor says so).
	JournalMode string
	// WALWarnBytes is the WAL size above which doctor warns; default 64 MiB.
	WALWarnBytes int64
	// ftsOnly runs the checks CheckIndexes needs: the schema and the FTS
	// indexes (no integrity_check of every page).
	ftsOnly bool
	// Engine is the SQLite engine doctor reads with ("go" or "c"; empty:
	// sqlitex.Resolve's choice). It must be the engine of any store this
	// process has open on the file: two SQLite libraries in one process do
	// not see each other's locks.
	Engine string
}

// engineFor returns the engine name picks, or an error wrapping
// errs.ErrUnsupported (not compiled in) or errs.ErrInvalid.
func engineFor(op, name string) (*sqlitex.Engine, error) {
	e, err := sqlitex.Resolve(name)
	switch {
	case errors.Is(err, sqlitex.ErrEngineNotBuilt):
		return nil, errs.Wrap(errs.ErrUnsupported, op, err, err.Error())
	case err != nil:
		return nil, errs.Wrap(errs.ErrInvalid, op, err, err.Error())
	}
	return e, nil
}

// Report is what Check found.
type Report struct {
	// objects are the schema objects by type and name (CheckIndexes).
	objects map[string]map[string]string

	Path              string `json:"path"`
	Full              bool   `json:"full"`
	SQLiteVersion     string `json:"sqlite_version"`
	WALResetBug       bool   `json:"wal_reset_bug"`
	JournalConfigured string `json:"journal_mode_configured"`
	// JournalExplicit: the journal mode was configured, not defaulted.
	JournalExplicit   bool      `json:"journal_mode_explicit"`
	JournalMode       string    `json:"journal_mode"`
	SchemaVersion     int       `json:"schema_version"`
	PendingMigrations []string  `json:"pending_migrations"`
	FTSLayout         string    `json:"fts_layout"`
	FTSTables         []string  `json:"fts_tables"`
	PageSize          int64     `json:"page_size"`
	PageCount         int64     `json:"page_count"`
	FreelistCount     int64     `json:"freelist_count"`
	FreelistRatio     float64   `json:"freelist_ratio"`
	FileBytes         int64     `json:"file_bytes"`
	WALBytes          int64     `json:"wal_bytes"`
	Sessions          int64     `json:"sessions"`
	Messages          int64     `json:"messages"`
	Findings          []Finding `json:"findings"`
	// Unchecked lists the checks that could not run because another
	// process held the file locked (busy, not damage): each is also an
	// Info finding saying to run again when the file is idle. OK says
	// nothing about them.
	Unchecked []string `json:"unchecked,omitempty"`
	Elapsed   string   `json:"elapsed"`

	// what repair needs to know, not part of the printed report
	state *state
}

// OK reports whether no problem was found (no warning, no error). A check
// that could not run (Unchecked) found nothing either way: Complete says
// whether every check ran.
func (r *Report) OK() bool { return r.Worst().rank() == 0 }

// Complete reports whether every check ran (none was kept from running by
// another process holding the file locked: see Unchecked).
func (r *Report) Complete() bool { return len(r.Unchecked) == 0 }

// Worst returns the highest severity found (Info when nothing).
func (r *Report) Worst() Severity {
	w := Info
	for _, f := range r.Findings {
		if f.Severity.rank() > w.rank() {
			w = f.Severity
		}
	}
	return w
}

// Problems returns the warnings and errors.
func (r *Report) Problems() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Severity != Info {
			out = append(out, f)
		}
	}
	return out
}

// Has reports whether a warning or error of check (and object, when
// non-empty) was found.
func (r *Report) Has(check, object string) bool {
	for _, f := range r.Findings {
		if f.Severity != Info && f.Check == check && (object == "" || f.Object == object) {
			return true
		}
	}
	return false
}

func (r *Report) add(check string, sev Severity, object, fix, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, f := range r.Findings {
		if f.Check == check && f.Object == object && f.Severity == sev && object != "" && check != CheckIntegrity {
			return // one finding per object and check
		}
	}
	r.Findings = append(r.Findings, Finding{Check: check, Severity: sev, Object: object, Message: msg, Fix: fix})
}

// state is what the checks learnt, for repair.
type state struct {
	unreadable bool // page-level damage or an unreadable file: repair refuses
	// place says why the file cannot be opened or read where it lies (a
	// full disk, a read-only mount: not damage); repair refuses with
	// ErrStorage, not ErrCorrupt.
	place      string
	badIndexes map[string]bool
	badFTS     map[string]string // table -> reason
	// ftsMismatch: tables whose index does not match their content (FTS5
	// integrity-check), with the reason also in badFTS.
	ftsMismatch  map[string]string
	missingTrig  []triggerDef
	missingIdx   []schemaref.Statement
	missingTabs  []schemaref.Statement
	missingCols  map[string][]schemaref.Column
	counterRows  int64
	unadopted    bool             // the file is not adopted yet (baseline step pending)
	hotJournal   bool             // a hot journal must be rolled back before anything else
	trigramFeed  bool             // the trigram view/triggers feed text past U+0000
	activeCol    bool             // messages has the active column
	activity     bool             // the activity table must be rebuilt
	orphans      map[string]int64 // "table.column" -> rows
	ftsByName    map[string]ftsTable
	layout       string
	journalWrong bool
	missingViews []string
	cjkReset     bool
	backfill     bool
	// badJSON: JSON columns holding values that are not JSON; loops:
	// sessions whose chain of parents leads back to them (data.go).
	badJSON []jsonColumn
	loops   [][]string
}

// Check examines the file at opts.Path and returns the report. It returns
// an error wrapping errs.ErrNotFound and errs.ErrNoStore when there is no
// store (no file, or an empty one: see sqlitex.CheckStoreFile), and
// errs.ErrStorage when the file cannot be read at all (permissions); a
// damaged file is not an error: the damage is reported as findings.
func Check(ctx context.Context, opts Options) (*Report, error) {
	start := time.Now()
	explicit := opts.JournalMode != ""
	if !explicit {
		opts.JournalMode = "wal"
	}
	if opts.WALWarnBytes <= 0 {
		opts.WALWarnBytes = 64 << 20
	}
	r := &Report{Path: opts.Path, Full: opts.Full, JournalConfigured: strings.ToLower(opts.JournalMode), JournalExplicit: explicit, Findings: []Finding{},
		state: &state{badIndexes: map[string]bool{}, badFTS: map[string]string{}, ftsMismatch: map[string]string{}, missingCols: map[string][]schemaref.Column{}, orphans: map[string]int64{}}}
	defer func() { r.Elapsed = time.Since(start).Round(time.Millisecond).String() }()
	if err := sqlitex.CheckStoreFile("doctor", opts.Path); err != nil {
		return nil, err
	}
	st, err := os.Stat(opts.Path)
	if err != nil {
		return nil, errs.Wrap(errs.ErrStorage, "doctor", err, "cannot read "+opts.Path+": "+sqlitex.Describe(err))
	}
	r.FileBytes = st.Size()
	walSt, walErr := os.Stat(opts.Path + "-wal")
	_, shmErr := os.Stat(opts.Path + "-shm")
	if walErr == nil {
		r.WALBytes = walSt.Size()
	}
	ok, walHeader := checkHeader(r, opts.Path, walErr == nil && walSt.Size() > 0)
	if !ok {
		r.state.unreadable = true
		return r, nil
	}
	if walErr != nil && shmErr == nil {
		r.add(CheckFile, Warning, opts.Path+"-wal", FixRecover,
			"the -wal file is missing but its index (-shm) is present: a -wal was deleted, and the commits it held (not yet checkpointed) are lost; if a process still has it open, reads fail with I/O errors until that process exits")
	}

	// A WAL file with neither -wal nor -shm beside it is open nowhere and
	// holds every commit in the file itself: it is read as an immutable
	// snapshot, so that doctor creates no -wal or -shm (a read-only
	// connection would, and could not remove them).
	snapshot := walHeader && walErr != nil && shmErr != nil
	eng, err := engineFor("doctor", opts.Engine)
	if err != nil {
		return nil, err
	}
	db, err := openRead(ctx, eng, opts.Path, snapshot)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	c := &checker{ctx: ctx, db: db, r: r, opts: opts, eng: eng, walHeader: walHeader}
	defer c.closeWriter()
	c.run()
	if r.state.unreadable {
		// repair refuses a file with page-level damage: every fix it
		// would otherwise make is recover's.
		for i := range r.Findings {
			if r.Findings[i].Fix == FixRepair {
				r.Findings[i].Fix = FixRecover
			}
		}
	}
	noteUnwritablePlace(r, opts.Path)
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Severity.rank() > r.Findings[j].Severity.rank() })
	return r, ctx.Err()
}

// openReadOnly opens path for reading only, as Check does (immutable when
// it is a WAL file no process has open).
func openReadOnly(ctx context.Context, eng *sqlitex.Engine, path string) (*sql.DB, error) {
	b := make([]byte, 100)
	f, err := os.Open(path)
	if err != nil {
		return nil, errtext.Storage("doctor", err, "cannot open "+path, path)
	}
	_, _ = io.ReadFull(f, b)
	_ = f.Close()
	h, _ := readHeader(b)
	_, walErr := os.Stat(path + "-wal")
	_, shmErr := os.Stat(path + "-shm")
	return openRead(ctx, eng, path, h.WAL && walErr != nil && shmErr != nil)
}

// openRead opens the connection every check reads through: SQLite's
// mode=ro (the file is opened for reading only, so doctor cannot change
// it), foreign keys off, a 5 s busy timeout; with snapshot, immutable=1
// (no lock, no -wal or -shm) for a WAL file no process has open.
func openRead(ctx context.Context, eng *sqlitex.Engine, path string, snapshot bool) (*sql.DB, error) {
	open := func(immutable bool) (*sql.DB, error) {
		dsn, err := eng.URI(sqlitex.ConnConfig{Path: path, BusyTimeout: 5 * time.Second, ReadOnly: true, Immutable: immutable})
		if err != nil {
			return nil, err
		}
		db, err := eng.OpenDB(dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		return db, nil
	}
	db, err := open(snapshot)
	if err != nil {
		return nil, errtext.Storage("doctor", err, "cannot open "+path, path)
	}
	var n int64
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
	if err == nil || !sqlitex.IsCantOpen(err) {
		return db, nil // other failures are findings of the checks
	}
	// WAL mode where no -shm can be made (a read-only mount).
	immutable, perr := sqlitex.ReadOnlyPlace(path)
	if perr != nil {
		_ = db.Close()
		return nil, errs.Wrap(errs.ErrUnsupported, "doctor", perr, perr.Error())
	}
	if !immutable {
		return db, nil
	}
	_ = db.Close()
	db, err = open(true)
	if err != nil {
		return nil, errtext.Storage("doctor", err, "cannot open "+path, path)
	}
	return db, nil
}

// errNoWriteAccess: the explicit FTS5 integrity-check could not run
// because the file cannot be opened for writing here.
var errNoWriteAccess = errors.New("the file cannot be opened for writing here")

// writer returns a connection that may run the FTS5 'integrity-check'
// command, which SQLite runs as an INSERT (always inside a transaction that
// is rolled back: nothing is written). It is opened on first use, only for
// --full, and fails with errNoWriteAccess on a read-only file, directory or
// mount.
func (c *checker) writer() (*sql.DB, error) {
	if c.rw != nil {
		return c.rw, nil
	}
	if c.rwErr != nil {
		return nil, c.rwErr
	}
	db, err := c.eng.OpenDB(c.eng.DSN(sqlitex.ConnConfig{Path: c.opts.Path, BusyTimeout: 5 * time.Second}))
	if err == nil {
		db.SetMaxOpenConns(1)
		var ro int
		if err = db.QueryRowContext(c.ctx, "SELECT 1").Scan(&ro); err == nil {
			c.rw = db
			return db, nil
		}
		_ = db.Close()
	}
	c.rwErr = fmt.Errorf("%w (%s)", errNoWriteAccess, describeErr(err))
	return nil, c.rwErr
}

func (c *checker) closeWriter() {
	if c.rw != nil {
		_ = c.rw.Close()
	}
}

// gormOn wraps a database/sql handle for the migrations helpers.
func gormOn(eng *sqlitex.Engine, db *sql.DB) (*gorm.DB, error) {
	return gorm.Open(eng.DialectorOn(db), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true})
}

type checker struct {
	ctx  context.Context
	db   *sql.DB
	r    *Report
	opts Options
	eng  *sqlitex.Engine
	// names of objects in sqlite_master by type
	objects map[string]map[string]string // type -> name -> sql
	// pragmaRan: quick_check / integrity_check ran to the end (it checks
	// every FTS5 table too)
	pragmaRan bool
	// rw is the connection of the explicit FTS5 integrity-check (see
	// writer), rwErr why it could not be opened.
	rw    *sql.DB
	rwErr error
	// walHeader: the file header says WAL (an immutable snapshot
	// connection reports journal mode delete for such a file).
	walHeader bool
}

// describeErr turns a read error into a sentence and whether the file is
// unreadable because of it.
func describeErr(err error) string {
	c, _ := sqlitex.Code(err)
	switch {
	case c == 522:
		return "disk I/O error: a short read (the -wal index points past the end of the -wal file, or the file was truncated)"
	case sqlitex.IsIOErr(err):
		return "disk I/O error"
	case c&0xff == 26:
		return "file is not a database"
	case sqlitex.IsCorrupt(err):
		return "database disk image is malformed"
	case sqlitex.IsLock(err):
		return "the file stayed locked by another process"
	}
	return err.Error()
}

func (c *checker) fatal(what string, err error) {
	if c.hotJournal(err) || c.placeFailed(what, err) || c.busy(CheckIntegrity, "", what, err) {
		return
	}
	c.r.state.unreadable = true
	c.r.add(CheckIntegrity, Error, "", FixRecover, "%s failed: %s", what, describeErr(err))
}

// readFailed reports a read of check that failed: a failure of the place
// (placeFailed), else damage ("WHAT: cause", fix recover).
func (c *checker) readFailed(check, object, what string, err error) {
	if c.placeFailed(what, err) || c.busy(check, object, what, err) {
		return
	}
	c.r.add(check, Error, object, FixRecover, "%s: %s", what, describeErr(err))
}

// FixIdle is what to do about a check that could not run because another
// process held the file locked.
const FixIdle = "run again when the file is idle"

// busy reports a check (what) that could not run because another process
// held the file locked for the whole busy timeout (err is a lock error:
// SQLITE_BUSY or SQLITE_LOCKED), which is not damage: an Info finding
// saying to run again when the file is idle, and an entry of Unchecked.
// It returns false for any other error.
func (c *checker) busy(check, object, what string, err error) bool {
	if !sqlitex.IsLock(err) {
		return false
	}
	c.r.Unchecked = append(c.r.Unchecked, what)
	c.r.add(check, Info, object, "", "%s could not run: another process kept the file locked (busy, not damage); %s", what, FixIdle)
	return true
}

// hotJournal reports a hot journal where the file can be written (where it
// cannot, it is a problem of the place): a write transaction that a
// process left half-done, which the next write-capable open rolls back.
// Nothing can be read until then, so doctor stops there.
func (c *checker) hotJournal(err error) bool {
	if !sqlitex.IsHotJournal(err) || sqlitex.Place(c.opts.Path) != "" {
		return false
	}
	c.r.state.hotJournal = true
	c.r.add(CheckFile, Error, c.opts.Path+"-journal", FixRepair,
		"an interrupted transaction: a process stopped in the middle of a write and left its -journal (the pages as they were before the write) beside the file; every read fails until it is rolled back, which repair (or any command that writes) does, keeping the file's journal mode")
	return true
}

// placeFailed reports a failure of what that comes from where the file
// lies (sqlitex.PlaceFailure: a full disk, a read-only mount, no
// permission), not from damage: one CheckPlace error with the reason and
// what to do, instead of damage and `recover`. It returns false for any
// other error.
func (c *checker) placeFailed(what string, err error) bool {
	why, ok := sqlitex.PlaceFailure(err, c.opts.Path)
	if !ok {
		return false
	}
	if c.r.state.place == "" {
		c.r.state.place = why
		c.r.add(CheckPlace, Error, "", placeFix(why, c.opts.Path), "%s failed because of where the file lies, not damage to it: %s", what, why)
	}
	return true
}

// placeFix is what to do about a place that keeps the file from being
// opened or written (the reason why, from sqlitex.PlaceFailure), for the
// file at path.
func placeFix(why, path string) string {
	switch {
	case strings.Contains(why, "disk full"):
		return "free space on the disk that holds the file (or copy the file with its -wal and -journal to a disk with room), then run " + sqlitex.Command(path, "doctor") + " again"
	case strings.Contains(why, "out of memory"):
		return "free memory, then run " + sqlitex.Command(path, "doctor") + " again"
	}
	return "run doctor where the file can be written: remount read-write, fix the permissions of the file and its directory, or copy the file with its -wal and -journal to a writable place"
}

// noteUnwritablePlace adds an Info finding when the file, readable and
// checked, cannot be written where it lies: reads work, and writes,
// migrate and repair need a writable place.
func noteUnwritablePlace(r *Report, path string) {
	if r.state.place != "" || r.state.unreadable {
		return
	}
	if why := sqlitex.Place(path); why != "" {
		r.add(CheckPlace, Info, "", "", "the file cannot be written here (%s): reads work; writes, migrate and repair need a place where it can be written", why)
	}
}

func (c *checker) run() {
	ctx, db, r := c.ctx, c.db, c.r
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&r.SQLiteVersion); err != nil {
		c.fatal("opening the file", err)
		return
	}
	if v, err := sqlitex.ParseVersion(r.SQLiteVersion); err == nil {
		r.WALResetBug = v.HasWALResetBug()
	}
	if r.WALResetBug {
		r.add(CheckSQLite, Warning, r.SQLiteVersion, "use a build whose SQLite engine embeds 3.51.3 or newer (both of hermes-state's engines embed 3.54.1; a C engine built with the tag libsqlite3 uses the system's library)",
			"SQLite %s has the WAL-reset corruption bug (3.7.0 to 3.51.2)", r.SQLiteVersion)
	} else {
		r.add(CheckSQLite, Info, "", "", "SQLite %s (no WAL-reset bug)", r.SQLiteVersion)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&r.JournalMode); err != nil {
		c.fatal("reading the journal mode", err)
		return
	}
	r.JournalMode = strings.ToLower(r.JournalMode)
	if c.walHeader {
		r.JournalMode = "wal"
	}
	c.pragmaInt("page_size", &r.PageSize)
	c.pragmaInt("page_count", &r.PageCount)
	c.pragmaInt("freelist_count", &r.FreelistCount)
	if r.PageCount > 0 {
		r.FreelistRatio = float64(r.FreelistCount) / float64(r.PageCount)
	}
	if c.opts.ftsOnly {
		if c.loadSchema() {
			c.r.objects = c.objects
			c.fts()
		}
		return
	}
	c.journal()
	c.space()
	if !c.integrity() {
		return
	}
	if !c.loadSchema() {
		return
	}
	c.schemaShape()
	c.fts()
	c.foreignKeys()
	c.counters()
	c.jsonColumns()
	c.parentLoops()
	c.activity()
	c.versions()
	c.coordination()
	c.collapseUnadopted()
	c.repairMarkers()
	c.newerSchema()
}

// collapseUnadopted handles a file hermes-state has not adopted yet (a
// Hermes file as Hermes left it: the baseline step is pending). Its
// differences from the v30 schema are what adoption adds, not damage: the
// schema warnings become one information finding, and repair leaves the
// schema to adoption (any writable open, or `migrate`).
func (c *checker) collapseUnadopted() {
	if !slices.Contains(c.r.PendingMigrations, baselineStep) {
		return
	}
	c.r.state.unadopted = true
	var kept []Finding
	n := 0
	for _, f := range c.r.Findings {
		if f.Check == CheckSchema && f.Severity == Warning {
			n++
			continue
		}
		kept = append(kept, f)
	}
	if n == 0 {
		return
	}
	c.r.Findings = kept
	st := c.r.state
	cols := 0
	for _, cs := range st.missingCols {
		cols += len(cs)
	}
	display := 0
	for _, tg := range st.missingTrig {
		if tg.Table == "" {
			display++
		}
	}
	c.r.add(CheckSchema, Info, "", "", "not adopted yet: %d tables, %d columns, %d indexes and %d display triggers of v30 are not in the file; adoption (the first writable open, or `%s`) adds them without rewriting rows",
		len(st.missingTabs), cols, len(st.missingIdx), display, FixMigrate)
}

// baselineStep is the migration that adopts a file; while it is pending
// the file is as Hermes (or an older program) left it.
const baselineStep = "0001_hermes_v30_baseline"

func (c *checker) pragmaInt(name string, dst *int64) {
	_ = c.db.QueryRowContext(c.ctx, "PRAGMA "+name).Scan(dst)
}

func (c *checker) journal() {
	r := c.r
	if r.JournalMode == "wal" && r.WALResetBug {
		r.add(CheckJournal, Error, "", "configure journal mode delete, or upgrade SQLite",
			"the file is in WAL mode on a SQLite build with the WAL-reset bug")
	}
	if r.JournalMode != r.JournalConfigured && !r.JournalExplicit {
		// Nobody configured a mode here: the file's mode was chosen by
		// whoever made it (delete is the advice for network filesystems).
		r.add(CheckJournal, Info, "", "", "journal mode %s, the file's own (no mode configured: a writable open keeps it; --journal-mode wal or delete switches it)", r.JournalMode)
	} else if r.JournalMode != r.JournalConfigured {
		fix := FixRepair
		msg := "the file is in journal mode %s but %s is configured"
		if r.JournalMode == "wal" {
			msg += "; a WAL file is never switched back while the store is open (repair switches it when no other process uses it)"
		}
		r.state.journalWrong = true
		r.add(CheckJournal, Warning, "", fix, msg, r.JournalMode, r.JournalConfigured)
	} else {
		r.add(CheckJournal, Info, "", "", "journal mode %s, as configured", r.JournalMode)
	}
}

func (c *checker) space() {
	r := c.r
	if r.PageCount > 0 && r.FreelistRatio > 0.25 {
		r.add(CheckSpace, Warning, "", FixVacuum, "%d of %d pages (%.0f%%) are free; VACUUM would give %s back",
			r.FreelistCount, r.PageCount, 100*r.FreelistRatio, bytesString(r.FreelistCount*r.PageSize))
	} else {
		r.add(CheckSpace, Info, "", "", "%d of %d pages free (%.1f%%)", r.FreelistCount, r.PageCount, 100*r.FreelistRatio)
	}
	if r.WALBytes > c.opts.WALWarnBytes {
		r.add(CheckSpace, Warning, c.opts.Path+"-wal", FixCkpt, "the WAL holds %s: checkpoints are not keeping up", bytesString(r.WALBytes))
	}
}

// bytesString is a byte count for people ("1.5 MiB").
func bytesString(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

var (
	ftsLineRE   = regexp.MustCompile(`(?:FTS5 table (?:\w+\.)?(\w+)|fts5: .*table "(\w+)")`)
	indexLineRE = regexp.MustCompile(`(?:missing from index|entries in index|entry in index|index) (\w+)`)
)

// integrity runs quick_check (integrity_check with Full) and classifies
// every line. It returns false when the schema cannot be read.
func (c *checker) integrity() bool {
	pragma := "quick_check(200)"
	if c.opts.Full {
		pragma = "integrity_check(200)"
	}
	var lines []string
	rows, err := c.db.QueryContext(c.ctx, "PRAGMA "+pragma)
	if err == nil {
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				break
			}
			lines = append(lines, s)
		}
		err = rows.Err()
		rows.Close()
	}
	// A check that fails at its first step reports the error from Query
	// (SQLite 3.54 on either engine), a later one from rows.Err:
	// both are classified below the same way.
	pageLevel := 0
	for _, l := range lines {
		if l == "ok" {
			continue
		}
		if m := ftsLineRE.FindStringSubmatch(l); m != nil {
			name := m[1] + m[2]
			c.r.state.badFTS[name] = l
			c.r.state.ftsMismatch[name] = l
			c.r.add(CheckFTS, Error, name, FixRepair, "FTS index %s is inconsistent: %s", name, l)
			continue
		}
		if m := indexLineRE.FindStringSubmatch(l); m != nil && !strings.HasPrefix(l, "***") && !strings.Contains(l, "Tree ") && !strings.Contains(l, "Page ") {
			c.r.state.badIndexes[m[1]] = true
			c.r.add(CheckIndex, Error, m[1], FixRepair, "index %s does not match its table: %s", m[1], l)
			continue
		}
		if strings.HasPrefix(l, "*** in database") {
			continue
		}
		pageLevel++
		if pageLevel <= 5 {
			c.r.add(CheckIntegrity, Error, "", FixRecover, "page-level damage: %s", l)
		}
	}
	if pageLevel > 5 {
		c.r.add(CheckIntegrity, Error, "", FixRecover, "%d more lines of page-level damage", pageLevel-5)
	}
	if pageLevel > 0 {
		c.r.state.unreadable = true
	}
	if err != nil {
		if _, coded := sqlitex.Code(err); coded && !sqlitex.IsCorrupt(err) && !sqlitex.IsIOErr(err) && !sqlitex.IsLock(err) {
			// e.g. "no such table" for a dropped FTS shadow table: the
			// FTS checks below name it.
			c.r.add(CheckIntegrity, Warning, "", FixRepair, "PRAGMA %s stopped early: %v", pragma, err)
			return true
		}
		c.fatal("PRAGMA "+pragma, err)
		return false
	}
	c.pragmaRan = true
	if len(lines) == 1 && lines[0] == "ok" {
		c.r.add(CheckIntegrity, Info, "", "", "%s: ok", strings.TrimSuffix(pragma, "(200)"))
	}
	return true
}

func (c *checker) loadSchema() bool {
	rows, err := c.db.QueryContext(c.ctx, "SELECT type, name, COALESCE(sql, '') FROM sqlite_master")
	if err != nil {
		c.fatal("reading the schema", err)
		return false
	}
	defer rows.Close()
	c.objects = map[string]map[string]string{}
	for rows.Next() {
		var typ, name, s string
		if err := rows.Scan(&typ, &name, &s); err != nil {
			c.fatal("reading the schema", err)
			return false
		}
		if c.objects[typ] == nil {
			c.objects[typ] = map[string]string{}
		}
		c.objects[typ][name] = s
	}
	if err := rows.Err(); err != nil {
		c.fatal("reading the schema", err)
		return false
	}
	return true
}

func (c *checker) has(typ, name string) bool {
	_, ok := c.objects[typ][name]
	return ok
}

// schemaShape compares tables, columns, indexes and display triggers with
// the embedded v30 schema.
func (c *checker) schemaShape() {
	r := c.r
	ref, err := schemaref.ReferenceColumns()
	if err != nil {
		r.add(CheckSchema, Error, "", "", "the embedded schema cannot be read: %v", err)
		return
	}
	refIdx := map[string]bool{}
	for _, st := range schemaref.Schema() {
		switch st.Kind {
		case "table":
			if !c.has("table", st.Name) {
				r.state.missingTabs = append(r.state.missingTabs, st)
				r.add(CheckSchema, Warning, st.Name, FixRepair, "table %s is missing", st.Name)
				continue
			}
			have, err := tableInfo(c.ctx, c.db, st.Name)
			if err != nil {
				c.readFailed(CheckSchema, st.Name, "cannot read the columns of "+st.Name, err)
				continue
			}
			present := map[string]bool{}
			for _, col := range have {
				present[strings.ToLower(col.Name)] = true
			}
			refSet := map[string]bool{}
			for _, col := range ref[st.Name] {
				refSet[strings.ToLower(col.Name)] = true
				if !present[strings.ToLower(col.Name)] {
					r.state.missingCols[st.Name] = append(r.state.missingCols[st.Name], col)
					r.add(CheckSchema, Warning, st.Name+"."+col.Name, FixRepair, "column %s.%s is missing", st.Name, col.Name)
				}
			}
			for _, col := range have {
				if !refSet[strings.ToLower(col.Name)] {
					r.add(CheckSchema, Info, st.Name+"."+col.Name, "", "extra column %s.%s (not in the v30 schema; kept)", st.Name, col.Name)
				}
			}
		case "index":
			refIdx[st.Name] = true
			if !c.has("index", st.Name) {
				r.state.missingIdx = append(r.state.missingIdx, st)
				r.add(CheckSchema, Warning, st.Name, FixRepair, "index %s is missing (queries that use it scan the table)", st.Name)
			}
		case "trigger":
			if !c.has("trigger", st.Name) {
				r.state.missingTrig = append(r.state.missingTrig, triggerDef{Name: st.Name, SQL: st.SQL})
				r.add(CheckSchema, Warning, st.Name, FixRepair, "display trigger %s is missing (display order is not kept for new messages)", st.Name)
			}
		}
	}
	var extra []string
	for name, s := range c.objects["index"] {
		if refIdx[name] || s == "" || strings.HasPrefix(name, "sqlite_autoindex_") || strings.HasPrefix(name, "hermesstate_") {
			continue
		}
		extra = append(extra, name)
	}
	sort.Strings(extra)
	for _, name := range extra {
		r.add(CheckSchema, Info, name, "", "extra index %s (not in the v30 schema; kept)", name)
	}
}

// foreignKeys runs PRAGMA foreign_key_check and counts orphans per
// relation.
func (c *checker) foreignKeys() {
	rows, err := c.db.QueryContext(c.ctx, "PRAGMA foreign_key_check")
	if err != nil {
		c.readFailed(CheckForeignKey, "", "foreign_key_check failed", err)
		return
	}
	type key struct{ table, parent string }
	counts := map[key]int64{}
	var order []key
	for rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int64
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			break
		}
		k := key{table, parent}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		c.readFailed(CheckForeignKey, "", "foreign_key_check failed", err)
	}
	for _, k := range order {
		col := fkColumn(k.table, k.parent)
		c.r.state.orphans[k.table+"."+col] = counts[k]
		c.r.add(CheckForeignKey, Warning, k.table+"."+col, FixRepair,
			"%d %s rows reference a missing %s row (%s); repair keeps them and restores the reference", counts[k], k.table, k.parent, col)
	}
}

// fkColumn names the referencing column of the Hermes foreign keys.
func fkColumn(table, parent string) string {
	switch {
	case table == "sessions" && parent == "sessions":
		return "parent_session_id"
	case table == "sessions" && parent == "system_prompts":
		return "system_prompt_hash"
	}
	return "session_id"
}

// counterSQL selects the sessions whose message_count or tool_call_count
// disagree with their ACTIVE rows: Hermes v30 keeps both as the counts of
// the active messages (_active_transcript_counts, after a rewind and a
// compaction; rows of a file from before the active column, or with it
// NULL, are active). tool_call_count is accepted under either Hermes rule:
// the number of tool calls in tool_calls (v3+), or one per tool-related
// message (v1–v2). activeCol says whether messages has the active column.
func counterSQL(activeCol bool) string {
	active := "1"
	if activeCol {
		active = "COALESCE(active, 1) = 1"
	}
	return `WITH agg AS (
  SELECT session_id, count(*) AS n,
         SUM(CASE WHEN tool_calls IS NULL OR tool_calls = '' THEN 0
                  WHEN json_valid(tool_calls) AND json_type(tool_calls) = 'array' THEN json_array_length(tool_calls)
                  ELSE 1 END) AS tc,
         SUM(CASE WHEN role = 'tool' OR (tool_calls IS NOT NULL AND tool_calls <> '') THEN 1 ELSE 0 END) AS tc_old
  FROM messages WHERE ` + active + ` GROUP BY session_id)
SELECT s.id, COALESCE(s.message_count, 0), COALESCE(s.tool_call_count, 0), COALESCE(a.n, 0), COALESCE(a.tc, 0)
FROM sessions AS s LEFT JOIN agg AS a ON a.session_id = s.id
WHERE COALESCE(s.message_count, 0) <> COALESCE(a.n, 0)
   OR (COALESCE(s.tool_call_count, 0) <> COALESCE(a.tc, 0) AND COALESCE(s.tool_call_count, 0) <> COALESCE(a.tc_old, 0))`
}

// hasColumn reports whether table has column (false when it cannot be read).
func (c *checker) hasColumn(table, column string) bool {
	cols, err := tableInfo(c.ctx, c.db, table)
	if err != nil {
		return false
	}
	for _, col := range cols {
		if strings.EqualFold(col.Name, column) {
			return true
		}
	}
	return false
}

func (c *checker) counters() {
	if !c.has("table", "sessions") || !c.has("table", "messages") {
		return
	}
	_ = c.db.QueryRowContext(c.ctx, "SELECT count(*) FROM sessions").Scan(&c.r.Sessions)
	_ = c.db.QueryRowContext(c.ctx, "SELECT count(*) FROM messages").Scan(&c.r.Messages)
	c.r.state.activeCol = c.hasColumn("messages", "active")
	rows, err := c.db.QueryContext(c.ctx, counterSQL(c.r.state.activeCol))
	if err != nil {
		c.readFailed(CheckCounters, "", "counting messages failed", err)
		return
	}
	defer rows.Close()
	var n int64
	var example string
	for rows.Next() {
		var id string
		var mc, tc, rn, rtc int64
		if err := rows.Scan(&id, &mc, &tc, &rn, &rtc); err != nil {
			break
		}
		if n == 0 {
			example = fmt.Sprintf("session %s: message_count %d for %d active rows, tool_call_count %d for %d tool calls", id, mc, rn, tc, rtc)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		c.readFailed(CheckCounters, "", "counting messages failed", err)
		return
	}
	c.r.state.counterRows = n
	if n > 0 {
		c.r.add(CheckCounters, Warning, "sessions", FixRepair, "%d sessions have counters that disagree with their active rows (first: %s)", n, example)
	}
}

// activity checks hermesstate's session activity table (the listing by
// last activity reads it): its triggers are all there and every session's
// row holds the value computed from the session and its messages.
func (c *checker) activity() {
	if !c.has("table", repo.ActivityTable) || !c.has("table", "sessions") || !c.has("table", "messages") {
		return
	}
	var missing []string
	for _, t := range repo.SessionActivityTriggers() {
		if !c.has("trigger", t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		c.r.state.activity = true
		c.r.add(CheckActivity, Warning, repo.ActivityTable, FixRepair, "triggers that keep %s are missing (%s): the listing by last activity may be stale",
			repo.ActivityTable, strings.Join(missing, ", "))
		return
	}
	var n int64
	if err := c.db.QueryRowContext(c.ctx, repo.ActivityDriftSQL()).Scan(&n); err != nil {
		if c.busy(CheckActivity, repo.ActivityTable, "the check of "+repo.ActivityTable, err) {
			return
		}
		c.r.add(CheckActivity, Warning, repo.ActivityTable, FixRepair, "checking %s failed: %s", repo.ActivityTable, describeErr(err))
		c.r.state.activity = true
		return
	}
	if n > 0 {
		c.r.state.activity = true
		c.r.add(CheckActivity, Warning, repo.ActivityTable, FixRepair, "%d sessions have a last activity in %s that disagrees with their rows", n, repo.ActivityTable)
	}
}

func (c *checker) versions() {
	g, err := gormOn(c.eng, c.db)
	if err != nil {
		return
	}
	g = g.WithContext(c.ctx)
	v, err := migrations.FileVersion(g)
	if err != nil {
		c.readFailed(CheckMigrations, "schema_version", "cannot read schema_version", err)
		return
	}
	c.r.SchemaVersion = v
	c.r.PendingMigrations = []string{}
	if v > migrations.HermesSchemaVersion {
		return // never migrated: see newerSchema
	}
	pending, err := migrations.Pending(c.ctx, g)
	if err != nil {
		c.readFailed(CheckMigrations, migrations.TableName, "cannot read the applied migrations", err)
		return
	}
	if pending != nil {
		c.r.PendingMigrations = pending
	}
	switch {
	case slices.Contains(pending, baselineStep):
		// A Hermes file hermes-state has not adopted: information, the
		// file is as Hermes wrote it.
		c.r.add(CheckMigrations, Info, "", "", "Hermes schema version %d, not adopted by hermes-state yet: the first writable open, or `%s`, runs %s",
			v, FixMigrate, strings.Join(pending, ", "))
	case len(pending) > 0:
		c.r.add(CheckMigrations, Info, "", "", "schema version %d; this hermes-state has steps the file has not run yet, which the next writable open, or `%s`, runs: %s",
			v, FixMigrate, strings.Join(pending, ", "))
	default:
		c.r.add(CheckMigrations, Info, "", "", "schema version %d, no migration pending", v)
	}
}

// FixUpgrade is the advice for a file of a newer Hermes schema.
const FixUpgrade = "upgrade hermes-state to a release that knows this schema version; until then it opens the file read-only"

// newerSchema handles a file written by a newer Hermes (schema_version
// above 30). This build never migrates, repairs or otherwise writes to it,
// so its differences from v30 are information, and fixes that would write
// to it are replaced by the advice to upgrade.
func (c *checker) newerSchema() {
	v := c.r.SchemaVersion
	if v <= migrations.HermesSchemaVersion {
		return
	}
	for i := range c.r.Findings {
		f := &c.r.Findings[i]
		switch {
		case f.Check == CheckSchema && f.Severity == Warning, f.Check == CheckJournal && f.Severity == Warning:
			f.Severity, f.Fix = Info, ""
			f.Message = fmt.Sprintf("(schema v%d) %s", v, f.Message)
		case f.Fix == FixRepair || f.Fix == FixMigrate:
			f.Fix = FixUpgrade
		}
	}
	c.r.add(CheckMigrations, Warning, "", FixUpgrade,
		"schema version %d is newer than %d, the newest this hermes-state knows (written by a newer Hermes): it is opened read-only and never migrated or repaired; writes through hermes-state are refused",
		v, migrations.HermesSchemaVersion)
}

func (c *checker) repairMarkers() {
	if !c.has("table", "state_meta") {
		return
	}
	rows, err := c.db.QueryContext(c.ctx, "SELECT key FROM state_meta WHERE key LIKE ? ESCAPE '\\'", strings.ReplaceAll(repairMarkerPrefix, "_", "\\_")+"%")
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if rows.Scan(&k) == nil {
			t := strings.TrimPrefix(k, repairMarkerPrefix)
			c.r.state.badFTS[t] = "an interrupted repair left it partly rebuilt"
			c.r.add(CheckRepair, Warning, t, FixRepair, "a repair of %s was interrupted; run repair again to finish it", t)
		}
	}
}

func tableInfo(ctx context.Context, db *sql.DB, table string) ([]schemaref.Column, error) {
	rows, err := db.QueryContext(ctx, "SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schemaref.Column
	for rows.Next() {
		var col schemaref.Column
		var nn int
		if err := rows.Scan(&col.CID, &col.Name, &col.Type, &nn, &col.Default, &col.PK); err != nil {
			return nil, err
		}
		col.NotNull = nn != 0
		out = append(out, col)
	}
	return out, rows.Err()
}
