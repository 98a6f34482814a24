package repo

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// KeyProfile returns the profile a gateway session key names
// (agent:<ns>:...: "main" is "default", the marked "main~" is "main"), or
// "" for a key without that shape.
func KeyProfile(key string) string {
	parts := strings.Split(key, ":")
	if len(parts) < 3 || parts[0] != "agent" || parts[1] == "" {
		return ""
	}
	switch parts[1] {
	case "main":
		return "default"
	case "main~":
		return "main"
	}
	return parts[1]
}

// keyNamespace is the agent:<ns> prefix of profile (Hermes'
// _session_key_namespace).
func keyNamespace(profile string) string {
	switch profile {
	case "", "default":
		return "agent:main"
	case "main":
		return "agent:main~"
	}
	return "agent:" + profile
}

var hashRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

type profileRepairRepo struct{ db *DB }

// NewProfileRepair returns the GORM implementation of ProfileRepair.
func NewProfileRepair(db *DB) ProfileRepair { return &profileRepairRepo{db} }

func (r *profileRepairRepo) Crossed(ctx context.Context, owner string) (CrossedProfiles, error) {
	const op = "profile_repair.crossed"
	return Read(ctx, r.db, op, func(tx *gorm.DB) (CrossedProfiles, error) {
		out := CrossedProfiles{Mislabelled: []MislabelledSession{}, Foreign: []ForeignSession{}, CrossedParents: []CrossedParent{}}
		var rows []struct {
			ID               string
			SessionKey       string
			ProfileName      *string
			ParentSessionID  *string
			MessageCount     *int64
			ParentSessionKey *string
		}
		if err := tx.Raw(`SELECT s.id, s.session_key, s.profile_name, s.parent_session_id, s.message_count, p.session_key AS parent_session_key
			FROM sessions s LEFT JOIN sessions p ON p.id = s.parent_session_id WHERE s.session_key LIKE 'agent:%' ORDER BY s.started_at, s.id`).Scan(&rows).Error; err != nil {
			return out, err
		}
		for _, row := range rows {
			kp := KeyProfile(row.SessionKey)
			if kp == "" {
				continue
			}
			if label := strings.TrimSpace(ptr.Deref(row.ProfileName)); label != "" && label != kp {
				out.Mislabelled = append(out.Mislabelled, MislabelledSession{row.ID, row.SessionKey, label, kp})
			}
			if kp != owner {
				out.Foreign = append(out.Foreign, ForeignSession{row.ID, row.SessionKey, kp, ptr.Deref(row.MessageCount)})
			}
			if pp := KeyProfile(ptr.Deref(row.ParentSessionKey)); pp != "" && pp != kp {
				out.CrossedParents = append(out.CrossedParents, CrossedParent{row.ID, kp, ptr.Deref(row.ParentSessionID), pp})
			}
		}
		return out, nil
	})
}

func (r *profileRepairRepo) RoutingRows(ctx context.Context) ([]models.GatewayRouting, error) {
	return Read(ctx, r.db, "profile_repair.routing_rows", func(tx *gorm.DB) ([]models.GatewayRouting, error) {
		out := []models.GatewayRouting{}
		err := tx.Order("scope").Order("session_key").Find(&out).Error
		return out, err
	})
}

func (r *profileRepairRepo) ProfileLessTopicRows(ctx context.Context) ([]ProfileLessTopicRow, error) {
	return Read(ctx, r.db, "profile_repair.profile_less_topic_rows", func(tx *gorm.DB) ([]ProfileLessTopicRow, error) {
		out := []ProfileLessTopicRow{}
		cols, err := tableColumns(tx, "telegram_dm_topic_bindings")
		if err != nil || !cols["profile_name"] {
			return out, err
		}
		var rows []ProfileLessTopicRow
		if err := tx.Raw("SELECT chat_id, thread_id, session_key FROM telegram_dm_topic_bindings WHERE profile_name = 'default' ORDER BY chat_id, thread_id").Scan(&rows).Error; err != nil {
			return out, err
		}
		for _, row := range rows {
			if kp := KeyProfile(row.SessionKey); kp != "" && kp != "default" {
				row.KeyProfile = kp
				out = append(out, row)
			}
		}
		return out, nil
	})
}

