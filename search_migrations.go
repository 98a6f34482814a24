package hermesstate

import (
	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/migrations"
)

// The CJK index's compact layout (fts.CJKIndexTable: postings as delta
// chunks, about 1.5 bytes each, instead of (term, msg_id) rows plus an
// index on msg_id, about 30): a file indexed before is converted with
// every posting kept (fts.ConvertLegacyCJKIndex); a new file already got
// this layout from 0007.
func init() {
	migrations.Register(migrations.Migration{
		ID:         "0103_hermesstate_cjk_postings",
		Apply:      fts.EnsureCJKIndex,
		SQLiteOnly: true,
	})
}
