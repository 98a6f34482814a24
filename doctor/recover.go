package doctor

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	hfts "github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/repo"
)

// RecoverOptions configures Recover.
type RecoverOptions struct {
	// From is the damaged file; it is never written to.
	From string
	// To is the new file; it must not exist.
	To string
	// AllowPartial keeps the new file when rows could not be read.
	AllowPartial bool
	// ChunkRows is the rowid range copied per read; default 1000.
	ChunkRows int
	// JournalMode of the new file ("wal" when empty, or "delete").
	JournalMode string
	// Progress, when set, is called as tables are copied.
	Progress func(step string, done, total int64)
	// Engine is the SQLite engine (see Options.Engine).
	Engine string
}

// TableResult is what Recover saved of one table.
type TableResult struct {
	Table string `json:"table"`
	Saved int64  `json:"saved"`
	// Lost counts rows known to exist (their rowids are in a readable
	// index) that could not be read, plus rows that could not be written.
	Lost int64 `json:"lost"`
	// Unreadable lists the rowid ranges that could not be read.
	Unreadable []string `json:"unreadable,omitempty"`
	// Unknown is true when an unreadable range may have held rows no
	// index could account for.
	Unknown bool   `json:"unknown,omitempty"`
	Error   string `json:"error,omitempty"`
}

// RecoverReport says what Recover saved.
type RecoverReport struct {
	From          string        `json:"from"`
	To            string        `json:"to"`
	HeaderRebuilt bool          `json:"header_rebuilt"`
	UsedWAL       bool          `json:"used_wal"`
	Tables        []TableResult `json:"tables"`
	Saved         int64         `json:"saved"`
	Lost          int64         `json:"lost"`
	// Complete is true when every row of the source was saved.
	Complete bool `json:"complete"`
	// Problems lists objects that could not be recreated on the new file.
	Problems []string `json:"problems"`
	// Repairs are the repair steps run on the new file after the copy.
	Repairs []Action `json:"repairs"`
	// Doctor is the report on the new file.
	Doctor  *Report `json:"doctor,omitempty"`
	Elapsed string  `json:"elapsed"`
}

// derived tables are rebuilt on the new file, never copied.
func isDerived(name string, fts map[string]ftsTable) bool {
	if hfts.IsCJKTable(name) || name == repo.ActivityTable || strings.HasPrefix(name, "sqlite_") {
		return true
	}
	for t := range fts {
		if strings.HasPrefix(name, t+"_") {
			for _, sh := range []string{"_data", "_idx", "_config", "_docsize", "_content"} {
				if name == t+sh {
					return true
				}
			}
		}
	}
	return false
}