func (r *profileRepairRepo) KeyProfiles(ctx context.Context, platform, chatID string) ([]string, error) {
	return Read(ctx, r.db, "profile_repair.key_profiles", func(tx *gorm.DB) ([]string, error) {
		var keys []string
		if err := tx.Raw("SELECT DISTINCT session_key FROM sessions WHERE source = ? AND chat_id = ? AND session_key LIKE 'agent:%'", platform, chatID).Scan(&keys).Error; err != nil {
			return nil, err
		}
		set := map[string]bool{}
		for _, k := range keys {
			if p := KeyProfile(k); p != "" {
				set[p] = true
			}
		}
		out := make([]string, 0, len(set))
		for p := range set {
			out = append(out, p)
		}
		slices.Sort(out)
		return out, nil
	})
}

// eachChunk calls fn with the ids 900 at a time.
func eachChunk(ids []string, fn func([]string) error) error {
	for start := 0; start < len(ids); start += 900 {
		if err := fn(ids[start:min(start+900, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

func (r *profileRepairRepo) Relabel(ctx context.Context, ids []string) (int64, error) {
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, "profile_repair.relabel", func(tx *gorm.DB) error {
		n = 0
		return eachChunk(ids, func(c []string) error {
			var rows []struct{ ID, SessionKey string }
			if err := tx.Raw("SELECT id, session_key FROM sessions WHERE id IN ? AND session_key IS NOT NULL", c).Scan(&rows).Error; err != nil {
				return err
			}
			for _, row := range rows {
				target := KeyProfile(row.SessionKey)
				if target == "" {
					continue
				}
				res := tx.Exec("UPDATE sessions SET profile_name = ? WHERE id = ? AND (profile_name IS NULL OR profile_name <> ?)", target, row.ID, target)
				if res.Error != nil {
					return res.Error
				}
				n += res.RowsAffected
			}
			return nil
		})
	})
	return n, err
}

func (r *profileRepairRepo) SeverCrossedParents(ctx context.Context, ids []string) (int64, error) {
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, "profile_repair.sever_crossed_parents", func(tx *gorm.DB) error {
		n = 0
		return eachChunk(ids, func(c []string) error {
			var rows []struct {
				ID         string
				SessionKey *string
				ParentKey  *string
			}
			if err := tx.Raw("SELECT s.id, s.session_key, p.session_key AS parent_key FROM sessions s JOIN sessions p ON p.id = s.parent_session_id WHERE s.id IN ?", c).Scan(&rows).Error; err != nil {
				return err
			}
			for _, row := range rows {
				mine, theirs := KeyProfile(ptr.Deref(row.SessionKey)), KeyProfile(ptr.Deref(row.ParentKey))
				if mine != "" && theirs != "" && mine != theirs {
					res := tx.Exec("UPDATE sessions SET parent_session_id = NULL WHERE id = ?", row.ID)
					if res.Error != nil {
						return res.Error
					}
					n += res.RowsAffected
				}
			}
			return nil
		})
	})
	return n, err
}

func (r *profileRepairRepo) RekeyLegacyMain(ctx context.Context, ids []string, profile string) (int64, error) {
	const op = "profile_repair.rekey_legacy_main"
	if err := checkText(op, "profile", profile); err != nil {
		return 0, err
	}
	ns := keyNamespace(profile) + ":"
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		n = 0
		return eachChunk(ids, func(c []string) error {
			res := tx.Exec("UPDATE sessions SET session_key = ? || substr(session_key, 12), profile_name = ? WHERE id IN ? AND substr(session_key, 1, 11) = 'agent:main:'",
				ns, profile, c)
			n += res.RowsAffected
			return res.Error
		})
	})
	return n, err
}

func (r *profileRepairRepo) DeleteRoutingRows(ctx context.Context, rows []models.GatewayRouting) (int64, error) {
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, "profile_repair.delete_routing_rows", func(tx *gorm.DB) error {
		n = 0
		for _, row := range rows {
			res := tx.Exec("DELETE FROM gateway_routing WHERE scope = ? AND session_key = ?", row.Scope, row.SessionKey)
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		return nil
	})
	return n, err
}

func (r *profileRepairRepo) InsertRoutingRowsIfAbsent(ctx context.Context, rows []models.GatewayRouting) (int64, error) {
	const op = "profile_repair.insert_routing_rows_if_absent"
	for _, row := range rows {
		if err := checkRoutingKey(op, row.Scope, row.SessionKey); err != nil {
			return 0, err
		}
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		n = 0
		for _, row := range rows {
			res := tx.Exec("INSERT INTO gateway_routing (scope, session_key, entry_json, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(scope, session_key) DO NOTHING",
				row.Scope, row.SessionKey, string(row.EntryJSON), float64(row.UpdatedAt))
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		return nil
	})
	return n, err
}

func (r *profileRepairRepo) RelabelTopicRows(ctx context.Context, rows []ProfileLessTopicRow) (TopicRelabelCounts, error) {
	var c TopicRelabelCounts
	err := r.db.Write(ctx, sqlitex.Routine, "profile_repair.relabel_topic_rows", func(tx *gorm.DB) error {
		c = TopicRelabelCounts{}
		if len(rows) == 0 {
			return nil
		}
		modeCols, err := tableColumns(tx, "telegram_dm_topic_mode")
		if err != nil {
			return err
		}
		for _, row := range rows {
			target := KeyProfile(row.SessionKey)
			if target == "" || target == "default" {
				continue
			}
			var hit int64
			if err := tx.Raw("SELECT COUNT(*) FROM telegram_dm_topic_bindings WHERE profile_name = ? AND chat_id = ? AND thread_id = ?", target, row.ChatID, row.ThreadID).Scan(&hit).Error; err != nil {
				return err
			}
			if hit > 0 {
				res := tx.Exec("DELETE FROM telegram_dm_topic_bindings WHERE profile_name = 'default' AND chat_id = ? AND thread_id = ?", row.ChatID, row.ThreadID)
				if res.Error != nil {
					return res.Error
				}
				c.BindingsDuplicatesRemove += res.RowsAffected
			} else {
				res := tx.Exec("UPDATE telegram_dm_topic_bindings SET profile_name = ? WHERE profile_name = 'default' AND chat_id = ? AND thread_id = ?", target, row.ChatID, row.ThreadID)
				if res.Error != nil {
					return res.Error
				}
				c.BindingsRelabelled += res.RowsAffected
			}
			if modeCols["profile_name"] {
				var has int64
				if err := tx.Raw("SELECT COUNT(*) FROM telegram_dm_topic_mode WHERE profile_name = ? AND chat_id = ?", target, row.ChatID).Scan(&has).Error; err != nil {
					return err
				}
				if has == 0 {
					res := tx.Exec("UPDATE telegram_dm_topic_mode SET profile_name = ? WHERE profile_name = 'default' AND chat_id = ?", target, row.ChatID)
					if res.Error != nil {
						return res.Error
					}
					c.ModeRowsRelabelled += res.RowsAffected
				}
			}
		}
		return nil
	})
	return c, err
}

func (r *profileRepairRepo) ExportForMove(ctx context.Context, sid string) (*MovePayload, error) {
	const op = "profile_repair.export_for_move"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*MovePayload, error) {
		sess, err := scanMaps(tx, "SELECT * FROM sessions WHERE id = ?", sid)
		if err != nil {
			return nil, err
		}
		if len(sess) == 0 {
			return nil, noSession(op, sid)
		}
		p := &MovePayload{Session: sess[0], Messages: []map[string]any{}, Usage: []map[string]any{}}
		stored := func(h any) (*string, error) {
			hs, ok := h.(string)
			if !ok || hs == "" {
				return nil, nil
			}
			var prompts []string
			if err := tx.Raw("SELECT prompt FROM system_prompts WHERE hash = ?", hs).Scan(&prompts).Error; err != nil || len(prompts) == 0 {
				return nil, err
			}
			return &prompts[0], nil
		}
		if p.SystemPrompt, err = stored(p.Session["system_prompt_hash"]); err != nil {
			return nil, err
		}
		if p.ToolPin, err = stored(p.Session["tool_names"]); err != nil {
			return nil, err
		}
		if p.Messages, err = scanMaps(tx, "SELECT * FROM messages WHERE session_id = ? ORDER BY id", sid); err != nil {
			return nil, err
		}
		if p.Usage, err = scanMaps(tx, "SELECT * FROM session_model_usage WHERE session_id = ?", sid); err != nil {
			return nil, err
		}
		return p, nil
	})
}

