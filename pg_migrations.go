package hermesstate

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/migrations"
)

// The PostgreSQL word-search table (see migrations.PostgresFTSTable). The
// step is a no-op on SQLite, so both dialects keep the same list.
func init() {
	migrations.Register(migrations.Migration{
		ID:       "0101_hermesstate_pg_messages_fts",
		Apply:    func(*gorm.DB) error { return nil },
		Postgres: migrations.PostgresFTSTable,
	})
}
