package hermesstate_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
)

// fixturesDir is where the Hermes-made pairs live: ../shared/fixtures beside
// the repository, or $HERMESSTATE_FIXTURES.
func fixturesDir() string {
	if d := os.Getenv("HERMESSTATE_FIXTURES"); d != "" {
		return d
	}
	// The repository's parent holds shared/ (CI); a git worktree one level
	// deeper finds it one more level up.
	for _, up := range []string{"..", filepath.Join("..", ".."), filepath.Join("..", "..", "..")} {
		d := filepath.Join(up, "shared", "fixtures")
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return filepath.Join("..", "shared", "fixtures")
}

// Fixture is one Hermes-made pair: NAME.db and what Hermes returned on it.
type Fixture struct {
	Name     string
	DBPath   string
	Version  int
	Expected map[string]json.RawMessage
}

// Get decodes the expected JSON at key into v (json.Number for numbers
// when v is *any).
func (f *Fixture) Get(t testing.TB, key string, v any) {
	t.Helper()
	raw, ok := f.Expected[key]
	require.Truef(t, ok, "%s: expected JSON has no %q", f.Name, key)
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	require.NoError(t, dec.Decode(v), "%s: decode %s", f.Name, key)
}

// LoadFixtures returns every NAME.db that has a NAME.expected.json, sorted
// by schema version. Without the folder it skips, except in CI where the
// folder must exist.
func LoadFixtures(t testing.TB) []*Fixture {
	t.Helper()
	dir := fixturesDir()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.expected.json"))
	if len(matches) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Hermes fixtures in %s: CI must run with ../shared beside the repository", dir)
		}
		t.Skipf("no Hermes fixtures in %s (set HERMESSTATE_FIXTURES or put ../shared beside the repository)", dir)
	}
	var out []*Fixture
	for _, m := range matches {
		name := strings.TrimSuffix(filepath.Base(m), ".expected.json")
		db := filepath.Join(dir, name+".db")
		if _, err := os.Stat(db); err != nil {
			continue
		}
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		f := &Fixture{Name: name, DBPath: db, Expected: map[string]json.RawMessage{}}
		require.NoError(t, json.Unmarshal(b, &f.Expected), m)
		require.NoError(t, json.Unmarshal(f.Expected["hermes_schema_version"], &f.Version), m)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	require.NotEmpty(t, out)
	return out
}

// CopyDB copies the fixture's pristine file into a new temp dir and returns
// the copy's path.
func (f *Fixture) CopyDB(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state.db")
	in, err := os.Open(f.DBPath)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return dst
}

// Open copies the fixture and opens the copy through hermesstate.Open.
func (f *Fixture) Open(t testing.TB) (*hs.Store, string) {
	t.Helper()
	path := f.CopyDB(t)
	st, err := hs.Open(context.Background(), hs.Config{Path: path})
	require.NoError(t, err, "%s: open", f.Name)
	t.Cleanup(func() { _ = st.Close() })
	return st, path
}
