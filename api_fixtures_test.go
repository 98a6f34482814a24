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

// apiFixture is the part of a Hermes NAME.expected.json the session-API
// tests read (the lead's fixtures_test.go helpers will replace this loader).
type apiFixture struct {
	Name          string
	DBPath        string
	SchemaVersion int                        `json:"hermes_schema_version"`
	Notes         apiNotes                   `json:"notes"`
	Recent        []apiRecent                `json:"recent"`
	Titles        json.RawMessage            `json:"titles"`
	Export        json.RawMessage            `json:"export"`
	Extras        []apiExtra                 `json:"extras"`
	Sessions      map[string]json.RawMessage `json:"sessions"`
	Rows          map[string][]map[string]any
}

type apiNotes struct {
	AbsentMethods     []string `json:"absent_methods"`
	UnsupportedKwargs []string `json:"unsupported_kwargs"`
}

type apiRecent struct {
	Kwargs  map[string]any  `json:"kwargs"`
	Results json.RawMessage `json:"results"`
}

type apiExtra struct {
	Method string          `json:"method"`
	Args   []any           `json:"args"`
	Kwargs map[string]any  `json:"kwargs"`
	Result json.RawMessage `json:"result"`
}

func (f *apiFixture) absent(method string) bool {
	for _, m := range f.Notes.AbsentMethods {
		if m == method {
			return true
		}
	}
	return false
}

func (f *apiFixture) unsupported(method, kwarg string) bool {
	for _, m := range f.Notes.UnsupportedKwargs {
		if strings.HasPrefix(m, method+"(") && strings.Contains(m, kwarg) {
			return true
		}
	}
	return false
}

// extras returns the recorded calls of one method.
func (f *apiFixture) extras(method string) []apiExtra {
	var out []apiExtra
	for _, e := range f.Extras {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// fixtureDir finds the shared fixtures: $HERMESSTATE_FIXTURES, else a
// shared/fixtures folder beside the module or any parent of it.
func fixtureDir(t testing.TB) string {
	if d := os.Getenv("HERMESSTATE_FIXTURES"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	for d := wd; ; d = filepath.Dir(d) {
		for _, c := range []string{filepath.Join(d, "shared", "fixtures"), filepath.Join(d, "..", "shared", "fixtures")} {
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				return c
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	t.Skip("Hermes fixtures not found: set HERMESSTATE_FIXTURES or put shared/fixtures beside the module")
	return ""
}

func loadAPIFixtures(t testing.TB) []*apiFixture {
	dir := fixtureDir(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*.expected.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no *.expected.json in %s", dir)
	sort.Strings(paths)
	var out []*apiFixture
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		f := &apiFixture{Name: strings.TrimSuffix(filepath.Base(p), ".expected.json")}
		require.NoError(t, json.Unmarshal(b, f), p)
		var rows struct {
			Rows map[string][]map[string]any `json:"rows"`
		}
		require.NoError(t, json.Unmarshal(b, &rows), p)
		f.Rows = rows.Rows
		f.DBPath = strings.TrimSuffix(p, ".expected.json") + ".db"
		out = append(out, f)
	}
	return out
}

// openFixture copies the fixture's .db into a temp dir and opens the copy.
func openFixture(t testing.TB, f *apiFixture) *hs.Store {
	dst := filepath.Join(t.TempDir(), "state.db")
	src, err := os.Open(f.DBPath)
	require.NoError(t, err)
	defer src.Close()
	out, err := os.Create(dst)
	require.NoError(t, err)
	_, err = io.Copy(out, src)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	st, err := hs.Open(context.Background(), hs.Config{Path: dst})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func openFresh(t testing.TB) *hs.Store {
	st, err := hs.Open(context.Background(), hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// jsonEq compares two values as JSON (numbers as float64).
func jsonEq(t testing.TB, want json.RawMessage, got any, msgAndArgs ...any) {
	t.Helper()
	b, err := json.Marshal(got)
	require.NoError(t, err)
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(b, &g))
	require.Equal(t, w, g, msgAndArgs...)
}

// subsetEq compares got with want on want's keys only (a row read from a
// file at an older version lacks the columns added later; ours has all).
func subsetEq(t testing.TB, want map[string]any, got any, where string) {
	t.Helper()
	b, err := json.Marshal(got)
	require.NoError(t, err)
	var g map[string]any
	require.NoError(t, json.Unmarshal(b, &g))
	for k, wv := range want {
		require.Contains(t, g, k, where)
		require.Equal(t, wv, g[k], "%s: key %s", where, k)
	}
}
