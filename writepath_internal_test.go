package hermesstate

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/stretchr/testify/require"
	"go/ast"
	"go/parser"
	"go/token"
	"gorm.io/gorm"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// rawConn opens a second, independent connection to path (as another
// process would), with the given busy timeout.
func rawConn(t *testing.T, path string, busy time.Duration) *sql.DB {
	t.Helper()
	db, err := sqlitex.OpenEnv(sqlitex.ConnConfig{Path: path, BusyTimeout: busy}.DSN())
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	require.NoError(t, db.Ping())
	t.Cleanup(func() { db.Close() })
	return db
}

func openTest(t *testing.T, cfg Config) *Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "state.db")
	}
	s, err := Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestWriterLocksAtBegin: inside a store write, before fn has run a single
// statement, the file's write lock is already held (BEGIN IMMEDIATE). A
// regression to deferred BEGIN (for example _time_format added to the DSN,
// which silently disables _txlock) makes the probe's BEGIN IMMEDIATE succeed
// and fails this test.
func TestWriterLocksAtBegin(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	probe := rawConn(t, s.Path(), 0)
	entered := false
	err := s.db.Write(ctx, sqlitex.Routine, "test.probe", func(tx *gorm.DB) error {
		entered = true
		_, err := probe.Exec("BEGIN IMMEDIATE")
		if err == nil {
			_, _ = probe.Exec("ROLLBACK")
			return errors.New("another connection could take the write lock: the store's BEGIN is deferred")
		}
		if !sqlitex.IsLock(err) {
			return err
		}
		return nil
	})
	require.NoError(t, err)
	require.True(t, entered)
}

// TestBusyBudgetExhausted: while another connection holds the write lock
// for longer than the budget, Append returns ErrBusy wrapping the SQLite
// lock error, logs a warning with the time waited, and writes nothing.
func TestBusyBudgetExhausted(t *testing.T) {
	ctx := context.Background()
	var logBuf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := openTest(t, Config{BusyTimeout: 50 * time.Millisecond, Logger: logger,
		WriteBudgets: WriteBudgets{Transcript: 400 * time.Millisecond}})
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)

	holder := rawConn(t, s.Path(), time.Second)
	_, err = holder.Exec("BEGIN IMMEDIATE")
	require.NoError(t, err)
	start := time.Now()
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("hello")})
	took := time.Since(start)
	_, rerr := holder.Exec("ROLLBACK")
	require.NoError(t, rerr)

	require.Error(t, err)
	require.ErrorIs(t, err, ErrBusy)
	c, ok := sqlitex.Code(err)
	require.True(t, ok, "the SQLite cause is wrapped")
	require.Equal(t, 5, c&0xff)
	require.GreaterOrEqual(t, took, 390*time.Millisecond, "the write retried for its whole budget")
	require.Less(t, took, 2*time.Second)
	require.Contains(t, err.Error(), "write lock")
	require.NotContains(t, strings.ToLower(err.Error()), "sqlite_busy")

	mu.Lock()
	logged := logBuf.String()
	mu.Unlock()
	require.Contains(t, logged, "level=WARN")
	require.Contains(t, logged, "waited=")
	require.Contains(t, logged, "op=messages.append")

	n, err := s.Messages().Count(ctx, sess.ID)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("hello")})
	require.NoError(t, err, "the store recovers once the lock is released")
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestCommitBusyIsRolledBack: in rollback-journal mode COMMIT needs an
// EXCLUSIVE lock and fails with SQLITE_BUSY while a reader holds SHARED;
// SQLite then keeps the transaction open. The write path must roll it back
// and retry, so the append lands exactly once and the connection is usable.
func TestCommitBusyIsRolledBack(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{JournalMode: JournalDelete, BusyTimeout: 30 * time.Millisecond})
	require.Equal(t, "delete", s.JournalMode())
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)

	reader := rawConn(t, s.Path(), time.Second)
	rtx, err := reader.Begin()
	require.NoError(t, err)
	var n int
	require.NoError(t, rtx.QueryRow("SELECT count(*) FROM messages").Scan(&n)) // holds SHARED
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = rtx.Rollback()
	}()
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("after the reader")})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "assistant", Content: models.Text("more")})
		require.NoError(t, err)
	}
	got, err := s.Sessions().Get(ctx, sess.ID)
	require.NoError(t, err)
	require.EqualValues(t, 4, got.MessageCount)
	cnt, err := s.Messages().Count(ctx, sess.ID)
	require.NoError(t, err)
	require.EqualValues(t, 4, cnt)
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return -1
	}
	require.NoError(t, err)
	return st.Size()
}

