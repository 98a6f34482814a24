package repo

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/querytext"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// topicTables are Hermes' version-3 DDL bodies of the topic tables (%s is
// the REAL type: REAL on SQLite, DOUBLE PRECISION on PostgreSQL), and their
// columns.
var topicTables = []struct{ name, columns, ddl string }{
	{"telegram_dm_topic_mode",
		"profile_name, chat_id, user_id, enabled, activated_at, updated_at, has_topics_enabled, allows_users_to_create_topics, capability_checked_at, intro_message_id, pinned_message_id",
		`profile_name TEXT NOT NULL DEFAULT 'default',
		chat_id TEXT NOT NULL,
		user_id TEXT NOT NULL,
		enabled INTEGER NOT NULL DEFAULT 1,
		activated_at %[1]s NOT NULL,
		updated_at %[1]s NOT NULL,
		has_topics_enabled INTEGER,
		allows_users_to_create_topics INTEGER,
		capability_checked_at %[1]s,
		intro_message_id TEXT,
		pinned_message_id TEXT,
		PRIMARY KEY (profile_name, chat_id)`},
	{"telegram_dm_topic_bindings",
		"profile_name, chat_id, thread_id, user_id, session_key, session_id, managed_mode, linked_at, updated_at",
		`profile_name TEXT NOT NULL DEFAULT 'default',
		chat_id TEXT NOT NULL,
		thread_id TEXT NOT NULL,
		user_id TEXT NOT NULL,
		session_key TEXT NOT NULL,
		session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
		managed_mode TEXT NOT NULL DEFAULT 'auto',
		linked_at %[1]s NOT NULL,
		updated_at %[1]s NOT NULL,
		PRIMARY KEY (profile_name, chat_id, thread_id)`},
}

func topicProfile(p string) string {
	if s := querytext.Strip(p); s != "" {
		return s
	}
	return "default"
}

type telegramRepo struct{ db *DB }

// NewTelegramTopics returns the GORM implementation of TelegramTopics.
func NewTelegramTopics(db *DB) TelegramTopics { return &telegramRepo{db} }

