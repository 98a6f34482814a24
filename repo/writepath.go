package repo

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/hooks"
	"github.com/hermesstate/hermesstate/models"
)

// RegisterWritePath installs, on the writer db of the store d, every GORM
// callback of the write path; it is the one place they are registered.
// A message insert (Messages.Append, AppendBatch, group commit, import)
// runs, in its own transaction:
//
//  1. hermesstate:normalize_message (hooks, before gorm:create): Hermes'
//     insert rules, an invalid or out-of-window timestamp becomes now and
//     active is 1;
//  2. the INSERT (gorm:create);
//  3. hermesstate:message_counters (hooks, after gorm:create): the
//     sessions' message_count and tool_call_count;
//  4. hermesstate:cjk_index (SQLite only, after the counters): the new ids
//     go to the CJK index (cjkIndexCallback).
//
// A lone Append on SQLite (a group commit of one call, the agent loop's
// usual case) runs the same four steps spelled out in appendOne
// (appendone.go) instead of through these callbacks: it costs 8 % fewer
// instructions, and TestLoneAppendWritesWhatGORMWrites holds the two paths
// to the same rows and counters.
//
// The FTS5 tables are kept by Hermes' own triggers in the file, and on
// PostgreSQL the word documents by migration 0101's triggers. It returns
// GORM's registration error (a name already taken).
func RegisterWritePath(db *gorm.DB, d *DB) error {
	if err := hooks.Register(db); err != nil {
		return err
	}
	if d.Dialect != SQLite {
		return nil
	}
	return db.Callback().Create().After("gorm:create").Register("hermesstate:cjk_index", cjkIndexCallback(d))
}

// cjkIndexCallback keeps the CJK index of messages inserted through GORM:
// their ids are collected (d's deferral) and indexed, or dequeued when they
// hold no CJK text, in batches inside a later insert transaction (see
// deferCJK).
func cjkIndexCallback(d *DB) func(tx *gorm.DB) {
	return func(tx *gorm.DB) {
		if tx.Error != nil || tx.Statement.Schema == nil || tx.Statement.Schema.Table != "messages" {
			return
		}
		var ids []int64
		collect := func(m *models.Message) {
			if m.ID > 0 {
				ids = append(ids, m.ID)
			}
		}
		switch v := tx.Statement.Dest.(type) {
		case *models.Message:
			collect(v)
		case []*models.Message:
			for _, m := range v {
				collect(m)
			}
		case []models.Message:
			for i := range v {
				collect(&v[i])
			}
		case *[]*models.Message:
			for _, m := range *v {
				collect(m)
			}
		case *[]models.Message:
			for i := range *v {
				collect(&(*v)[i])
			}
		}
		if len(ids) == 0 {
			return
		}
		d.deferCJK(tx.Session(&gorm.Session{NewDB: true}), ids)
	}
}