// TestPassiveCheckpointEvery50: in WAL mode the main file only changes when
// a checkpoint copies pages back, so its size shows when the store
// checkpointed: not during the first 49 writes, right after the 50th.
func TestPassiveCheckpointEvery50(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	require.Equal(t, "wal", s.JournalMode())
	// Open migrated the file: start from a checkpointed state so the count
	// below starts at zero pending pages.
	s.checkpoint(ctx, "TRUNCATE")
	// Measure the store's own checkpoint only: SQLite's automatic one (every
	// 1000 WAL pages) fires earlier now that each append also writes the
	// FTS and CJK index pages.
	require.NoError(t, s.db.W.Exec("PRAGMA wal_autocheckpoint=0").Error)
	before := fileSize(t, s.Path())
	base := s.db.Writes()
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for s.db.Writes()-base < 49 {
		_, err := s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text(strings.Repeat("x", 3000))})
		require.NoError(t, err)
	}
	require.EqualValues(t, 49, s.db.Writes())
	require.Equal(t, before, fileSize(t, s.Path()), "no checkpoint before the 50th write")
	require.Greater(t, fileSize(t, s.Path()+"-wal"), int64(0))
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("the 50th")})
	require.NoError(t, err)
	require.Greater(t, fileSize(t, s.Path()), before+49*3000, "the 50th write triggered a checkpoint into the main file")
}

// TestCloseTruncatesWAL: a clean Close runs a TRUNCATE checkpoint, leaving
// an empty -wal even while another connection keeps the file open (so
// SQLite's own last-close cleanup does not apply).
func TestCloseTruncatesWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, Config{Path: path, CheckpointEvery: -1})
	require.NoError(t, err)
	other := rawConn(t, path, time.Second)
	var n int
	require.NoError(t, other.QueryRow("SELECT count(*) FROM sessions").Scan(&n))
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		_, err := s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("hello")})
		require.NoError(t, err)
	}
	require.Greater(t, fileSize(t, path+"-wal"), int64(0))
	require.NoError(t, s.Close())
	require.EqualValues(t, 0, fileSize(t, path+"-wal"), "TRUNCATE checkpoint at close")
	require.NoError(t, other.QueryRow("SELECT count(*) FROM messages").Scan(&n))
	require.Equal(t, 20, n)
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("late")})
	require.ErrorIs(t, err, ErrClosed)
}

// TestPermissionsByPath (issue 28, item 10): a pre-existing file keeps
// its mode, and the sidecars SQLite makes take the file's mode; nothing is
// chmod-ed.
func TestPermissionsByPath(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	pre, err := Open(ctx, Config{Path: path})
	require.NoError(t, err)
	require.NoError(t, pre.Close())
	require.NoError(t, os.Chmod(path, 0o644))
	s := openTest(t, Config{Path: path})
	_, err = s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		require.NoError(t, err, p)
		require.Equal(t, os.FileMode(0o644), st.Mode().Perm(), p)
	}
}

