package hermesstate_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"

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
	fx            *Fixture
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

// loadAPIFixtures decodes the parts of every fixture (LoadFixtures) these
// tests read.
func loadAPIFixtures(t testing.TB) []*apiFixture {
	var out []*apiFixture
	for _, fx := range LoadFixtures(t) {
		f := &apiFixture{Name: fx.Name, DBPath: fx.DBPath, fx: fx}
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

// openFixture copies the fixture's .db into a temp dir and opens the copy.
func openFixture(t testing.TB, f *apiFixture) *hs.Store {
	st, _ := f.fx.Open(t)
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

// upgraded adjusts a row Hermes returned before our migrations ran to what
// the upgraded file holds: migration step 16 tags delegate children with
// $._delegate_from in model_config (the rest of model_config is kept).
func upgraded(t testing.TB, f *apiFixture, want map[string]any, got any) map[string]any {
	t.Helper()
	if f.SchemaVersion >= 16 {
		return want
	}
	b, err := json.Marshal(got)
	require.NoError(t, err)
	var g struct {
		ModelConfig *string `json:"model_config"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	if g.ModelConfig == nil {
		return want
	}
	tag, tagged := models.JSONGetString([]byte(*g.ModelConfig), "_delegate_from")
	if !tagged {
		return want
	}
	mc, _ := want["model_config"].(string)
	exp, err := models.JSONSetKey([]byte(mc), "_delegate_from", tag)
	require.NoError(t, err)
	out := map[string]any{}
	for k, v := range want {
		out[k] = v
	}
	out["model_config"] = string(exp)
	return out
}

func deref(p *string) string { return fixturetest.Deref(p) }