// scanMaps reads rows as column → driver value (blobs copied).
func scanMaps(tx *gorm.DB, q string, args ...any) ([]map[string]any, error) {
	rows, err := tx.Raw(q, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		m := make(map[string]any, len(cols))
		for i, c := range cols {
			m[c] = vals[i]
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// insertColumns inserts values into table, keeping only the table's
// columns (and none of skip).
func insertColumns(tx *gorm.DB, table string, values map[string]any, skip ...string) error {
	cols, err := tableColumns(tx, table)
	if err != nil {
		return err
	}
	var names []string
	for k := range values {
		if cols[k] && !slices.Contains(skip, k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	args := make([]any, len(names))
	quoted := make([]string, len(names))
	for i, k := range names {
		args[i] = values[k]
		quoted[i] = quoteIdent(k)
	}
	return tx.Exec(fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(quoted, ", "),
		strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ")), args...).Error
}

func (r *profileRepairRepo) ImportMoved(ctx context.Context, p *MovePayload, profile string) (string, error) {
	const op = "profile_repair.import_moved"
	if p == nil || p.Session == nil {
		return "", errs.Errorf(errs.ErrInvalid, op, "the move payload has no session")
	}
	sid, _ := p.Session["id"].(string)
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	var status string
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if ok, err := sessionExists(tx, sid); err != nil {
			return err
		} else if ok {
			status = "present"
			return nil
		}
		s := map[string]any{}
		for k, v := range p.Session {
			s[k] = v
		}
		s["profile_name"] = profile
		if pid, _ := s["parent_session_id"].(string); pid != "" {
			if ok, err := sessionExists(tx, pid); err != nil {
				return err
			} else if !ok {
				s["parent_session_id"] = nil
			}
		}
		if title, ok := s["title"].(string); ok {
			var n int64
			if err := tx.Raw("SELECT COUNT(*) FROM sessions WHERE title = ?", title).Scan(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				tail := []rune(sid)
				suffix := " (" + string(tail[max(0, len(tail)-12):]) + ")"
				rt := []rune(title)
				s["title"] = string(rt[:max(0, min(len(rt), MaxTitleLength-len([]rune(suffix))))]) + suffix
			}
		}
		s["system_prompt_hash"] = nil
		if p.SystemPrompt != nil {
			h, err := storePrompt(tx, *p.SystemPrompt)
			if err != nil {
				return err
			}
			s["system_prompt_hash"] = h
		}
		if tn, _ := s["tool_names"].(string); p.ToolPin != nil || hashRe.MatchString(tn) {
			s["tool_names"] = nil
			if p.ToolPin != nil {
				h, err := storePrompt(tx, *p.ToolPin)
				if err != nil {
					return err
				}
				s["tool_names"] = h
			}
		}
		if err := insertColumns(tx, "sessions", s); err != nil {
			return err
		}
		for _, m := range p.Messages {
			mm := map[string]any{}
			for k, v := range m {
				mm[k] = v
			}
			mm["session_id"] = sid
			if err := insertColumns(tx, "messages", mm, "id", "display_order"); err != nil {
				return err
			}
		}
		for _, u := range p.Usage {
			uu := map[string]any{}
			for k, v := range u {
				uu[k] = v
			}
			uu["session_id"] = sid
			if err := insertColumns(tx, "session_model_usage", uu); err != nil {
				return err
			}
		}
		status = "imported"
		return nil
	})
	return status, err
}

func (r *profileRepairRepo) DeleteMoved(ctx context.Context, sid string) (bool, error) {
	const op = "profile_repair.delete_moved"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	var ok bool
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		exists, err := sessionExists(tx, sid)
		if err != nil || !exists {
			ok = false
			return err
		}
		for _, q := range []string{
			"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = ?",
			"DELETE FROM messages WHERE session_id = ?",
			"DELETE FROM session_model_usage WHERE session_id = ?",
			"DELETE FROM sessions WHERE id = ?",
		} {
			if err := tx.Exec(q, sid).Error; err != nil {
				return err
			}
		}
		ok = true
		return deleteUnreferencedPrompts(tx)
	})
	return ok, err
}
