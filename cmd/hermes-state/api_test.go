package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
)

func TestCLISessionAPI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)

	out, err := run(t, "--db", db, "--json", "sessions", "list")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.Contains(t, r, "preview")
		require.Contains(t, r, "last_active")
	}
	id := rows[0]["id"].(string)

	out, err = run(t, "--db", db, "sessions", "title", id, "  My   title ")
	require.NoError(t, err)
	require.Equal(t, "My title\n", out)
	other := rows[1]["id"].(string)
	_, err = run(t, "--db", db, "sessions", "title", other, "My title")
	require.ErrorIs(t, err, hs.ErrConflict)
	require.Equal(t, 4, exitCode(err))

	out, err = run(t, "--db", db, "--json", "sessions", "lineage", id)
	require.NoError(t, err)
	var lin map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &lin))
	require.Equal(t, id, lin["compression_tip"])

	out, err = run(t, "--db", db, "--json", "stats")
	require.NoError(t, err)
	var stats map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &stats))
	require.NotEmpty(t, stats["by_source"])

	jsonl, err := run(t, "--db", db, "export")
	require.NoError(t, err)
	require.Equal(t, len(rows), strings.Count(jsonl, "\n"))
	md, err := run(t, "--db", db, "export", "--format", "md", "--session", id)
	require.NoError(t, err)
	require.Contains(t, md, "# My title")
	file := filepath.Join(dir, "all.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(jsonl), 0o600))
	db2 := filepath.Join(dir, "copy.db")
	out, err = run(t, "--db", db2, "--json", "import", file)
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.EqualValues(t, len(rows), res["Sessions"])
	again, err := run(t, "--db", db2, "export")
	require.NoError(t, err)
	require.Equal(t, jsonl, again)

	out, err = run(t, "--db", db, "--json", "prune", "--dry-run", "--older-than-days", "0.0001")
	require.NoError(t, err)
	require.Contains(t, out, `"dry_run": true`)

	bk := filepath.Join(dir, "bk.db")
	_, err = run(t, "--db", db, "backup", bk)
	require.NoError(t, err)
	_, err = run(t, "--db", db, "backup", bk)
	require.ErrorIs(t, err, hs.ErrConflict)

	out, err = run(t, "--db", db, "delete", id)
	require.NoError(t, err)
	require.Contains(t, out, id)
	_, err = run(t, "--db", db, "delete", id)
	require.ErrorIs(t, err, hs.ErrNotFound)
	require.Equal(t, 3, exitCode(err))
}