// Recover salvages the file opts.From into the new file opts.To without
// ever writing to the source (it is opened read-only and immutable; when it
// has a -wal, or its header is damaged, a private copy is read instead).
// Tables are copied in rowid ranges; a range that fails to read is split in
// halves down to single rows, so only unreadable rows are skipped. The new
// file then gets the source's views, indexes, FTS tables (rebuilt from the
// copied rows) and triggers, and is adopted to v30 (migrations).
//
// It returns the report and: an error wrapping errs.ErrConflict when To
// exists, errs.ErrNotFound when From does not, errs.ErrCorrupt when
// rows were lost and AllowPartial is false (To is then removed), or
// errs.ErrStorage for other failures.
func Recover(ctx context.Context, opts RecoverOptions) (*RecoverReport, error) {
	start := time.Now()
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = 1000
	}
	rep := &RecoverReport{From: opts.From, To: opts.To, Tables: []TableResult{}, Problems: []string{}}
	defer func() { rep.Elapsed = time.Since(start).Round(time.Millisecond).String() }()
	const op = "recover"
	if err := sqlitex.CheckStoreFile(op, opts.From); err != nil {
		return rep, err
	}
	if err := sqlitex.CheckRegular(op, opts.To); err != nil {
		return rep, err
	}
	if _, err := os.Stat(opts.To); err == nil {
		return rep, errs.Errorf(errs.ErrConflict, op, "%s exists; recover writes a new file", opts.To)
	}
	absFrom, _ := filepath.Abs(opts.From)
	absTo, _ := filepath.Abs(opts.To)
	if absFrom == absTo {
		return rep, errs.Errorf(errs.ErrInvalid, op, "--from and --to are the same file")
	}
	// Everything is built in a private work directory beside To (its name
	// carries this process's id; those of dead processes are removed) and
	// the finished file is given its name at the end, never overwriting:
	// a kill or a full disk leaves nothing under To.
	safefile.RemoveStale(filepath.Dir(absTo), recoverWorkPrefix)
	tmp, err := os.MkdirTemp(filepath.Dir(absTo), safefile.TempName(recoverWorkPrefix)+"-")
	if err != nil {
		return rep, errs.Wrap(errs.ErrStorage, op, err, "cannot create a work directory beside "+opts.To+": "+sqlitex.Describe(err))
	}
	defer os.RemoveAll(tmp)
	work, err := safefile.CreateTemp(tmp, "new-")
	if err != nil {
		return rep, errs.Wrap(errs.ErrStorage, op, err, "cannot create a work file beside "+opts.To+": "+sqlitex.Describe(err))
	}

	eng, err := engineFor(op, opts.Engine)
	if err != nil {
		return rep, err
	}
	// The damaged source is read through the pure-Go engine whatever the
	// engine: the C driver runs PRAGMA synchronous on every new connection
	// before its writable_schema, and that PRAGMA loads the schema, which
	// fails on a truncated file or a damaged schema page before salvage can
	// start. No lock is shared with a C connection: the source is opened
	// immutable, or a private copy is.
	src, err := openSource(sqlitex.GoEngine, absFrom, tmp, rep)
	if err != nil {
		return rep, err
	}
	defer src.Close()
	if err := recoverInto(ctx, eng, src, work, opts, rep); err != nil {
		return rep, err
	}
	for _, t := range rep.Tables {
		rep.Saved += t.Saved
		rep.Lost += t.Lost
	}
	rep.Complete = rep.Lost == 0
	for _, t := range rep.Tables {
		if t.Unknown || t.Error != "" {
			rep.Complete = false
		}
	}
	// What the copy carried over from the source and repair fixes in
	// place (missing triggers, counters, references to lost rows, FTS).
	fix, err := Repair(ctx, RepairOptions{Path: work, JournalMode: opts.JournalMode, Engine: opts.Engine})
	if err != nil {
		return rep, err
	}
	rep.Repairs = fix.Actions
	rep.Doctor = fix.After
	if rep.Doctor != nil {
		rep.Doctor.Path = absTo
	}
	if !rep.Complete && !opts.AllowPartial {
		return rep, errs.Errorf(errs.ErrCorrupt, op, "%d rows of %s could not be read (%s); nothing was kept: rerun with --allow-partial to keep the %d rows saved",
			rep.Lost, opts.From, lostSummary(rep), rep.Saved)
	}
	if err := safefile.Publish(work, absTo); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return rep, errs.Errorf(errs.ErrConflict, op, "%s appeared while recover ran; the recovered file was not kept", opts.To)
		}
		return rep, errs.Wrap(errs.ErrStorage, op, err, "cannot name the recovered file "+opts.To+": "+sqlitex.Describe(err))
	}
	return rep, nil
}

// recoverWorkPrefix starts the name of recover's work directory.
const recoverWorkPrefix = ".hermes-recover-"

