package migrations

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/repo"
)

// Migration is one gormigrate step: its ID, the Hermes schema version it
// brings a file to (or "ours" for hermesstate's own objects), and what it
// does on each dialect.
//
// The list is the same on both dialects. On PostgreSQL a step runs Postgres
// when it is set, else nothing when SQLiteOnly is set (FTS5 objects, PRAGMA
// work, fixes of old Hermes files, which a fresh PostgreSQL schema never
// needs), else Apply (portable SQL). Either way its ID is recorded.
type Migration struct {
	ID string
	// Hermes is the Hermes schema version the step maps to ("30", "16",
	// "10/11/23" for several of Hermes' steps), or "ours" for an object of
	// hermesstate's own that Hermes ignores.
	Hermes string
	// BelowVersion, when non-zero, makes the step run only on files whose
	// original schema_version is below it (a Hermes data step).
	BelowVersion int
	Apply        func(tx *gorm.DB) error
	// SQLiteOnly skips the step on PostgreSQL (when Postgres is nil).
	SQLiteOnly bool
	// Postgres, when set, replaces Apply on PostgreSQL.
	Postgres func(tx *gorm.DB) error
}

// List returns every migration, in the order they run. It is the one list
// of schema steps: nothing registers steps from elsewhere.
//
// Rules for changing it:
//   - IDs are append-only. Never renumber, rename, reorder or remove a step
//     that has shipped: a file records the IDs it ran, and a renamed step
//     runs again on every file.
//   - Hermes names the Hermes schema version a step mirrors. A step marked
//     "ours" creates objects of hermesstate's own, named hermesstate_*,
//     idx_hermesstate_* or hs_*, which Hermes ignores; new ones take IDs
//     from 0100 up.
//   - Every step is idempotent (IF NOT EXISTS, look before changing): it
//     also runs on files Hermes wrote, and on files a crash left half-way
//     (all pending steps commit together, but a file may come from an
//     older hermesstate).
//   - Every step says what it does on PostgreSQL: Apply when portable,
//     Postgres for a variant, SQLiteOnly when PostgreSQL needs nothing; a
//     step for PostgreSQL alone has an Apply that does nothing.
//   - A step never rewrites existing rows except a Hermes data step
//     (BelowVersion) for the files whose original version lacks it.
//   - A new step goes at the end, and into the table of docs/DESIGN.md
//     ("How migrations run"; TestDesignTableMatchesList compares them).
func List() []Migration {
	return []Migration{
		// Hermes' schema: the v30 shape, Hermes' data steps, FTS.
		{ID: "0001_hermes_v30_baseline", Hermes: "30", Apply: baseline, Postgres: baselinePostgres},
		{ID: "0002_hermes_v16_delegate_tags", Hermes: "16", BelowVersion: 16, Apply: stepV16DelegateTags, SQLiteOnly: true},
		{ID: "0003_hermes_v20_usage_seed", Hermes: "20", BelowVersion: 20, Apply: stepV20UsageSeed, SQLiteOnly: true},
		{ID: "0004_hermes_v25_system_prompts", Hermes: "25", BelowVersion: 25, Apply: stepV25SystemPrompts, SQLiteOnly: true},
		{ID: "0005_hermes_v30_stamp", Hermes: "30", Apply: stampVersion},
		{ID: "0006_fts_tables", Hermes: "10/11/23", Apply: ftsTables, Postgres: postgresSearchObjects},

		// hermesstate's own objects.
		{ID: "0007_hermesstate_cjk_index", Hermes: "ours", Apply: ftsql.EnsureCJKIndex, SQLiteOnly: true},
		{ID: "0100_hermesstate_messages_activity_index", Hermes: "ours", Apply: messagesActivityIndex},
		{ID: "0101_hermesstate_pg_messages_fts", Hermes: "ours", Apply: nothing, Postgres: postgresFTSTable},
		{ID: "0102_hermesstate_session_activity", Hermes: "ours", Apply: repo.EnsureSessionActivity, SQLiteOnly: true},
		{ID: "0103_hermesstate_cjk_postings", Hermes: "ours", Apply: ftsql.EnsureCJKIndex, SQLiteOnly: true},
		{ID: "0104_hermesstate_pg_cjk_grams", Hermes: "ours", Apply: nothing, Postgres: postgresCJKGrams},
		{ID: "0105_hermesstate_pg_cjk_grams_inline", Hermes: "ours", Apply: nothing, Postgres: postgresCJKGramsInline},
	}
}

// nothing is the Apply of a step for PostgreSQL alone.
func nothing(*gorm.DB) error { return nil }

// messagesActivityIndex creates idx_hermesstate_messages_activity on
// messages(timestamp, session_id): the listing by last activity reads the
// newest message timestamps from it without touching the table
// (repo.Listing.Rich).
func messagesActivityIndex(tx *gorm.DB) error {
	return tx.Exec("CREATE INDEX IF NOT EXISTS idx_hermesstate_messages_activity ON messages(timestamp, session_id)").Error
}
