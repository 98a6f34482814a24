package fixturetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fixture is one Hermes-made pair: NAME.db and what Hermes returned on it
// (NAME.expected.json).
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

// CopyDB copies the fixture's pristine file into a new temp dir and
// returns the copy's path.
func (f *Fixture) CopyDB(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state.db")
	CopyFile(t, f.DBPath, dst)
	return dst
}

// LoadFixtures returns every NAME.db that has a NAME.expected.json, sorted
// by schema version. It fails the test when the folder holds none.
func LoadFixtures(t testing.TB) []*Fixture {
	t.Helper()
	dir := Dir()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.expected.json"))
	if len(matches) == 0 {
		t.Fatalf("no Hermes fixtures in %s (the repository keeps them in testdata/fixtures; HERMESSTATE_FIXTURES=%q)", dir, os.Getenv("HERMESSTATE_FIXTURES"))
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

// APIFixture is the part of a fixture's expected JSON the session-API
// tests read: what Hermes' SessionDB methods returned on the file.
type APIFixture struct {
	*Fixture      `json:"-"`
	SchemaVersion int                        `json:"hermes_schema_version"`
	Notes         APINotes                   `json:"notes"`
	Recent        []APIRecent                `json:"recent"`
	Titles        json.RawMessage            `json:"titles"`
	Export        json.RawMessage            `json:"export"`
	Extras        []APIExtra                 `json:"extras"`
	Sessions      map[string]json.RawMessage `json:"sessions"`
	Rows          map[string][]map[string]any
}

// APINotes lists what the fixture's Hermes version lacks.
type APINotes struct {
	AbsentMethods     []string `json:"absent_methods"`
	UnsupportedKwargs []string `json:"unsupported_kwargs"`
}

// APIRecent is one recorded list_recent_user_messages call.
type APIRecent struct {
	Kwargs  map[string]any  `json:"kwargs"`
	Results json.RawMessage `json:"results"`
}

// APIExtra is one recorded call of another method.
type APIExtra struct {
	Method string          `json:"method"`
	Args   []any           `json:"args"`
	Kwargs map[string]any  `json:"kwargs"`
	Result json.RawMessage `json:"result"`
}

// Absent reports whether the fixture's Hermes version lacks method.
func (f *APIFixture) Absent(method string) bool {
	for _, m := range f.Notes.AbsentMethods {
		if m == method {
			return true
		}
	}
	return false
}

// Unsupported reports whether method of the fixture's Hermes version lacks
// the keyword argument kwarg.
func (f *APIFixture) Unsupported(method, kwarg string) bool {
	for _, m := range f.Notes.UnsupportedKwargs {
		if strings.HasPrefix(m, method+"(") && strings.Contains(m, kwarg) {
			return true
		}
	}
	return false
}

// ExtrasOf returns the recorded calls of one method.
func (f *APIFixture) ExtrasOf(method string) []APIExtra {
	var out []APIExtra
	for _, e := range f.Extras {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// LoadAPIFixtures decodes the API part of every fixture (LoadFixtures).
func LoadAPIFixtures(t testing.TB) []*APIFixture {
	var out []*APIFixture
	for _, fx := range LoadFixtures(t) {
		f := &APIFixture{Fixture: fx}
		b, err := json.Marshal(fx.Expected)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, f), fx.Name)
		var rows struct {
			Rows map[string][]map[string]any `json:"rows"`
		}
		require.NoError(t, json.Unmarshal(b, &rows), fx.Name)
		f.Rows = rows.Rows
		out = append(out, f)
	}
	return out
}
