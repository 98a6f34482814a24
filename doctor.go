package hermesstate

import (
	"context"

	"github.com/hermesstate/hermesstate/internal/errs"

	"github.com/hermesstate/hermesstate/doctor"
	"github.com/hermesstate/hermesstate/repo"
)

// Health reports, repair and salvage (`hermes-state doctor`, `repair`,
// `recover`). The work is done by package doctor on the file path, with its
// own connections, so a file the store refuses to open can still be
// examined and salvaged.

// DoctorOptions configures Doctor.
type DoctorOptions struct {
	// Full runs PRAGMA integrity_check (every page and index entry) instead
	// of quick_check, and compares external-content FTS indexes with their
	// content row by row.
	Full bool
}

// DoctorReport is the doctor report: file facts (SQLite version and whether
// it has the WAL-reset bug, journal mode configured and in effect, schema
// version and pending migrations, FTS layout, free pages, WAL size) and the
// findings, each with a severity and the command that fixes it. OK() is
// false when anything is wrong.
type DoctorReport = doctor.Report

// Finding is one entry of a DoctorReport.
type Finding = doctor.Finding

// Severities of a Finding.
const (
	SeverityInfo    = doctor.Info
	SeverityWarning = doctor.Warning
	SeverityError   = doctor.Error
)

// Doctor examines the SQLite file cfg names without opening a Store and
// without changing the file (no migration runs). It returns an error
// wrapping ErrNotFound when there is no file; damage is reported as
// findings, not as an error.
func Doctor(ctx context.Context, cfg Config, opts DoctorOptions) (*DoctorReport, error) {
	cfg = cfg.withDefaults()
	if cfg.Driver == DriverPostgres {
		return nil, errs.Errorf(ErrUnsupported, "doctor", "doctor examines SQLite files; on PostgreSQL the server keeps integrity (use `hermes-state fts check` for the search indexes, `migrate` for the schema version)")
	}
	return doctor.Check(ctx, doctor.Options{Path: cfg.Path, Full: opts.Full, JournalMode: cfg.configuredJournal(), Engine: cfg.Engine})
}

// Doctor examines the store's file (see the package-level Doctor). When a
// write of this store met corruption, the report says so as an error.
func (s *Store) Doctor(ctx context.Context, opts DoctorOptions) (*DoctorReport, error) {
	r, err := Doctor(ctx, s.cfg, opts)
	if err != nil {
		return nil, err
	}
	if c := s.db.Corrupt(); c != nil {
		r.Findings = append([]Finding{{Check: doctor.CheckIntegrity, Severity: doctor.Error, Fix: doctor.FixRecover,
			Message: "a write of this store met a damaged database file; the store refuses writes until it is reopened"}}, r.Findings...)
	}
	return r, nil
}

// CheckFTS checks every full-text index of the store cfg names without
// changing it: on SQLite, FTS5 'integrity-check' of each FTS table (an
// external-content one compared with its content) in a rolled-back
// transaction, with no migration and no journal-mode switch (a trigram
// index SQLite before 3.45 wrote is recognised as consistent), and the CJK
// posting index against the messages; on PostgreSQL, the search objects
// through a read-only store. It returns one result per index, and an error
// wrapping ErrNotFound when there is no store, ErrStorage when the file
// cannot be read (or a hot journal must be rolled back first), ErrCorrupt
// when its schema cannot be read.
func CheckFTS(ctx context.Context, cfg Config) ([]repo.FTSCheck, error) {
	cfg = cfg.withDefaults()
	if cfg.Driver == DriverPostgres {
		cfg.ReadOnly = true
		st, err := Open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		return st.Search().Check(ctx)
	}
	return doctor.CheckIndexes(ctx, cfg.Path, cfg.Engine)
}

// RepairOptions configures Repair.
type RepairOptions struct {
	// DryRun lists what would be done without changing the file.
	DryRun bool
	// ChunkRows bounds each transaction of a long step (default 5000).
	ChunkRows int
	// Progress, when set, is called as long steps advance.
	Progress func(step string, done, total int64)
}

// RepairReport lists what Repair did (or would do), with the doctor
// reports before and after.
type RepairReport = doctor.RepairReport

// Repair fixes in place what is safe to fix, in bounded steps, never
// deleting a row (see doctor.Repair). Other processes may keep
// using the file meanwhile. It returns an error wrapping ErrCorrupt, having
// changed nothing, when the file has page-level damage (use Recover),
// ErrBusy when the file stayed locked, ErrStorage otherwise.
func Repair(ctx context.Context, cfg Config, opts RepairOptions) (*RepairReport, error) {
	cfg = cfg.withDefaults()
	return doctor.Repair(ctx, doctor.RepairOptions{Path: cfg.Path, JournalMode: cfg.configuredJournal(),
		DryRun: opts.DryRun, ChunkRows: opts.ChunkRows, Progress: opts.Progress, Engine: cfg.Engine})
}

// RecoverOptions configures Recover.
type RecoverOptions struct {
	// From is the damaged file (never written to); To the new file, which
	// must not exist.
	From, To string
	// AllowPartial keeps the new file even when rows could not be read.
	AllowPartial bool
	// JournalMode of the new file (default wal).
	JournalMode JournalMode
	// Progress, when set, is called as tables are copied.
	Progress func(step string, done, total int64)
	// Engine is the SQLite engine (see Config.Engine).
	Engine string
}

// RecoverReport says, per table, what Recover saved and lost, and holds the
// doctor report of the new file.
type RecoverReport = doctor.RecoverReport

// Recover salvages a damaged file into a new one without writing to the
// source: tables are copied in rowid ranges, stepping around what cannot be
// read, then indexes, FTS tables and triggers are built on the new file and
// it is adopted to v30. It returns an error wrapping ErrConflict when To
// exists, ErrNotFound when From does not, ErrCorrupt when rows were lost
// and AllowPartial is false (the new file is then removed), ErrStorage
// otherwise; the report is returned in every case where work began.
func Recover(ctx context.Context, opts RecoverOptions) (*RecoverReport, error) {
	return doctor.Recover(ctx, doctor.RecoverOptions{From: opts.From, To: opts.To, AllowPartial: opts.AllowPartial,
		JournalMode: string(opts.JournalMode), Progress: opts.Progress, Engine: opts.Engine})
}