func lostSummary(rep *RecoverReport) string {
	var parts []string
	for _, t := range rep.Tables {
		if t.Lost > 0 || t.Unknown || t.Error != "" {
			s := fmt.Sprintf("%s: %d lost", t.Table, t.Lost)
			if t.Unknown {
				s += " or more"
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// openSource opens the source for reading without writing to it.
func openSource(eng *sqlitex.Engine, from, tmp string, rep *RecoverReport) (*sql.DB, error) {
	const op = "recover"
	f, err := os.Open(from)
	if err != nil {
		return nil, errtext.Storage(op, err, "cannot read "+from, from)
	}
	b := make([]byte, 100)
	n, _ := io.ReadFull(f, b)
	f.Close()
	_, hdrOK := readHeader(b[:n])
	wal, walErr := os.Stat(from + "-wal")
	if hdrOK && (walErr != nil || wal.Size() == 0) {
		u := &url.URL{Scheme: "file", Path: from}
		// writable_schema: a truncated file (header page count beyond the
		// end of the file) is read up to its end instead of refused. The
		// connection is read-only: nothing is written.
		db, err := eng.OpenDB(u.String() + "?mode=ro&immutable=1&_pragma=writable_schema(1)")
		if err != nil {
			return nil, errtext.Storage(op, err, "cannot open "+from, from)
		}
		db.SetMaxOpenConns(1)
		return db, nil
	}
	// A private copy: with the -wal (its commits are part of the database),
	// or with a rebuilt header.
	cp := filepath.Join(tmp, "source.db")
	if err := copyFile(from, cp); err != nil {
		return nil, errtext.Storage(op, err, "cannot copy "+from, from)
	}
	if hdrOK {
		if err := copyFile(from+"-wal", cp+"-wal"); err != nil {
			return nil, errtext.Storage(op, err, "cannot copy "+from+"-wal", from)
		}
		rep.UsedWAL = true
	} else {
		if err := rebuildHeader(eng, cp); err != nil {
			return nil, errs.Wrap(errs.ErrCorrupt, op, err, "the header of "+from+" is damaged and could not be rebuilt")
		}
		rep.HeaderRebuilt = true
	}
	db, err := eng.OpenDB(eng.DSN(sqlitex.ConnConfig{Path: cp, BusyTimeout: time.Second, QueryOnly: true, WritableSchema: true}))
	if err != nil {
		return nil, errtext.Storage(op, err, "cannot open the copy of "+from, "")
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// rebuildHeader writes a plausible 100-byte header over a private copy
// whose header is damaged, trying the page sizes SQLite allows until the
// schema can be read.
func rebuildHeader(eng *sqlitex.Engine, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	for _, ps := range []int64{4096, 1024, 2048, 8192, 16384, 32768, 65536, 512} {
		if st.Size() < ps || st.Size()%ps != 0 {
			continue
		}
		h := make([]byte, 100)
		copy(h, sqliteMagic)
		if ps == 65536 {
			binary.BigEndian.PutUint16(h[16:], 1)
		} else {
			binary.BigEndian.PutUint16(h[16:], uint16(ps))
		}
		h[18], h[19] = 1, 1 // rollback journal: the copy has no WAL
		h[21], h[22], h[23] = 64, 32, 32
		binary.BigEndian.PutUint32(h[24:], 1)                    // change counter
		binary.BigEndian.PutUint32(h[28:], uint32(st.Size()/ps)) // pages
		binary.BigEndian.PutUint32(h[40:], 1)                    // schema cookie
		binary.BigEndian.PutUint32(h[44:], 4)                    // schema format
		binary.BigEndian.PutUint32(h[56:], 1)                    // UTF-8
		binary.BigEndian.PutUint32(h[92:], 1)                    // version-valid-for
		binary.BigEndian.PutUint32(h[96:], 3053003)              // SQLite version
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(h, 0)
		f.Close()
		if err != nil {
			return err
		}
		db, err := eng.OpenDB(eng.DSN(sqlitex.ConnConfig{Path: path, QueryOnly: true}))
		if err != nil {
			return err
		}
		var n int
		err = db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n)
		db.Close()
		if err == nil && n > 0 {
			return nil
		}
	}
	return errors.New("no page size gives a readable schema")
}

type srcObject struct{ Type, Name, Table, SQL string }

func recoverInto(ctx context.Context, eng *sqlitex.Engine, src *sql.DB, to string, opts RecoverOptions, rep *RecoverReport) error {
	const op = "recover"
	objs, schemaLost, err := readSchema(ctx, src)
	if err != nil {
		return errs.Wrap(errs.ErrCorrupt, op, err, "the schema of "+opts.From+" cannot be read: "+describeErr(err))
	}
	if schemaLost > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d schema rows of the source could not be read; the tables they described are not recovered", schemaLost))
		rep.Tables = append(rep.Tables, TableResult{Table: "sqlite_master", Lost: schemaLost, Unknown: true})
	}
	ftsTabs := map[string]ftsTable{}
	for _, o := range objs {
		if o.Type == "table" {
			if t, ok := parseFTS(o.SQL); ok {
				ftsTabs[o.Name] = t
			}
		}
	}
	mode := strings.ToLower(opts.JournalMode)
	if mode != "delete" {
		mode = "wal"
	}
	dst, err := openRecoverTarget(ctx, eng, to, mode)
	if err != nil {
		return err
	}
	defer dst.Close()
	// 1. Ordinary tables, with the source's own DDL (column order kept).
	if err := recoverTables(ctx, src, dst, objs, ftsTabs, opts, rep); err != nil {
		return err
	}
	// 2. Views, FTS tables (filled from the copied rows), indexes, triggers.
	recreateObjects(ctx, dst, objs, ftsTabs, rep)
	// 3. Adoption, then the CJK posting index from the rows.
	if err := adoptRecovered(ctx, eng, dst); err != nil {
		return err
	}
	if mode == "wal" {
		_, _ = dst.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	return nil
}

// openRecoverTarget creates the recovered file to (mode 0600) in journal
// mode mode.
func openRecoverTarget(ctx context.Context, eng *sqlitex.Engine, to, mode string) (*sql.DB, error) {
	const op = "recover"
	dst, err := eng.OpenDB(eng.DSN(sqlitex.ConnConfig{Path: to, BusyTimeout: 5 * time.Second, Immediate: true}))
	if err != nil {
		return nil, errtext.Storage(op, err, "cannot create "+to, to)
	}
	dst.SetMaxOpenConns(1)
	if _, err := dst.ExecContext(ctx, "PRAGMA journal_mode="+strings.ToUpper(mode)); err != nil {
		dst.Close()
		return nil, errtext.Storage(op, err, "cannot create "+to, to)
	}
	if err := os.Chmod(to, 0o600); err != nil {
		dst.Close()
		return nil, errtext.Storage(op, err, "cannot create "+to, to)
	}
	return dst, nil
}

// recoverTables creates the ordinary tables with the source's own DDL and
// copies their rows: sessions first, then messages, then the rest (each
// keeps its rowids).
func recoverTables(ctx context.Context, src, dst *sql.DB, objs []srcObject, ftsTabs map[string]ftsTable, opts RecoverOptions, rep *RecoverReport) error {
	var tables []string
	for _, o := range objs {
		if o.Type != "table" || o.SQL == "" || strings.HasPrefix(o.Name, "sqlite_") {
			continue
		}
		if _, isFTS := ftsTabs[o.Name]; isFTS || (isDerived(o.Name, ftsTabs) && !hfts.IsCJKTable(o.Name) && o.Name != repo.ActivityTable) || o.Name == hfts.CJKLegacyTable {
			continue
		}
		if _, err := dst.ExecContext(ctx, o.SQL); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("create table %s: %v", o.Name, err))
			continue
		}
		if !isDerived(o.Name, ftsTabs) {
			tables = append(tables, o.Name)
		}
	}
	sort.SliceStable(tables, func(i, j int) bool { return tableRank(tables[i]) < tableRank(tables[j]) })
	for i, t := range tables {
		res := copyTable(ctx, src, dst, t, opts.ChunkRows, objs)
		rep.Tables = append(rep.Tables, res)
		if opts.Progress != nil {
			opts.Progress("copy", int64(i+1), int64(len(tables)))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	copySequence(ctx, src, dst)
	return nil
}

// recreateObjects creates the views, the FTS tables (filled from the
// copied rows), the indexes and triggers, and computes hermesstate's
// session activity table (created with the tables, never copied) from the
// copied sessions and messages. What fails is a problem of the report.
func recreateObjects(ctx context.Context, dst *sql.DB, objs []srcObject, ftsTabs map[string]ftsTable, rep *RecoverReport) {
	for _, o := range objs {
		if o.Type == "view" && o.SQL != "" {
			if _, err := dst.ExecContext(ctx, o.SQL); err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("create view %s: %v", o.Name, err))
			}
		}
	}
	for _, name := range sortedKeys(ftsTabs) {
		t := ftsTabs[name]
		if strings.Contains(t.Tokenize, cjkTokenizer) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s (tokenizer %s) not recreated: this build cannot load its tokenizer; Hermes recreates it where it can", name, cjkTokenizer))
			continue
		}
		if err := fillFTS(ctx, dst, t); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("FTS table %s: %v", name, err))
		}
	}
	for _, o := range objs {
		if o.Type == "index" && o.SQL != "" && !hfts.IsCJKTable(o.Table) {
			if _, err := dst.ExecContext(ctx, o.SQL); err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("create index %s: %v", o.Name, err))
			}
		}
	}
	for _, o := range objs {
		if o.Type != "trigger" || o.SQL == "" || strings.HasPrefix(o.Name, "messages_fts_cjk_") {
			continue
		}
		if _, err := dst.ExecContext(ctx, o.SQL); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("create trigger %s: %v", o.Name, err))
		}
	}
	for _, o := range objs {
		if o.Type == "table" && o.Name == repo.ActivityTable {
			if err := execAll(ctx, dst, repo.SessionActivityStatements()); err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %v", repo.ActivityTable, err))
			}
		}
	}
}