// migrateTopics is Hermes' apply_telegram_topic_migration in the caller's
// transaction.
func migrateTopics(tx *gorm.DB) error {
	real := "REAL"
	if isPostgres(tx) {
		real = "DOUBLE PRECISION"
	}
	for _, t := range topicTables {
		ddl := fmt.Sprintf(t.ddl, real)
		if err := tx.Exec("CREATE TABLE IF NOT EXISTS " + t.name + " (" + ddl + ")").Error; err != nil {
			return err
		}
		cols, err := tableColumns(tx, t.name)
		if err != nil {
			return err
		}
		if cols["profile_name"] {
			continue
		}
		// v1/v2 → v3: rebuild with profile_name leading the key; legacy rows
		// land in "default".
		legacy := strings.Replace(t.columns, "profile_name, ", "", 1)
		for _, q := range []string{
			"CREATE TABLE " + t.name + "_new (" + ddl + ")",
			"INSERT INTO " + t.name + "_new (" + t.columns + ") SELECT 'default', " + legacy + " FROM " + t.name,
			"DROP TABLE " + t.name,
			"ALTER TABLE " + t.name + "_new RENAME TO " + t.name,
		} {
			if err := tx.Exec(q).Error; err != nil {
				return err
			}
		}
	}
	for _, q := range []string{
		"CREATE UNIQUE INDEX IF NOT EXISTS idx_telegram_dm_topic_bindings_session ON telegram_dm_topic_bindings(session_id)",
		"CREATE INDEX IF NOT EXISTS idx_telegram_dm_topic_bindings_user ON telegram_dm_topic_bindings(profile_name, user_id, chat_id)",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return tx.Exec("INSERT INTO state_meta (key, value) VALUES ('telegram_dm_topic_schema_version', '3') ON CONFLICT(key) DO UPDATE SET value = excluded.value").Error
}

// topicTablesExist reports whether both topic tables are there.
func topicTablesExist(tx *gorm.DB) (bool, error) {
	for _, t := range topicTables {
		cols, err := tableColumns(tx, t.name)
		if err != nil || len(cols) == 0 {
			return false, err
		}
	}
	return true, nil
}

func (r *telegramRepo) Migrate(ctx context.Context) error {
	return r.db.Write(ctx, sqlitex.Routine, "telegram.migrate", migrateTopics)
}

func boolInt(b *bool) any {
	if b == nil {
		return nil
	}
	if *b {
		return 1
	}
	return 0
}

func checkTexts(op string, kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			return errs.Errorf(errs.ErrInvalid, op, "%s is empty", kv[i])
		}
		if err := checkText(op, kv[i], kv[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func (r *telegramRepo) Enable(ctx context.Context, in TopicModeInput) error {
	const op = "telegram.enable"
	if err := checkTexts(op, "chat id", in.ChatID, "user id", in.UserID, "profile", topicProfile(in.Profile)); err != nil {
		return err
	}
	now := nowOf(in.Now)
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := migrateTopics(tx); err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO telegram_dm_topic_mode (profile_name, chat_id, user_id, enabled, activated_at, updated_at,
			has_topics_enabled, allows_users_to_create_topics, capability_checked_at) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)
			ON CONFLICT(profile_name, chat_id) DO UPDATE SET user_id = excluded.user_id, enabled = 1, updated_at = excluded.updated_at,
			has_topics_enabled = excluded.has_topics_enabled, allows_users_to_create_topics = excluded.allows_users_to_create_topics,
			capability_checked_at = excluded.capability_checked_at`,
			topicProfile(in.Profile), in.ChatID, in.UserID, now, now, boolInt(in.HasTopicsEnabled), boolInt(in.AllowsUsersToCreateTopics), now).Error
	})
}

func (r *telegramRepo) Disable(ctx context.Context, chatID string, opt TopicModeOffOptions) error {
	profile, keep, now := opt.Profile, opt.KeepBindings, opt.Now
	const op = "telegram.disable"
	if err := checkTexts(op, "chat id", chatID); err != nil {
		return err
	}
	p, at := topicProfile(profile), nowOf(now)
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if ok, err := topicTablesExist(tx); err != nil || !ok {
			return err
		}
		if err := tx.Exec("UPDATE telegram_dm_topic_mode SET enabled = 0, updated_at = ? WHERE profile_name = ? AND chat_id = ?", at, p, chatID).Error; err != nil {
			return err
		}
		if keep {
			return nil
		}
		return tx.Exec("DELETE FROM telegram_dm_topic_bindings WHERE profile_name = ? AND chat_id = ?", p, chatID).Error
	})
}

func (r *telegramRepo) Enabled(ctx context.Context, chatID, userID, profile string) (bool, error) {
	const op = "telegram.enabled"
	if err := checkTexts(op, "chat id", chatID, "user id", userID); err != nil {
		return false, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		if ok, err := topicTablesExist(tx); err != nil || !ok {
			return false, err
		}
		var v []int64
		err := tx.Raw("SELECT enabled FROM telegram_dm_topic_mode WHERE profile_name = ? AND chat_id = ? AND user_id = ?", topicProfile(profile), chatID, userID).Scan(&v).Error
		return len(v) > 0 && v[0] != 0, err
	})
}

func (r *telegramRepo) bindings(ctx context.Context, op, where string, args ...any) ([]TopicBinding, error) {
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]TopicBinding, error) {
		out := []TopicBinding{}
		if ok, err := topicTablesExist(tx); err != nil || !ok {
			return out, err
		}
		err := tx.Raw("SELECT * FROM telegram_dm_topic_bindings WHERE "+where, args...).Scan(&out).Error
		return out, err
	})
}

func firstBinding(b []TopicBinding, err error) (*TopicBinding, error) {
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return &b[0], nil
}

func (r *telegramRepo) Binding(ctx context.Context, chatID, threadID, profile string) (*TopicBinding, error) {
	const op = "telegram.binding"
	if err := checkTexts(op, "chat id", chatID, "thread id", threadID); err != nil {
		return nil, err
	}
	return firstBinding(r.bindings(ctx, op, "profile_name = ? AND chat_id = ? AND thread_id = ?", topicProfile(profile), chatID, threadID))
}

func (r *telegramRepo) Bindings(ctx context.Context, chatID, profile string) ([]TopicBinding, error) {
	const op = "telegram.bindings"
	if err := checkTexts(op, "chat id", chatID); err != nil {
		return nil, err
	}
	return r.bindings(ctx, op, "profile_name = ? AND chat_id = ? ORDER BY updated_at DESC, thread_id", topicProfile(profile), chatID)
}

func (r *telegramRepo) BindingOfSession(ctx context.Context, sid string) (*TopicBinding, error) {
	const op = "telegram.binding_of_session"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	return firstBinding(r.bindings(ctx, op, "session_id = ?", sid))
}

func (r *telegramRepo) Bind(ctx context.Context, in TopicBindingInput) error {
	const op = "telegram.bind"
	if err := checkTexts(op, "chat id", in.ChatID, "thread id", in.ThreadID, "user id", in.UserID, "session key", in.SessionKey); err != nil {
		return err
	}
	if err := checkID(op, in.SessionID); err != nil {
		return err
	}
	mode := in.ManagedMode
	if mode == "" {
		mode = "auto"
	}
	if err := checkText(op, "managed mode", mode); err != nil {
		return err
	}
	p, now := topicProfile(in.Profile), nowOf(in.Now)
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := migrateTopics(tx); err != nil {
			return err
		}
		var cur []TopicBinding
		if err := tx.Raw("SELECT * FROM telegram_dm_topic_bindings WHERE session_id = ?", in.SessionID).Scan(&cur).Error; err != nil {
			return err
		}
		if len(cur) > 0 && (cur[0].ProfileName != p || cur[0].ChatID != in.ChatID || cur[0].ThreadID != in.ThreadID) {
			return errs.Errorf(errs.ErrConflict, op, "session %q is already linked to another Telegram topic", in.SessionID)
		}
		return tx.Exec(`INSERT INTO telegram_dm_topic_bindings (profile_name, chat_id, thread_id, user_id, session_key, session_id,
			managed_mode, linked_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(profile_name, chat_id, thread_id) DO UPDATE SET user_id = excluded.user_id, session_key = excluded.session_key,
			session_id = excluded.session_id, managed_mode = excluded.managed_mode, updated_at = excluded.updated_at`,
			p, in.ChatID, in.ThreadID, in.UserID, in.SessionKey, in.SessionID, mode, now, now).Error
	})
}

func (r *telegramRepo) Unbind(ctx context.Context, chatID, threadID string, opt UnbindOptions) (int64, error) {
	profile, now := opt.Profile, opt.Now
	const op = "telegram.unbind"
	if err := checkTexts(op, "chat id", chatID, "thread id", threadID); err != nil {
		return 0, err
	}
	p, at := topicProfile(profile), nowOf(now)
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		n = 0
		if ok, err := topicTablesExist(tx); err != nil || !ok {
			return err
		}
		res := tx.Exec("DELETE FROM telegram_dm_topic_bindings WHERE profile_name = ? AND chat_id = ? AND thread_id = ?", p, chatID, threadID)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		n = res.RowsAffected
		var left int64
		if err := tx.Raw("SELECT COUNT(*) FROM telegram_dm_topic_bindings WHERE profile_name = ? AND chat_id = ?", p, chatID).Scan(&left).Error; err != nil {
			return err
		}
		if left == 0 {
			return tx.Exec("UPDATE telegram_dm_topic_mode SET enabled = 0, updated_at = ? WHERE profile_name = ? AND chat_id = ?", at, p, chatID).Error
		}
		return nil
	})
	return n, err
}

func (r *telegramRepo) UnlinkedSessions(ctx context.Context, userID, profile string, limit int) ([]RichSession, error) {
	const op = "telegram.unlinked_sessions"
	if err := checkTexts(op, "user id", userID); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "the limit %d is negative", limit)
	}
	if limit == 0 {
		limit = 10
	}
	ids, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		ok, err := topicTablesExist(tx)
		if err != nil {
			return nil, err
		}
		q := "SELECT s.id FROM sessions s WHERE s.source = 'telegram' AND s.user_id = ?"
		args := []any{userID}
		if ok {
			q += " AND COALESCE(NULLIF(TRIM(s.profile_name), ''), 'default') = ? AND NOT EXISTS (SELECT 1 FROM telegram_dm_topic_bindings b WHERE b.session_id = s.id)"
			args = append(args, topicProfile(profile))
		}
		q += " ORDER BY " + lastActiveSQL("s") + " DESC, s.started_at DESC, s.id LIMIT ?"
		var ids []string
		err = tx.Raw(q, append(args, limit)...).Scan(&ids).Error
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]RichSession, 0, len(ids))
	look := NewLookup(r.db)
	for _, id := range ids {
		rs, err := look.RichRow(ctx, id)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, *rs)
	}
	return out, nil
}
