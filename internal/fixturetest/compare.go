package fixturetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/models"
)

// Ctx returns a context bounded by a minute (tests must not hang).
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// RequireKind fails t unless err wraps kind (errors.Is).
func RequireKind(t testing.TB, err, kind error) {
	t.Helper()
	require.Error(t, err)
	require.Truef(t, errors.Is(err, kind), "want %v, got %v", kind, err)
}

// ToAny round-trips v through encoding/json with numbers as json.Number.
func ToAny(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// JSONDiff reports how got differs from want, where every key of a want
// object must be in got with an equal value (got may have more keys when
// subset is true). Numbers compare by float value. It returns "" when equal.
func JSONDiff(path string, want, got any, subset bool) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %T %v", path, got, Short(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var diffs []string
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing (want %v)", path, k, Short(w[k])))
				continue
			}
			if d := JSONDiff(path+"."+k, w[k], gv, subset); d != "" {
				diffs = append(diffs, d)
			}
		}
		if !subset {
			for k := range g {
				if _, ok := w[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s.%s: unexpected (got %v)", path, k, Short(g[k])))
				}
			}
		}
		return strings.Join(diffs, "\n")
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want list, got %T %v", path, got, Short(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: want %d items, got %d: %v", path, len(w), len(g), Short(got))
		}
		var diffs []string
		for i := range w {
			if d := JSONDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], subset); d != "" {
				diffs = append(diffs, d)
			}
		}
		return strings.Join(diffs, "\n")
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: want %v, got %v", path, w, Short(got))
		}
		wf, _ := w.Float64()
		gf, _ := g.Float64()
		if wf != gf {
			return fmt.Sprintf("%s: want %v, got %v", path, w, g)
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) || fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			return fmt.Sprintf("%s: want %v, got %v", path, Short(want), Short(got))
		}
		return ""
	}
}

// Short is v as JSON, cut at 200 bytes, for messages.
func Short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// JSONEq compares two values as JSON (numbers as float64).
func JSONEq(t testing.TB, want json.RawMessage, got any, msgAndArgs ...any) {
	t.Helper()
	b, err := json.Marshal(got)
	require.NoError(t, err)
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(b, &g))
	require.Equal(t, w, g, msgAndArgs...)
}

// SubsetEq compares got with want on want's keys only (a row read from a
// file at an older version lacks the columns added later; ours has all).
func SubsetEq(t testing.TB, want map[string]any, got any, where string) {
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

// Upgraded adjusts a row Hermes returned before our migrations ran to what
// the upgraded file holds: migration step 16 tags delegate children with
// $._delegate_from in model_config (the rest of model_config is kept).
func Upgraded(t testing.TB, f *APIFixture, want map[string]any, got any) map[string]any {
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

// Deref is *p, or "" for nil.
func Deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Ptr returns a pointer to a copy of v.
func Ptr[T any](v T) *T { return &v }

// TrimToVersion removes from a replay item the keys that older Hermes
// versions did not emit at all (they had no such field), so the rest is
// compared exactly.
func TrimToVersion(got, want map[string]any) {
	for _, k := range []string{"_db_persisted", "timestamp", "message_id", "finish_reason", "reasoning", "reasoning_content",
		"reasoning_details", "codex_reasoning_items", "codex_message_items", "api_content", "display_kind", "display_metadata",
		"effect_disposition", "observed"} {
		if _, ok := want[k]; !ok {
			delete(got, k)
		}
	}
}
