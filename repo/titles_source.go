package repo

import (
	"context"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

func (r *titleRepo) SetSource(ctx context.Context, id, source string) (bool, error) {
	const op = "titles.set_source"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	switch source {
	case TitleDerived, TitleLLM, TitleUser:
	default:
		return false, errs.Errorf(errs.ErrInvalid, op, "invalid title source %q (derived, llm or user)", source)
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET title_source = ? WHERE id = ? AND title IS NOT NULL", source, id)
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}
