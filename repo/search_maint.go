package repo

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

func (r *searchRepo) Rebuild(ctx context.Context, opt RebuildOptions) error {
	if r.db.Dialect == Postgres {
		return nil // PostgreSQL maintains its search indexes in every write
	}
	const op = "search.rebuild"
	chunk := opt.Chunk
	if chunk <= 0 {
		chunk = 500
	}
	var total int64
	if err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		hw, err := ftsql.StartRebuild(tx)
		total = hw
		if err != nil {
			return err
		}
		// The CJK index restarts only with a fresh rebuild (no progress yet).
		p, _, err := metaInt(tx, ftsql.MetaProgress)
		if err != nil || p > 0 {
			return err
		}
		return ftsql.ResetCJKIndex(tx)
	}); err != nil {
		return err
	}
	chunks := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		var done, hw int64
		var more bool
		if err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
			var err error
			done, hw, more, err = ftsql.RebuildStep(tx, chunk)
			if err != nil {
				return err
			}
			if !more {
				return ftsql.FinishRebuild(tx)
			}
			return nil
		}); err != nil {
			return err
		}
		if hw > 0 {
			total = hw
		}
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
		chunks++
		if !more {
			break
		}
		if opt.MaxChunks > 0 && chunks >= opt.MaxChunks {
			return nil
		}
		if opt.Pause != nil {
			opt.Pause(ctx, time.Since(start).Seconds())
		}
	}
	// CJK postings, one chunk per transaction (the queue is the marker).
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var n int
		if err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
			var err error
			n, err = ftsql.IndexPending(tx, chunk)
			return err
		}); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

func (r *searchRepo) Check(ctx context.Context) ([]FTSCheck, error) {
	if r.db.Dialect == Postgres {
		return r.checkPostgres(ctx)
	}
	// 'integrity-check' is an INSERT command, so it runs on the writer.
	var out []FTSCheck
	err := r.db.Write(ctx, sqlitex.Routine, "search.check", func(tx *gorm.DB) error {
		out = nil
		tables, err := ftsql.FTSTables(tx)
		if err != nil {
			return err
		}
		for _, t := range tables {
			c := FTSCheck{Table: t, OK: true}
			if err := ftsql.IntegrityCheck(tx, t); err != nil {
				if sqlitex.IsLock(err) {
					return err
				}
				c.OK, c.Detail = false, err.Error()
			}
			out = append(out, c)
		}
		has, err := ftsql.HasTable(tx, ftsql.CJKIndexTable)
		if err != nil {
			return err
		}
		if has {
			c := FTSCheck{Table: ftsql.CJKIndexTable, OK: true}
			_, detail, err := ftsql.CheckCJKIndex(tx)
			if err != nil {
				return err
			}
			if detail != "" {
				c.OK, c.Detail = false, detail
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}