// adoptRecovered runs the migrations on the recovered file (a no-op when
// the source was adopted: its migration records were copied), then builds
// the CJK posting index from the rows.
func adoptRecovered(ctx context.Context, eng *sqlitex.Engine, dst *sql.DB) error {
	const op = "recover"
	g, err := gormOn(eng, dst)
	if err != nil {
		return errs.Wrap(errs.ErrStorage, op, err, "")
	}
	if err := migrations.Run(ctx, g); err != nil {
		return err
	}
	var hasCJK int
	_ = dst.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", hfts.CJKIndexTable).Scan(&hasCJK)
	if hasCJK == 0 {
		return nil
	}
	gc := g.WithContext(ctx)
	if err := gc.Transaction(func(tx *gorm.DB) error { return hfts.ResetCJKIndex(tx) }); err != nil {
		return errtext.Storage(op, err, "cannot rebuild the CJK index", "")
	}
	for {
		var n int
		if err := gc.Transaction(func(tx *gorm.DB) error {
			var err error
			n, err = hfts.IndexPending(tx, 5000)
			return err
		}); err != nil {
			return errtext.Storage(op, err, "cannot rebuild the CJK index", "")
		}
		if n == 0 {
			return nil
		}
	}
}

func tableRank(t string) int {
	switch t {
	case "system_prompts":
		return 0
	case "sessions":
		return 1
	case "messages":
		return 2
	}
	return 3
}

