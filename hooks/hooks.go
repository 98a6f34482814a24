// Package hooks registers the GORM callbacks that keep derived data right in
// the same transaction as the write that changes it: the sessions counters
// (message_count, tool_call_count) on every message insert, and the
// normalisation of a message row before it is inserted.
//
// A store registers them through repo.RegisterWritePath (repo/writepath.go),
// with the rest of the write path's callbacks, in one documented place.
// Call Register yourself only for a *gorm.DB of your own that writes
// Hermes' tables and should keep the same counters.
package hooks

import (
	"reflect"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/models"
)

// Register installs the callbacks on db. It returns an error when GORM
// refuses a registration (a name already taken).
func Register(db *gorm.DB) error {
	cb := db.Callback().Create()
	if err := cb.Before("gorm:create").Register("hermesstate:normalize_message", normalizeMessages); err != nil {
		return err
	}
	return cb.After("gorm:create").Register("hermesstate:message_counters", bumpCounters)
}

var messageType = reflect.TypeOf(models.Message{})

func isMessages(db *gorm.DB) bool {
	return db.Statement.Schema != nil && db.Statement.Schema.ModelType == messageType
}

// eachMessage calls fn for every *models.Message the statement inserts.
func eachMessage(db *gorm.DB, fn func(m *models.Message)) {
	if !isMessages(db) {
		return
	}
	rv := db.Statement.ReflectValue
	switch rv.Kind() {
	case reflect.Struct:
		if m, ok := rv.Addr().Interface().(*models.Message); ok {
			fn(m)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len(); i++ {
			el := rv.Index(i)
			if el.Kind() == reflect.Pointer {
				el = el.Elem()
			}
			if m, ok := el.Addr().Interface().(*models.Message); ok {
				fn(m)
			}
		}
	}
}

// normalizeMessages applies Hermes' insert rules: an invalid or out-of-window
// timestamp becomes now, and active is 1.
func normalizeMessages(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	now := models.Now()
	eachMessage(db, func(m *models.Message) { NormalizeMessage(m, now) })
}

// NormalizeMessage applies Hermes' insert rules to m: an invalid or
// out-of-window timestamp becomes now, active is 1, and display_identity is
// what Hermes v30 writes (models.DisplayIdentity), unless m carries one.
// The callback runs it on every message GORM inserts; the insert paths of
// repo call it themselves before they choose the columns to write.
func NormalizeMessage(m *models.Message, now models.Epoch) {
	if !m.Timestamp.Sane() {
		m.Timestamp = now
	}
	m.Active = 1
	if m.DisplayIdentity == nil {
		m.DisplayIdentity = models.DisplayIdentity(m)
	}
}

// CountedToolCalls is what m adds to its session's tool_call_count: the
// calls in its tool_calls (models.ToolCallCount), none for a tool result.
func CountedToolCalls(m *models.Message) int64 {
	if m.Role == "tool" {
		return 0
	}
	return models.ToolCallCount(m.ToolCalls)
}

type delta struct{ messages, toolCalls int64 }

// bumpCounters adds the inserted messages to their sessions' counters. A
// message whose session row does not exist aborts the statement with
// errs.ErrNotFound.
func bumpCounters(db *gorm.DB) {
	if db.Error != nil || !isMessages(db) {
		return
	}
	per := map[string]*delta{}
	var order []string
	eachMessage(db, func(m *models.Message) {
		d := per[m.SessionID]
		if d == nil {
			d = &delta{}
			per[m.SessionID] = d
			order = append(order, m.SessionID)
		}
		d.messages++
		d.toolCalls += CountedToolCalls(m)
	})
	for _, sid := range order {
		d := per[sid]
		res := db.Session(&gorm.Session{NewDB: true, SkipHooks: true}).Exec(
			"UPDATE sessions SET message_count = COALESCE(message_count, 0) + ?, tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?",
			d.messages, d.toolCalls, sid)
		if res.Error != nil {
			_ = db.AddError(res.Error)
			return
		}
		if res.RowsAffected != 1 {
			_ = db.AddError(errs.Errorf(errs.ErrNotFound, "messages.append", "session %q does not exist", sid))
			return
		}
	}
}
