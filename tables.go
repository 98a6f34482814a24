package hermesstate

import (
	"context"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Tables returns the names of the Hermes v30 tables, in the order of the
// schema (parents before children).
func Tables() []string {
	var out []string
	for _, st := range schemaref.Schema() {
		if st.Kind == "table" {
			out = append(out, st.Name)
		}
	}
	return out
}

// TableCounts returns the number of rows of every Hermes v30 table. It
// returns ErrStorage when a table cannot be read.
func (s *Store) TableCounts(ctx context.Context) (map[string]int64, error) {
	return repo.Read(ctx, s.db, "table_counts", func(tx *gorm.DB) (map[string]int64, error) {
		out := map[string]int64{}
		for _, t := range Tables() {
			var n int64
			if err := tx.Table(t).Count(&n).Error; err != nil {
				return nil, err
			}
			out[t] = n
		}
		return out, nil
	})
}

// ModelUsage returns the session_model_usage rows of a session ordered by
// first_seen, then key. An unknown session has none.
func (s *Store) ModelUsage(ctx context.Context, sessionID string) ([]models.SessionModelUsage, error) {
	return repo.Read(ctx, s.db, "model_usage", func(tx *gorm.DB) ([]models.SessionModelUsage, error) {
		var out []models.SessionModelUsage
		err := tx.Where("session_id = ?", sessionID).
			Order("first_seen").Order("model").Order("billing_provider").Order("billing_base_url").Order("billing_mode").Order("task").
			Find(&out).Error
		return out, err
	})
}