// fillFTS creates t on dst from its own DDL and indexes the copied rows.
func fillFTS(ctx context.Context, dst *sql.DB, t ftsTable) error {
	if _, err := dst.ExecContext(ctx, t.SQL); err != nil {
		return err
	}
	if t.external() {
		_, err := dst.ExecContext(ctx, fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('rebuild')", schemaref.QuoteIdent(t.Name)))
		return err
	}
	if len(t.Columns) != 1 {
		return fmt.Errorf("inline FTS table of an unknown shape (%d columns); left empty", len(t.Columns))
	}
	_, err := dst.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s(rowid, %s) SELECT m.id, %s FROM messages AS m",
		schemaref.QuoteIdent(t.Name), schemaref.QuoteIdent(t.Columns[0]), fmt.Sprintf(legacyExpr, "m")))
	return err
}

func copySequence(ctx context.Context, src, dst *sql.DB) {
	rows, err := src.QueryContext(ctx, "SELECT name, seq FROM sqlite_sequence")
	if err != nil {
		return
	}
	type seq struct {
		name string
		v    int64
	}
	var seqs []seq
	for rows.Next() {
		var s seq
		if rows.Scan(&s.name, &s.v) == nil {
			seqs = append(seqs, s)
		}
	}
	rows.Close()
	for _, s := range seqs {
		res, err := dst.ExecContext(ctx, "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", s.v, s.name)
		if err != nil {
			continue
		}
		if n, _ := res.RowsAffected(); n == 0 {
			_, _ = dst.ExecContext(ctx, "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", s.name, s.v)
		}
	}
}

