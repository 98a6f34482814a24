// Package fixturetest gives tests of every package the Hermes-made fixture
// files (testdata/fixtures at the module root, or $HERMESSTATE_FIXTURES) as
// private copies, and the file surgery the
// robustness tests need: a "newer Hermes" file, file hashes, directory
// listings. It is imported by tests only.
package fixturetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// Dir returns the fixtures folder: $HERMESSTATE_FIXTURES when set, else
// testdata/fixtures at the module root (found from the test's working
// directory by looking for go.mod), where the repository keeps its copy of
// the Hermes-written files. It is the one place tests look fixtures up.
func Dir() string {
	if d := os.Getenv("HERMESSTATE_FIXTURES"); d != "" {
		return d
	}
	if root := ModuleRoot(); root != "" {
		return filepath.Join(root, "testdata", "fixtures")
	}
	return filepath.Join("testdata", "fixtures")
}

// ModuleRoot returns the directory holding the module's go.mod, found from
// the working directory upwards, or "" when there is none.
func ModuleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/hermesstate/hermesstate\n") {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Path returns the path of fixture name (e.g. "hermes-v30.db"). A missing
// fixture fails the test: the repository carries them in testdata/fixtures.
func Path(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Dir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Hermes fixture %s is missing (the repository keeps them in testdata/fixtures; HERMESSTATE_FIXTURES=%q): %v",
			p, os.Getenv("HERMESSTATE_FIXTURES"), err)
	}
	return p
}

// Copy copies fixture name into a new temporary directory as state.db
// (mode 0600) and returns the copy's path.
func Copy(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state.db")
	CopyFile(t, Path(t, name), dst)
	return dst
}

// CopyFile copies src to the new file dst (mode 0600).
func CopyFile(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// SHA256 returns the hex SHA-256 of the file at path.
func SHA256(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Listing returns "name mode" for every entry of dir, sorted: what a test
// compares to prove nothing was created, removed or chmod-ed.
func Listing(t testing.TB, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		st, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+" "+st.Mode().String())
	}
	return out
}

// Raw opens a plain database/sql connection to path (no hermesstate).
func Raw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sqlitex.OpenEnv(path + "?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Exec runs statements on a raw connection to path and closes it.
func Exec(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sqlitex.OpenEnv(path + "?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// WidenUsageKey rebuilds session_model_usage of the file at path the way a
// newer Hermes might: one more column, region, which is part of the primary
// key, and every existing row stored twice, once per region ('eu', 'us'), so
// the rows differ only in the new key column. It returns the row count after
// (twice the count before). The file's schema_version is left as it is.
func WidenUsageKey(t testing.TB, path string) int {
	t.Helper()
	db := Raw(t, path)
	var create string
	if err := db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'session_model_usage'").Scan(&create); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(create, "PRIMARY KEY (")
	j := strings.LastIndex(create, ")")
	if i < 0 || j < 0 {
		t.Fatalf("unexpected DDL of session_model_usage: %s", create)
	}
	key := create[i+len("PRIMARY KEY (") : strings.Index(create[i:], ")")+i]
	create = create[:i] + "region TEXT NOT NULL DEFAULT '',\n    PRIMARY KEY (" + key + ", region)" + create[j:]
	create = strings.Replace(create, "session_model_usage", "session_model_usage_v31", 1)
	var idx []string
	rows, err := db.Query("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'session_model_usage' AND sql IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, s)
	}
	rows.Close()
	stmts := []string{"BEGIN", create,
		"INSERT INTO session_model_usage_v31 SELECT *, 'eu' FROM session_model_usage",
		"INSERT INTO session_model_usage_v31 SELECT *, 'us' FROM session_model_usage",
		"DROP TABLE session_model_usage",
		"ALTER TABLE session_model_usage_v31 RENAME TO session_model_usage"}
	stmts = append(stmts, idx...)
	stmts = append(stmts, "COMMIT")
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM session_model_usage").Scan(&n); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	return n
}

// MakeNewer turns the file at path into one written by a newer Hermes:
// WidenUsageKey, a table of its own, and schema_version = version. It
// returns the usage row count.
func MakeNewer(t testing.TB, path string, version int) int {
	t.Helper()
	n := WidenUsageKey(t, path)
	Exec(t, path,
		"CREATE TABLE hermes_v31_only (id INTEGER PRIMARY KEY, note TEXT)",
		"INSERT INTO hermes_v31_only (note) VALUES ('kept')",
		"UPDATE schema_version SET version = "+itoa(version))
	return n
}

func itoa(n int) string { return strconv.Itoa(n) }

// ReadOnlyDir makes dir read-only for this process until the test ends: a
// read-only bind mount of dir over itself when running as root (root
// ignores permission bits), else mode 0555 on dir and 0444 on its files.
// When neither is possible it skips the test (it fails under CI).
func ReadOnlyDir(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			p := filepath.Join(dir, e.Name())
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				mode := st.Mode().Perm()
				if err := os.Chmod(p, 0o444); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Chmod(p, mode) })
			}
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		return
	}
	if err := mountReadOnly(dir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot make %s read-only (a read-only bind mount needs CAP_SYS_ADMIN): %v", dir, err)
		}
		t.Skipf("running as root, and a read-only bind mount of %s failed (needs CAP_SYS_ADMIN): %v", dir, err)
	}
	t.Cleanup(func() { unmount(dir) })
}

// SmallDisk returns a new directory on a filesystem of size bytes (a tmpfs
// mounted for the test, root only) for disk-full tests; it skips the test
// when the mount is not possible (it fails under CI).
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := mountTmpfs(dir, size); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("cannot mount a %d-byte tmpfs on %s (needs root): %v", size, dir, err)
		}
		t.Skipf("a %d-byte tmpfs for the disk-full test needs root (CAP_SYS_ADMIN): %v", size, err)
	}
	t.Cleanup(func() { unmount(dir) })
	return dir
}

// HotJournalCopy copies the rollback-journal SQLite file src into dir in
// the middle of a write transaction, as a process killed mid-write leaves
// it: pages already changed in the file and a hot -journal beside it that
// the next opener must roll back (which needs write access). The
// transaction on src is then rolled back; src stays as it was. It returns
// the copy's path.
func HotJournalCopy(t testing.TB, src, dir string) string {
	t.Helper()
	ctx := context.Background()
	db := Raw(t, src)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"PRAGMA cache_size=1", "BEGIN IMMEDIATE", "CREATE TABLE hot_journal_junk(x)",
		"INSERT INTO hot_journal_junk SELECT randomblob(2000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 1000) SELECT i FROM n)",
		"UPDATE sessions SET model = 'half-written'"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if st, err := os.Stat(src + "-journal"); err != nil || st.Size() == 0 {
		t.Fatalf("no hot journal beside %s (is it in rollback-journal mode?): %v", src, err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	CopyFile(t, src, dst)
	CopyFile(t, src+"-journal", dst+"-journal")
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	return dst
}
