package migrations_test

import (
	"context"
	"database/sql"
	"sort"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/schemaref"
)

// TestPostgresSchemaMatchesSQLite: the PostgreSQL tables have the SQLite v30
// columns in the same order with the same NOT NULL, defaults and primary
// keys, the same indexes and triggers, and types mapped as documented.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	st := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	ctx := context.Background()
	db, err := sql.Open("pgx", hermesstatetest.PostgresDSN(t, st))
	require.NoError(t, err)
	defer db.Close()
	ref, err := schemaref.ReferenceColumns()
	require.NoError(t, err)
	typeMap := map[string]string{"TEXT": "text", "INTEGER": "bigint", "REAL": "double precision", "BLOB": "bytea"}
	for _, table := range hs.Tables() {
		rows, err := db.QueryContext(ctx, `SELECT column_name, data_type, is_nullable, column_default, is_identity
			FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, st.Schema(), table)
		require.NoError(t, err)
		var names []string
		i := 0
		for rows.Next() {
			var name, typ, nullable, identity string
			var dflt sql.NullString
			require.NoError(t, rows.Scan(&name, &typ, &nullable, &dflt, &identity))
			require.Less(t, i, len(ref[table]), "%s has extra column %s", table, name)
			want := ref[table][i]
			require.Equal(t, want.Name, name, table)
			require.Equal(t, typeMap[want.Type], typ, "%s.%s", table, name)
			require.Equal(t, want.NotNull || want.PK > 0, nullable == "NO", "%s.%s NOT NULL", table, name)
			if identity == "YES" {
				require.Equal(t, "messages.id", table+"."+name)
			} else {
				require.Equal(t, want.Default.Valid, dflt.Valid, "%s.%s default", table, name)
				if want.Default.Valid {
					require.Equal(t, strings.Trim(want.Default.String, "'"), strings.Trim(strings.SplitN(dflt.String, "::", 2)[0], "'"), "%s.%s default", table, name)
				}
			}
			names = append(names, name)
			i++
		}
		require.NoError(t, rows.Err())
		rows.Close()
		require.Len(t, names, len(ref[table]), table)

		var pk []string
		prow, err := db.QueryContext(ctx, `SELECT a.attname FROM pg_index i
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = ($1 || '.' || $2)::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, st.Schema(), table)
		require.NoError(t, err)
		for prow.Next() {
			var n string
			require.NoError(t, prow.Scan(&n))
			pk = append(pk, n)
		}
		prow.Close()
		var wantPK []string
		byPK := map[int]string{}
		for _, c := range ref[table] {
			if c.PK > 0 {
				byPK[c.PK] = c.Name
			}
		}
		for k := 1; k <= len(byPK); k++ {
			wantPK = append(wantPK, byPK[k])
		}
		require.Equal(t, wantPK, pk, "%s primary key", table)
	}
	var wantIdx, wantTrg []string
	for _, s := range schemaref.Schema() {
		switch s.Kind {
		case "index":
			wantIdx = append(wantIdx, s.Name)
		case "trigger":
			wantTrg = append(wantTrg, s.Name)
		}
	}
	got := func(q string) []string {
		rows, err := db.QueryContext(ctx, q, st.Schema())
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			require.NoError(t, rows.Scan(&n))
			out = append(out, n)
		}
		return out
	}
	// idx_hermesstate_* are our own additions (api_migrations.go), as in the SQLite shape test;
	// idx_messages_fts_* / idx_messages_trgm_* are the PostgreSQL search indexes.
	idx := got(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'idx\_%' AND indexname NOT LIKE 'idx\_hermesstate\_%' AND indexname NOT LIKE 'idx\_messages\_fts\_%' AND indexname NOT LIKE 'idx\_hs\_%' AND indexname NOT LIKE 'idx\_messages\_trgm\_%'`)
	trg := got(`SELECT DISTINCT trigger_name FROM information_schema.triggers WHERE trigger_schema = $1 AND trigger_name LIKE 'messages\_display%'`)
	sort.Strings(wantIdx)
	sort.Strings(wantTrg)
	sort.Strings(idx)
	sort.Strings(trg)
	require.Equal(t, wantIdx, idx)
	require.Equal(t, wantTrg, trg)
}
