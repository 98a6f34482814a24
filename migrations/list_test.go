package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDesignTableMatchesList: the table of docs/DESIGN.md ("How migrations
// run") names every step of List, in order, with the same Hermes version.
func TestDesignTableMatchesList(t *testing.T) {
	b, err := os.ReadFile("../docs/DESIGN.md")
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| `([0-9]{4}_[a-z0-9_]+)` \\| ([^|]+) \\|")
	type step struct{ id, hermes string }
	var doc []step
	for _, l := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			doc = append(doc, step{m[1], strings.TrimSpace(m[2])})
		}
	}
	var list []step
	for _, m := range List() {
		list = append(list, step{m.ID, m.Hermes})
	}
	require.Equal(t, list, doc, "docs/DESIGN.md's migration table and migrations.List differ")
}

// TestListRules checks what the rules at the head of List can: IDs unique
// and in ascending order, a Hermes version on every step, a PostgreSQL
// answer on every step, hermesstate's own steps named so.
func TestListRules(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for _, m := range List() {
		require.False(t, seen[m.ID], "duplicate ID %s", m.ID)
		seen[m.ID] = true
		require.Greater(t, m.ID, prev, "IDs ascend: %s after %s", m.ID, prev)
		prev = m.ID
		require.NotEmpty(t, m.Hermes, m.ID)
		require.NotEmpty(t, m.Description, "%s has no description", m.ID)
		require.NotContains(t, m.Description, "\n", m.ID)
		require.Equal(t, m.Description, Describe(m.ID))
		require.NotNil(t, m.Apply, m.ID)
		require.False(t, m.SQLiteOnly && m.Postgres != nil, "%s: SQLiteOnly and a Postgres variant", m.ID)
		doesNothing := reflect.ValueOf(m.Apply).Pointer() == reflect.ValueOf(nothing).Pointer()
		require.Equal(t, doesNothing, m.PostgresOnly, "%s: a step whose Apply is nothing is PostgresOnly, and only it", m.ID)
		require.False(t, m.PostgresOnly && m.Postgres == nil, "%s: PostgresOnly without a Postgres variant", m.ID)
		if m.Hermes == "ours" {
			require.Contains(t, m.ID, "_hermesstate_", m.ID)
		}
	}
}

// TestFrozenStepsUnchanged: a shipped step's SQL never changes (a file that
// ran it must hold what a file migrating today gets). The hash is of the
// statements as shipped; to change what a step made, add a step.
func TestFrozenStepsUnchanged(t *testing.T) {
	h := sha256.Sum256([]byte(strings.Join(sessionActivity0102, "\x00")))
	require.Equal(t, "833d569ddd023a08f6f99d6d5b6f2683c500c483480cc6d9f99fd4e394f40c9e", hex.EncodeToString(h[:]),
		"0102_hermesstate_session_activity was changed after it shipped: restore it and add a new step")
}
