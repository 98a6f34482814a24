package migrations_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// inScope are the tables whose shape a file made by Open must share with a
// file made by Hermes v30.
var inScope = []string{"schema_version", "system_prompts", "sessions", "messages", "session_model_usage", "state_meta", "gateway_routing"}

type colInfo struct {
	CID     int     `json:"cid"`
	Name    string  `json:"name"`
	Type    string  `json:"type"`
	NotNull int     `json:"notnull"`
	Dflt    *string `json:"dflt_value"`
	PK      int     `json:"pk"`
}

func (c colInfo) String() string {
	d := "NULL"
	if c.Dflt != nil {
		d = *c.Dflt
	}
	return fmt.Sprintf("%d %s %s notnull=%d default=%s pk=%d", c.CID, c.Name, c.Type, c.NotNull, d, c.PK)
}

func normSQL(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestFreshFileHasHermesV30Shape(t *testing.T) {
	var v30 *fixturetest.Fixture
	for _, f := range fixturetest.LoadFixtures(t) {
		if f.Version == 30 {
			v30 = f
		}
	}
	require.NotNil(t, v30, "the v30 fixture is the reference shape")
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(context.Background(), hs.Config{Path: path})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	db := fixturetest.Raw(t, path)

	var want map[string][]colInfo
	v30.Get(t, "table_info", &want)
	for _, table := range inScope {
		rows, err := db.Query(`SELECT cid, name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, table)
		require.NoError(t, err)
		var got []colInfo
		for rows.Next() {
			var c colInfo
			require.NoError(t, rows.Scan(&c.CID, &c.Name, &c.Type, &c.NotNull, &c.Dflt, &c.PK))
			got = append(got, c)
		}
		rows.Close()
		require.NotEmpty(t, want[table], table)
		var ws, gs []string
		for _, c := range want[table] {
			ws = append(ws, c.String())
		}
		for _, c := range got {
			gs = append(gs, c.String())
		}
		require.Equal(t, ws, gs, "PRAGMA table_info(%s)", table)
	}

	// Indexes of the in-scope tables: same names, same definitions.
	var master []struct {
		Type    string  `json:"type"`
		Name    string  `json:"name"`
		TblName string  `json:"tbl_name"`
		SQL     *string `json:"sql"`
	}
	v30.Get(t, "sqlite_master", &master)
	scope := map[string]bool{}
	for _, tb := range inScope {
		scope[tb] = true
	}
	wantIdx := map[string]string{}
	for _, o := range master {
		if o.Type == "index" && scope[o.TblName] && o.SQL != nil {
			wantIdx[o.Name] = normSQL(*o.SQL)
		}
	}
	rows, err := db.Query(`SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`)
	require.NoError(t, err)
	gotIdx := map[string]string{}
	for rows.Next() {
		var name, tbl, sql string
		require.NoError(t, rows.Scan(&name, &tbl, &sql))
		if scope[tbl] && !strings.HasPrefix(name, "idx_hermesstate_") { // our own indexes (api_migrations.go)
			gotIdx[name] = strings.Replace(normSQL(sql), " IF NOT EXISTS", "", 1)
		}
	}
	rows.Close()
	require.Equal(t, wantIdx, gotIdx)

	// Hermes' display triggers are carried too.
	var trig []string
	r2, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages_display_%' ORDER BY name`)
	require.NoError(t, err)
	for r2.Next() {
		var n string
		require.NoError(t, r2.Scan(&n))
		trig = append(trig, n)
	}
	r2.Close()
	sort.Strings(trig)
	require.Equal(t, []string{"messages_display_identity_delete", "messages_display_identity_update", "messages_display_order_insert", "messages_display_visibility_update"}, trig)
}