// TestNoRawFileDescriptors keeps the rule that the library never opens the
// live database or its sidecars itself: closing such a descriptor drops
// every POSIX lock SQLite holds on the file in this process, which lets
// other processes write under our feet. The only allowed opens are
// createPrivate's O_EXCL create of a file that does not exist yet and the
// write lock file's (sqlitex.FileLock: a file of its own, PATH-hslock,
// whose descriptor holds no SQLite lock).
func TestNoRawFileDescriptors(t *testing.T) {
	forbidden := map[string]bool{"Open": true, "OpenFile": true, "Create": true, "ReadFile": true, "WriteFile": true, "Truncate": true, "NewFile": true}
	allowed := map[string]bool{"createPrivate": true, "openLockFile": true}
	var dirs = []string{".", "repo", "internal/sqlitex", "migrations", "hooks", "models"}
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			require.NoError(t, err)
			for _, decl := range file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || allowed[fn.Name.Name] {
					continue
				}
				ast.Inspect(fn, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && forbidden[sel.Sel.Name] {
						t.Errorf("%s: os.%s in %s: change files by path (chmod), never through a descriptor", fset.Position(sel.Pos()), sel.Sel.Name, fn.Name.Name)
					}
					return true
				})
			}
		}
	}
}

// TestAppendDequeuesCJKQueue: the append hot path dequeues rows without CJK
// text without reading them back, and still indexes rows with CJK text.
func TestAppendDequeuesCJKQueue(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	_, err = s.Messages().AppendBatch(ctx, sess.ID, []repo.MessageInput{
		{Role: "user", Content: models.Text("plain ascii text")},
		{Role: "assistant", Content: models.Text("桂林今天多云")},
	})
	require.NoError(t, err)
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("more plain text")})
	require.NoError(t, err)
	// Fewer rows than a batch: they wait in the queue (deferred), and a
	// CJK search still finds them.
	var pending int64
	require.NoError(t, s.db.W.Raw("SELECT count(*) FROM hermesstate_cjk_pending").Scan(&pending).Error)
	require.EqualValues(t, 3, pending)
	hits, err := s.Search().Messages(ctx, "多云", repo.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, hits, 1)
	hits, err = s.Search().Messages(ctx, "plain", repo.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, hits, 2)
}

// TestCJKIndexingDeferredInBatches: appended rows are indexed (CJK text)
// or dequeued (none) in batches inside a later append, the rest at Close;
// a 2-character search finds every CJK row before, during and after.
func TestCJKIndexingDeferredInBatches(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, Config{Path: path})
	require.NoError(t, err)
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	pending := func() int64 {
		var n int64
		require.NoError(t, s.db.W.Raw("SELECT count(*) FROM hermesstate_cjk_pending").Scan(&n).Error)
		return n
	}
	postings := func() int64 {
		var n int64
		require.NoError(t, s.db.W.Raw("SELECT count(*) FROM hermesstate_cjk_postings").Scan(&n).Error)
		return n
	}
	cjk := 0
	for i := 0; i < 2*repo.CJKDeferBatch+22; i++ {
		text := fmt.Sprintf("plain message %d", i)
		if i%3 == 0 {
			text = fmt.Sprintf("桂林山水 %d", i)
			cjk++
		}
		_, err := s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text(text)})
		require.NoError(t, err)
		require.Less(t, pending(), int64(repo.CJKDeferBatch), "a batch is flushed once collected")
		if i == repo.CJKDeferBatch+6 {
			require.Positive(t, postings(), "the first batch indexed its CJK rows")
		}
	}
	require.Positive(t, pending(), "the last rows wait for the next batch")
	hits, err := s.Search().Messages(ctx, "桂林", repo.SearchOptions{Limit: 200})
	require.NoError(t, err)
	require.Len(t, hits, cjk)
	require.NoError(t, s.Close())

	raw, err := sqlitex.OpenEnv(path)
	require.NoError(t, err)
	defer raw.Close()
	var n int
	require.NoError(t, raw.QueryRow("SELECT count(*) FROM hermesstate_cjk_pending").Scan(&n))
	require.Zero(t, n, "Close flushed the rest")
	s2, err := Open(ctx, Config{Path: path})
	require.NoError(t, err)
	defer s2.Close()
	hits, err = s2.Search().Messages(ctx, "桂林", repo.SearchOptions{Limit: 200})
	require.NoError(t, err)
	require.Len(t, hits, cjk)
}
