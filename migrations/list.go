package migrations

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ftsql"
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
	// Description says in one line what the step does; `migrate -v` and
	// `doctor` print it beside the ID.
	Description string
	// BelowVersion, when non-zero, makes the step run only on files whose
	// original schema_version is below it (a Hermes data step).
	BelowVersion int
	Apply        func(tx *gorm.DB) error
	// SQLiteOnly skips the step on PostgreSQL (when Postgres is nil).
	SQLiteOnly bool
	// Postgres, when set, replaces Apply on PostgreSQL.
	Postgres func(tx *gorm.DB) error
	// PostgresOnly marks a step that does nothing on SQLite (its Apply is
	// nothing): it is never pending for a SQLite file.
	PostgresOnly bool
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
//     step for PostgreSQL alone has an Apply that does nothing and is
//     marked PostgresOnly (never listed as pending for a SQLite file).
//   - A step never rewrites existing rows except a Hermes data step
//     (BelowVersion) for the files whose original version lacks it.
//   - A step is frozen once shipped: its body is SQL or code of package
//     migrations (never repository code, which changes with each release:
//     0102's statements are written out in step_0102_session_activity.go).
//     To change what a shipped step made, add a step. The FTS layouts of
//     internal/ftsql are Hermes' historical layouts, each fixed by the
//     Hermes version it mirrors; the CJK index steps build its current
//     layout directly (0103 converts files 0007 made before it existed).
//   - Every step has a one-line Description.
//   - A new step goes at the end, and into the table of docs/DESIGN.md
//     ("How migrations run"; TestDesignTableMatchesList compares them).
func List() []Migration {
	return []Migration{
		// Hermes' schema: the v30 shape, Hermes' data steps, FTS.
		{ID: "0001_hermes_v30_baseline", Hermes: "30", Description: "Hermes' v30 tables, columns, keys, indexes and display triggers; older files reconciled column by column", Apply: baseline, Postgres: baselinePostgres},
		{ID: "0002_hermes_v16_delegate_tags", Hermes: "16", Description: "Hermes v16 data step: $._delegate_from on delegate children and __orphaned__ roots", BelowVersion: 16, Apply: stepV16DelegateTags, SQLiteOnly: true},
		{ID: "0003_hermes_v20_usage_seed", Hermes: "20", Description: "Hermes v20 data step: one session_model_usage row per session with tokens", BelowVersion: 20, Apply: stepV20UsageSeed, SQLiteOnly: true},
		{ID: "0004_hermes_v25_system_prompts", Hermes: "25", Description: "Hermes v25 data step: inline system prompts moved into system_prompts by SHA-256", BelowVersion: 25, Apply: stepV25SystemPrompts, SQLiteOnly: true},
		{ID: "0005_hermes_v30_stamp", Hermes: "30", Description: "schema_version raised to 30 (never lowered)", Apply: stampVersion},
		{ID: "0006_fts_tables", Hermes: "10/11/23", Description: "full-text search: FTS5 word + trigram tables and triggers (SQLite), tsvector and pg_trgm indexes (PostgreSQL)", Apply: ftsTables, Postgres: postgresSearchObjects},

		// hermesstate's own objects.
		{ID: "0007_hermesstate_cjk_index", Hermes: "ours", Description: "hermesstate's CJK posting index, its queue and triggers; existing messages queued", Apply: ftsql.EnsureCJKIndex, SQLiteOnly: true},
		{ID: "0100_hermesstate_messages_activity_index", Hermes: "ours", Description: "index messages(timestamp, session_id) for the listing by last activity", Apply: messagesActivityIndex},
		{ID: "0101_hermesstate_pg_messages_fts", Hermes: "ours", Description: "PostgreSQL: hs_messages_fts(id, doc tsvector) kept by triggers, with a GIN index", Apply: nothing, Postgres: postgresFTSTable, PostgresOnly: true},
		{ID: "0102_hermesstate_session_activity", Hermes: "ours", Description: "each session's last activity in hermesstate_session_activity, kept by triggers and indexed", Apply: sessionActivity, SQLiteOnly: true},
		{ID: "0103_hermesstate_cjk_postings", Hermes: "ours", Description: "the CJK index's compact layout (delta-coded posting chunks), older layouts converted", Apply: ftsql.EnsureCJKIndex, SQLiteOnly: true},
		{ID: "0104_hermesstate_pg_cjk_grams", Hermes: "ours", Description: "PostgreSQL: hs_cjk_grams() with a GIN expression index for 1-2 character CJK search", Apply: nothing, Postgres: postgresCJKGrams, PostgresOnly: true},
		{ID: "0105_hermesstate_pg_cjk_grams_inline", Hermes: "ours", Description: "PostgreSQL: hs_cjk_grams() made inlinable (calls the set query only for CJK text)", Apply: nothing, Postgres: postgresCJKGramsInline, PostgresOnly: true},
		{ID: "0106_hermesstate_pg_session_activity", Hermes: "ours", Description: "PostgreSQL: hermesstate_session_activity as on SQLite (0102), kept by triggers in the writing transaction, indexed, filled", Apply: nothing, Postgres: postgresSessionActivity, PostgresOnly: true},
		{ID: "0107_hermesstate_pg_activity_listed", Hermes: "ours", Description: "PostgreSQL: hermesstate_session_activity also holds started_at, source and whether the default listing shows the session, kept by triggers, indexed in the listing's order", Apply: nothing, Postgres: postgresActivityListed, PostgresOnly: true},
	}
}

// Describe returns the one-line description of the step with that ID, or
// "" for an ID this build does not know (a step of a newer hermesstate).
func Describe(id string) string {
	for _, m := range List() {
		if m.ID == id {
			return m.Description
		}
	}
	return ""
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