// copyTable copies one table in rowid ranges, bisecting ranges that fail.
func copyTable(ctx context.Context, src, dst *sql.DB, table string, chunk int, objs []srcObject) TableResult {
	res := TableResult{Table: table}
	cols, err := columnNames(ctx, src, table)
	if err != nil || len(cols) == 0 {
		res.Error = "columns unreadable: " + describeErr(errOr(err, "no columns"))
		res.Unknown = true
		return res
	}
	quoted := make([]string, len(cols))
	marks := make([]string, len(cols)+1)
	for i, c := range cols {
		quoted[i] = schemaref.QuoteIdent(c)
		marks[i] = "?"
	}
	marks[len(cols)] = "?"
	sel := fmt.Sprintf("SELECT rowid, %s FROM %s WHERE rowid >= ? AND rowid <= ? ORDER BY rowid", strings.Join(quoted, ", "), schemaref.QuoteIdent(table))
	selOne := fmt.Sprintf("SELECT rowid, %s FROM %s WHERE rowid = ? AND rowid = ?", strings.Join(quoted, ", "), schemaref.QuoteIdent(table))
	ins := fmt.Sprintf("INSERT INTO %s (rowid, %s) VALUES (%s)", schemaref.QuoteIdent(table), strings.Join(quoted, ", "), strings.Join(marks, ", "))
	lo, hi, ok := rowidBounds(ctx, src, table)
	if !ok {
		res.Unknown = true
		lo, hi = 1, maxIndexedRowid(ctx, src, table, objs)
		if hi == 0 {
			res.Error = "the table cannot be read and no index tells which rows it held"
			return res
		}
		res.Unreadable = append(res.Unreadable, fmt.Sprintf("rowid bounds unreadable; scanned 1..%d", hi))
	}
	var bad [][2]int64
	var copyRange func(a, b int64)
	copyRange = func(a, b int64) {
		if ctx.Err() != nil {
			return
		}
		q := sel
		if a == b {
			// One row: no step past it onto a damaged neighbour.
			q = selOne
		}
		batch, err := readRange(ctx, src, q, a, b, len(cols)+1)
		if err != nil {
			if a == b {
				bad = appendRange(bad, a, b)
				return
			}
			m := a + (b-a)/2
			copyRange(a, m)
			copyRange(m+1, b)
			return
		}
		if len(batch) == 0 {
			return
		}
		tx, err := dst.BeginTx(ctx, nil)
		if err != nil {
			res.Lost += int64(len(batch))
			return
		}
		for _, row := range batch {
			if _, err := tx.ExecContext(ctx, ins, row...); err != nil {
				res.Lost++
				if res.Error == "" {
					res.Error = fmt.Sprintf("row %v could not be written: %v", row[0], err)
				}
				continue
			}
			res.Saved++
		}
		if err := tx.Commit(); err != nil {
			res.Lost += res.Saved
			res.Saved = 0
		}
	}
	for a := lo; a <= hi; a += int64(chunk) {
		copyRange(a, min(a+int64(chunk)-1, hi))
	}
	if len(bad) == 0 {
		return res
	}
	for _, r := range bad {
		if r[0] == r[1] {
			res.Unreadable = append(res.Unreadable, fmt.Sprint(r[0]))
		} else {
			res.Unreadable = append(res.Unreadable, fmt.Sprintf("%d-%d", r[0], r[1]))
		}
	}
	known, complete := knownRowids(ctx, src, table, bad, objs)
	res.Lost += known
	if !complete {
		res.Unknown = true
	}
	return res
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

func appendRange(rs [][2]int64, a, b int64) [][2]int64 {
	if n := len(rs); n > 0 && rs[n-1][1]+1 == a {
		rs[n-1][1] = b
		return rs
	}
	return append(rs, [2]int64{a, b})
}

func readRange(ctx context.Context, src *sql.DB, sel string, a, b int64, width int) ([][]any, error) {
	rows, err := src.QueryContext(ctx, sel, a, b)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, width)
		ptrs := make([]any, width)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

func columnNames(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func rowidBounds(ctx context.Context, db *sql.DB, table string) (lo, hi int64, ok bool) {
	var a, b sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT min(rowid), max(rowid) FROM "+schemaref.QuoteIdent(table)).Scan(&a, &b); err != nil {
		// The rightmost or leftmost path is damaged: fall back to the
		// AUTOINCREMENT high water, when there is one.
		var seq sql.NullInt64
		if db.QueryRowContext(ctx, "SELECT seq FROM sqlite_sequence WHERE name = ?", table).Scan(&seq) == nil && seq.Valid {
			return 1, seq.Int64, true
		}
		return 0, 0, false
	}
	if !a.Valid {
		return 1, 0, true // empty
	}
	return a.Int64, b.Int64, true
}

// knownRowids counts the rowids inside the unreadable ranges that a
// readable index of table holds (each is a row that existed and was lost).
// complete is false when no index could be read in full.
func knownRowids(ctx context.Context, src *sql.DB, table string, bad [][2]int64, objs []srcObject) (int64, bool) {
	var idx []string
	for _, o := range objs {
		if o.Type == "index" && o.Table == table && !strings.Contains(strings.ToUpper(o.SQL), " WHERE ") {
			idx = append(idx, o.Name)
		}
	}
	for _, name := range idx {
		rows, err := src.QueryContext(ctx, fmt.Sprintf("SELECT rowid FROM %s INDEXED BY %s", schemaref.QuoteIdent(table), schemaref.QuoteIdent(name)))
		if err != nil {
			continue
		}
		var n int64
		for rows.Next() {
			var id int64
			if rows.Scan(&id) != nil {
				continue
			}
			for _, r := range bad {
				if id >= r[0] && id <= r[1] {
					n++
					break
				}
			}
		}
		err = rows.Err()
		rows.Close()
		if err == nil {
			return n, true
		}
	}
	return 0, false
}

// maxIndexedRowid is the largest rowid any index of table holds (0 when
// none can be read), for a table whose own b-tree edges are unreadable.
func maxIndexedRowid(ctx context.Context, src *sql.DB, table string, objs []srcObject) int64 {
	best := int64(0)
	for _, o := range objs {
		if o.Type != "index" || o.Table != table || strings.Contains(strings.ToUpper(o.SQL), " WHERE ") {
			continue
		}
		var m sql.NullInt64
		if src.QueryRowContext(ctx, fmt.Sprintf("SELECT max(rowid) FROM %s INDEXED BY %s", schemaref.QuoteIdent(table), schemaref.QuoteIdent(o.Name))).Scan(&m) == nil && m.Int64 > best {
			best = m.Int64
		}
	}
	return best
}

// readSchema reads sqlite_master of the source; when a full scan fails
// (a damaged or missing schema page), it reads the rows one rowid at a time
// and counts those that fail.
func readSchema(ctx context.Context, src *sql.DB) ([]srcObject, int64, error) {
	const q = "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master"
	scan := func(rows *sql.Rows) ([]srcObject, error) {
		defer rows.Close()
		var out []srcObject
		for rows.Next() {
			var o srcObject
			if err := rows.Scan(&o.Type, &o.Name, &o.Table, &o.SQL); err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		return out, rows.Err()
	}
	rows, err := src.QueryContext(ctx, q+" ORDER BY rowid")
	if err == nil {
		objs, err2 := scan(rows)
		if err2 == nil {
			return objs, 0, nil
		}
		err = err2
	}
	firstErr := err
	var objs []srcObject
	var lost, pendingErrs int64
	for id, misses := int64(1), 0; misses < 500 && id < 1<<20; id++ {
		rows, err := src.QueryContext(ctx, q+" WHERE rowid = ?", id)
		if err != nil {
			pendingErrs++
			misses++
			continue
		}
		got, err := scan(rows)
		switch {
		case err != nil:
			pendingErrs++
			misses++
		case len(got) == 0:
			misses++
		default:
			// Errors before a readable row were rows of the schema.
			lost += pendingErrs
			pendingErrs, misses = 0, 0
			objs = append(objs, got...)
		}
	}
	if len(objs) == 0 {
		return nil, lost, firstErr
	}
	return objs, lost, nil
}

// execAll runs statements in one transaction.
func execAll(ctx context.Context, db *sql.DB, stmts []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}
