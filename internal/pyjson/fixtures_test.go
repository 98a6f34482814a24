package pyjson_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pyjson"
)

// Every JSON column Hermes wrote into the fixtures re-encodes to the same
// bytes: our writer produces exactly Python's text.
func TestPyJSONReproducesHermesColumns(t *testing.T) {
	dir := fixturetest.Dir()
	files, _ := filepath.Glob(filepath.Join(dir, "*.expected.json"))
	require.NotEmpty(t, files, "no Hermes fixtures in %s", dir)
	jsonCols := map[string]bool{"tool_calls": true, "model_config": true, "reasoning_details": true, "codex_reasoning_items": true,
		"codex_message_items": true, "origin_json": true, "entry_json": true, "display_metadata": true, "tool_names": true}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var fx struct {
			Rows map[string][]map[string]any `json:"rows"`
		}
		require.NoError(t, json.Unmarshal(b, &fx))
		for table, rows := range fx.Rows {
			for _, r := range rows {
				for col, v := range r {
					s, ok := v.(string)
					if !ok || !jsonCols[col] || !json.Valid([]byte(s)) {
						continue
					}
					got, err := pyjson.Canonical([]byte(s))
					require.NoError(t, err)
					require.Equal(t, s, string(got), "%s %s.%s", filepath.Base(f), table, col)
					checked++
				}
			}
		}
	}
	require.Greater(t, checked, 100)
}
