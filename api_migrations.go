package hermesstate

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/repo"
)

// The listing by last activity reads the newest message timestamps from an
// index (see repo.Listing.Rich): idx_hermesstate_messages_activity on
// (timestamp, session_id), scanned without touching the table. It is ours,
// not Hermes', so its name says so; Hermes ignores extra indexes.
func init() {
	migrations.Register(migrations.Migration{
		ID: "0100_hermesstate_messages_activity_index",
		Apply: func(tx *gorm.DB) error {
			return tx.Exec("CREATE INDEX IF NOT EXISTS idx_hermesstate_messages_activity ON messages(timestamp, session_id)").Error
		},
	})

	// Each session's own last activity, kept by triggers and indexed
	// (repo.ActivityTable): the listing by last activity reads the newest
	// sessions from it instead of deriving them from message timestamps.
	migrations.Register(migrations.Migration{
		ID:         "0102_hermesstate_session_activity",
		Apply:      repo.EnsureSessionActivity,
		SQLiteOnly: true,
	})
}
