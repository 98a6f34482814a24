package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

type peersRepo struct{ db *DB }

// NewPeers returns the GORM implementation of Peers.
func NewPeers(db *DB) Peers { return &peersRepo{db} }

func checkNonEmpty(op, field, k string) error {
	if k == "" {
		return errs.Errorf(errs.ErrInvalid, op, "the %s is empty", field)
	}
	return checkText(op, field, k)
}

func (r *peersRepo) IncrementHygieneStreak(ctx context.Context, key string) (int64, error) {
	const op = "peers.increment_hygiene_streak"
	if err := checkNonEmpty(op, "session key", key); err != nil {
		return 0, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := tx.Exec(`INSERT INTO gateway_hygiene_state (session_key, failure_streak) VALUES (?, 1)
			ON CONFLICT(session_key) DO UPDATE SET failure_streak = gateway_hygiene_state.failure_streak + 1`, key).Error; err != nil {
			return err
		}
		return tx.Raw("SELECT failure_streak FROM gateway_hygiene_state WHERE session_key = ?", key).Scan(&n).Error
	})
	return n, err
}

func (r *peersRepo) ResetHygieneStreak(ctx context.Context, key string) error {
	const op = "peers.reset_hygiene_streak"
	if err := checkNonEmpty(op, "session key", key); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		return tx.Exec("DELETE FROM gateway_hygiene_state WHERE session_key = ?", key).Error
	})
}

func (r *peersRepo) HasInputOwner(ctx context.Context, sid, owner string) (bool, error) {
	const op = "peers.has_input_owner"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	if err := checkText(op, "owner", owner); err != nil {
		return false, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		var n int64
		err := tx.Raw("SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE session_id = ? AND role = 'user' AND observed = 0 AND (active = 1 OR compacted = 1) AND "+
			r.db.jsonMarker("display_metadata", "gateway_input_owner")+" = ? LIMIT 1) x", sid, owner).Scan(&n).Error
		return n > 0, err
	})
}

func (r *peersRepo) Record(ctx context.Context, sid string, p PeerRecord) error {
	const op = "peers.record"
	if err := checkID(op, sid); err != nil {
		return err
	}
	if err := checkNonEmpty(op, "session key", p.SessionKey); err != nil {
		return err
	}
	if err := checkName(op, "source", p.Source); err != nil {
		return err
	}
	for f, v := range map[string]*string{"user_id": p.UserID, "chat_id": p.ChatID, "chat_type": p.ChatType, "thread_id": p.ThreadID,
		"display_name": p.DisplayName, "transport_profile": p.TransportProfile} {
		if err := checkTextPtr(op, f, v); err != nil {
			return err
		}
	}
	var origin any
	if !p.OriginJSON.IsNull() {
		b, err := pyjson.Canonical(p.OriginJSON)
		if err != nil {
			return errs.Wrap(errs.ErrInvalid, op, err, "origin_json is not valid JSON")
		}
		origin = string(b)
	}
	now := nowOf(p.Now)
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		ids := []string{sid}
		if p.IncludeCompressionAncestors {
			var err error
			if ids, err = compressionAncestorsOf(tx, sid); err != nil {
				return err
			}
		}
		res := tx.Exec(`UPDATE sessions SET session_key = ?, source = ?, user_id = ?, chat_id = ?, chat_type = ?, thread_id = ?,
			display_name = COALESCE(?, display_name), origin_json = COALESCE(?, origin_json),
			transport_profile = COALESCE(?, transport_profile) WHERE id IN ?`,
			p.SessionKey, p.Source, p.UserID, p.ChatID, p.ChatType, p.ThreadID, p.DisplayName, origin, p.TransportProfile, ids)
		if res.Error != nil || p.IncludeCompressionAncestors {
			return res.Error
		}
		if exists, err := sessionExists(tx, sid); err != nil || exists {
			return err
		}
		return tx.Exec(`INSERT INTO sessions (id, source, created_source, user_id, session_key, chat_id, chat_type, thread_id,
			display_name, origin_json, profile_name, transport_profile, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
			sid, p.Source, p.Source, p.UserID, p.SessionKey, p.ChatID, p.ChatType, p.ThreadID, p.DisplayName, origin,
			p.TransportProfile, now).Error
	})
}

// compressionAncestorsOf returns sid and its compression ancestors: the
// walk steps to the parent while the parent ended by compression and the
// child is not a branch, delegate, reset or tool child (Hermes'
// _COMPRESSION_LINEAGE_CTE).
func compressionAncestorsOf(tx *gorm.DB, sid string) ([]string, error) {
	out := []string{sid}
	seen := map[string]bool{sid: true}
	cur := sid
	for depth := 0; depth < maxLineageDepth; depth++ {
		s, err := getSession(tx, cur)
		if err != nil {
			if isNotFound(err) {
				break
			}
			return nil, err
		}
		pid := ptr.Deref(s.ParentSessionID)
		if pid == "" || seen[pid] || isExplicitForkChild(s, true) || isLegacyResetChild(tx, s) {
			break
		}
		p, err := getSession(tx, pid)
		if err != nil {
			if isNotFound(err) {
				break
			}
			return nil, err
		}
		if ptr.Deref(p.EndReason) != "compression" {
			break
		}
		seen[pid] = true
		out = append(out, pid)
		cur = pid
	}
	return out, nil
}

// isLegacyResetChild is the pre-marker reset heuristic of _RESET_CHILD_SQL:
// the child rides its parent's exact non-empty key and the parent ended at a
// reset boundary.
func isLegacyResetChild(tx *gorm.DB, s *models.Session) bool {
	key := ptr.Deref(s.SessionKey)
	if key == "" || s.ParentSessionID == nil {
		return false
	}
	p, err := getSession(tx, *s.ParentSessionID)
	return err == nil && isResetReason(ptr.Deref(p.EndReason)) && ptr.Deref(p.SessionKey) == key
}

func (r *peersRepo) Orphans(ctx context.Context, maxGap time.Duration) ([]OrphanRecord, error) {
	const op = "peers.orphans"
	if maxGap < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "the gap %s is negative", maxGap)
	}
	if maxGap == 0 {
		maxGap = DefaultOrphanGap
	}
	gap := maxGap.Seconds()
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]OrphanRecord, error) {
		var orphans []struct {
			ID, Source      string
			UserID          *string
			StartedAt       float64
			ParentSessionID *string
			LastActive      *float64
			MessageCount    int64
		}
		q := fmt.Sprintf(`SELECT o.id, o.source, o.user_id, o.started_at, o.parent_session_id, %s AS last_active,
			(SELECT COUNT(*) FROM messages m WHERE m.session_id = o.id) AS message_count
			FROM sessions o WHERE o.session_key IS NULL AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = o.id)
			AND COALESCE(o.source, '') != 'tool' AND %s IS NULL AND %s IS NULL ORDER BY o.started_at ASC, o.id`,
			lastActiveSQL("o"), r.db.jsonMarker("o.model_config", "_branched_from"), r.db.jsonMarker("o.model_config", "_delegate_from"))
		if err := tx.Raw(q).Scan(&orphans).Error; err != nil {
			return nil, err
		}
		type donor struct {
			ID         string
			SessionKey *string
		}
		out := make([]OrphanRecord, 0, len(orphans))
		for _, o := range orphans {
			rec := OrphanRecord{OrphanID: o.ID, Source: o.Source, MessageCount: o.MessageCount, StartedAt: models.Epoch(o.StartedAt)}
			if o.LastActive != nil {
				e := models.Epoch(*o.LastActive)
				rec.LastActive = &e
			}
			var donors []donor
			if pid := ptr.Deref(o.ParentSessionID); pid != "" {
				rec.Evidence = "lineage"
				if err := tx.Raw("SELECT d.id, d.session_key FROM sessions d WHERE d.id = ? AND d.session_key IS NOT NULL AND COALESCE(d.source, '') = COALESCE(?, '')",
					pid, o.Source).Scan(&donors).Error; err != nil {
					return nil, err
				}
				if len(donors) == 0 {
					rec.Reason = "parent session carries no gateway identity of this source"
				}
			} else {
				rec.Evidence = "contiguity"
				la := lastActiveSQL("d")
				var last any
				if o.LastActive != nil {
					last = *o.LastActive
				}
				if err := tx.Raw(fmt.Sprintf(`SELECT d.id, d.session_key FROM sessions d WHERE d.session_key IS NOT NULL AND d.id != ?
					AND COALESCE(d.source, '') = COALESCE(?, '') AND (COALESCE(d.user_id, '') = '' OR COALESCE(?, '') = '' OR d.user_id = ?)
					AND %[1]s BETWEEN ? AND ? AND %[1]s < ? ORDER BY %[1]s DESC LIMIT 2`, la),
					o.ID, o.Source, o.UserID, o.UserID, o.StartedAt-gap, o.StartedAt+gap, last).Scan(&donors).Error; err != nil {
					return nil, err
				}
				switch {
				case len(donors) == 0:
					rec.Reason = fmt.Sprintf("no keyed predecessor fell quiet within %.0fs of this session's start", gap)
				case len(donors) > 1:
					rec.Reason = "ambiguous: more than one keyed predecessor matches this window"
					donors = nil
				}
			}
			if len(donors) == 1 {
				d := donors[0]
				rec.DonorID, rec.SessionKey, rec.Adoptable = &d.ID, d.SessionKey, true
			} else {
				rec.Evidence = ""
			}
			out = append(out, rec)
		}
		claims := map[string]int{}
		for _, rec := range out {
			if rec.Adoptable {
				claims[*rec.DonorID]++
			}
		}
		for i := range out {
			if out[i].Adoptable && claims[*out[i].DonorID] > 1 {
				out[i].Adoptable = false
				out[i].Reason = "ambiguous: more than one unkeyed session claims this predecessor"
			}
		}
		return out, nil
	})
}

func (r *peersRepo) Adopt(ctx context.Context, orphanID, donorID string, now time.Time) (bool, error) {
	const op = "peers.adopt"
	if err := checkID(op, orphanID); err != nil {
		return false, err
	}
	if err := checkID(op, donorID); err != nil {
		return false, err
	}
	if orphanID == donorID {
		return false, nil
	}
	at := nowOf(now)
	var adopted bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		adopted = false
		d, err := getSession(tx, donorID)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		o, err := getSession(tx, orphanID)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		if ptr.Deref(d.SessionKey) == "" || o.SessionKey != nil || d.Source != o.Source {
			return nil
		}
		var origin any
		if !d.OriginJSON.IsNull() {
			origin = string(d.OriginJSON)
		}
		if err := tx.Exec(`UPDATE sessions SET session_key = ?, chat_id = COALESCE(chat_id, ?), chat_type = COALESCE(chat_type, ?),
			thread_id = COALESCE(thread_id, ?), user_id = COALESCE(user_id, ?), origin_json = COALESCE(origin_json, ?),
			display_name = COALESCE(display_name, ?), parent_session_id = COALESCE(parent_session_id, ?)
			WHERE id = ? AND session_key IS NULL`,
			*d.SessionKey, d.ChatID, d.ChatType, d.ThreadID, d.UserID, origin, d.DisplayName, donorID, orphanID).Error; err != nil {
			return err
		}
		if err := tx.Exec("UPDATE sessions SET ended_at = COALESCE(ended_at, ?), end_reason = 'superseded_by_repair' WHERE id = ?", at, donorID).Error; err != nil {
			return err
		}
		adopted = true
		return nil
	})
	return adopted, err
}

// tableColumns returns the columns of table (empty when it does not exist).
func tableColumns(tx *gorm.DB, table string) (map[string]bool, error) {
	var cols []string
	var err error
	if isPostgres(tx) {
		err = tx.Raw("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?", table).Scan(&cols).Error
	} else {
		err = tx.Raw("SELECT name FROM pragma_table_info(?)", table).Scan(&cols).Error
	}
	out := map[string]bool{}
	for _, c := range cols {
		out[c] = true
	}
	return out, err
}

func (r *peersRepo) RekeyProfile(ctx context.Context, oldName, newName string) (map[string]int64, error) {
	const op = "peers.rekey_profile"
	oldName, newName = strings.TrimSpace(oldName), strings.TrimSpace(newName)
	counts := map[string]int64{}
	if oldName == "" || newName == "" || oldName == newName {
		return counts, nil
	}
	for _, v := range []string{oldName, newName} {
		if err := checkText(op, "profile name", v); err != nil {
			return nil, err
		}
	}
	oldNS, newNS := "agent:"+oldName+":", "agent:"+newName+":"
	n := len(oldNS)
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		clear(counts)
		var clash []struct{ Scope, Key string }
		if err := tx.Raw(`SELECT old.scope AS scope, ? || substr(old.session_key, ?) AS key FROM gateway_routing old
			JOIN gateway_routing target ON target.scope = old.scope AND target.session_key = ? || substr(old.session_key, ?)
			WHERE substr(old.session_key, 1, ?) = ? LIMIT 1`, newNS, n+1, newNS, n+1, n, oldNS).Scan(&clash).Error; err != nil {
			return err
		}
		if len(clash) > 0 {
			return errs.Errorf(errs.ErrConflict, op, "profile routing collision in scope %q: %q", clash[0].Scope, clash[0].Key)
		}
		topicCols := map[string]map[string]bool{}
		for _, tbl := range []string{"telegram_dm_topic_mode", "telegram_dm_topic_bindings", "delivery_obligations"} {
			c, err := tableColumns(tx, tbl)
			if err != nil {
				return err
			}
			topicCols[tbl] = c
		}
		for tbl, cols := range map[string][]string{"telegram_dm_topic_mode": {"chat_id"}, "telegram_dm_topic_bindings": {"chat_id", "thread_id"}} {
			if !topicCols[tbl]["profile_name"] {
				continue
			}
			eq := make([]string, len(cols))
			for i, c := range cols {
				eq[i] = "target." + c + " = old." + c
			}
			var hit []int
			if err := tx.Raw("SELECT 1 FROM "+tbl+" old JOIN "+tbl+" target ON target.profile_name = ? AND "+strings.Join(eq, " AND ")+
				" WHERE old.profile_name = ? LIMIT 1", newName, oldName).Scan(&hit).Error; err != nil {
				return err
			}
			if len(hit) > 0 {
				return errs.Errorf(errs.ErrConflict, op, "profile identity collision in %s", tbl)
			}
		}
		exec := func(key, q string, args ...any) error {
			res := tx.Exec(q, args...)
			counts[key] = res.RowsAffected
			return res.Error
		}
		if err := exec("sessions_profile_name", "UPDATE sessions SET profile_name = ? WHERE profile_name = ?", newName, oldName); err != nil {
			return err
		}
		if err := exec("gateway_heartbeats_profile", "UPDATE gateway_heartbeats SET profile = ? WHERE profile = ?", newName, oldName); err != nil {
			return err
		}
		if err := exec("sessions_session_key", "UPDATE sessions SET session_key = ? || substr(session_key, ?) WHERE substr(session_key, 1, ?) = ?",
			newNS, n+1, n, oldNS); err != nil {
			return err
		}
		var origins []struct {
			ID         string
			OriginJSON string
		}
		if err := tx.Raw("SELECT id, origin_json FROM sessions WHERE origin_json IS NOT NULL ORDER BY id").Scan(&origins).Error; err != nil {
			return err
		}
		var originN int64
		for _, o := range origins {
			b, ok := rewriteProfile([]byte(o.OriginJSON), oldName, newName, "", "", "")
			if !ok {
				continue
			}
			if err := tx.Exec("UPDATE sessions SET origin_json = ? WHERE id = ?", string(b), o.ID).Error; err != nil {
				return err
			}
			originN++
		}
		counts["sessions_origin_json"] = originN
		if len(topicCols["delivery_obligations"]) > 0 {
			if topicCols["delivery_obligations"]["adapter_profile"] {
				if err := exec("delivery_obligations_adapter_profile", "UPDATE delivery_obligations SET adapter_profile = ? WHERE adapter_profile = ?", newName, oldName); err != nil {
					return err
				}
			}
			if err := exec("delivery_obligations_session_key", "UPDATE delivery_obligations SET session_key = ? || substr(session_key, ?) WHERE substr(session_key, 1, ?) = ?",
				newNS, n+1, n, oldNS); err != nil {
				return err
			}
		}
		for _, tbl := range []string{"telegram_dm_topic_mode", "telegram_dm_topic_bindings"} {
			if topicCols[tbl]["profile_name"] {
				if err := exec(tbl+"_profile_name", "UPDATE "+tbl+" SET profile_name = ? WHERE profile_name = ?", newName, oldName); err != nil {
					return err
				}
			}
		}
		if topicCols["telegram_dm_topic_bindings"]["session_key"] {
			if err := exec("telegram_dm_topic_bindings_session_key", "UPDATE telegram_dm_topic_bindings SET session_key = ? || substr(session_key, ?) WHERE substr(session_key, 1, ?) = ?",
				newNS, n+1, n, oldNS); err != nil {
				return err
			}
		}
		var routes []struct{ Scope, SessionKey, EntryJSON string }
		if err := tx.Raw("SELECT scope, session_key, entry_json FROM gateway_routing WHERE substr(session_key, 1, ?) = ? ORDER BY scope, session_key", n, oldNS).Scan(&routes).Error; err != nil {
			return err
		}
		for _, rt := range routes {
			entry := rt.EntryJSON
			if b, ok := rewriteProfile([]byte(rt.EntryJSON), oldName, newName, "origin", oldNS, newNS); ok {
				entry = string(b)
			}
			if err := tx.Exec("UPDATE gateway_routing SET session_key = ?, entry_json = ? WHERE scope = ? AND session_key = ?",
				newNS+rt.SessionKey[n:], entry, rt.Scope, rt.SessionKey).Error; err != nil {
				return err
			}
		}
		counts["gateway_routing"] = int64(len(routes))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// rewriteProfile rewrites a JSON object as Hermes' rekey does and re-dumps
// it with ensure_ascii=False: with nested == "" the object's own "profile"
// (origin_json); otherwise a routing entry: its "session_key" prefix
// oldNS → newNS and its nested object's "profile". ok is false when the text
// is not an object or (origin_json) nothing matched.
func rewriteProfile(raw []byte, oldName, newName, nested, oldNS, newNS string) ([]byte, bool) {
	var obj orderedObject
	if err := json.Unmarshal(raw, &obj); err != nil || obj.keys == nil {
		return nil, false
	}
	changed := false
	setProfile := func(o *orderedObject) {
		if v, ok := o.get("profile"); ok {
			var s string
			if json.Unmarshal(v, &s) == nil && s == oldName {
				b, _ := json.Marshal(newName)
				o.set("profile", b)
				changed = true
			}
		}
	}
	if nested == "" {
		setProfile(&obj)
		if !changed {
			return nil, false
		}
	} else {
		if v, ok := obj.get("session_key"); ok {
			var s string
			if json.Unmarshal(v, &s) == nil && strings.HasPrefix(s, oldNS) {
				b, _ := json.Marshal(newNS + s[len(oldNS):])
				obj.set("session_key", b)
			}
		}
		if v, ok := obj.get(nested); ok {
			var inner orderedObject
			if json.Unmarshal(v, &inner) == nil && inner.keys != nil {
				setProfile(&inner)
				obj.set(nested, inner.bytes())
			}
		}
	}
	b, err := pyjson.CanonicalUnicode(obj.bytes())
	return b, err == nil
}

// orderedObject is a JSON object that keeps its keys' order (a Python dict).
type orderedObject struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *orderedObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("not an object")
	}
	o.keys, o.vals = []string{}, map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		k := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if _, seen := o.vals[k]; !seen {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	return nil
}

func (o *orderedObject) get(k string) (json.RawMessage, bool) { v, ok := o.vals[k]; return v, ok }
func (o *orderedObject) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *orderedObject) bytes() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

func (r *peersRepo) PurgeProfile(ctx context.Context, name string, now time.Time) (map[string]int64, error) {
	const op = "peers.purge_profile"
	name = strings.TrimSpace(name)
	counts := map[string]int64{}
	if name == "" {
		return counts, nil
	}
	if err := checkText(op, "profile name", name); err != nil {
		return nil, err
	}
	ns := "agent:" + name + ":"
	n := len(ns)
	at := nowOf(now)
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		clear(counts)
		exec := func(key, q string, args ...any) error {
			res := tx.Exec(q, args...)
			counts[key] = res.RowsAffected
			return res.Error
		}
		if err := exec("gateway_routing", "DELETE FROM gateway_routing WHERE substr(session_key, 1, ?) = ?", n, ns); err != nil {
			return err
		}
		if err := exec("gateway_heartbeats", "DELETE FROM gateway_heartbeats WHERE profile = ?", name); err != nil {
			return err
		}
		cols := map[string]map[string]bool{}
		for _, tbl := range []string{"telegram_dm_topic_mode", "telegram_dm_topic_bindings", "delivery_obligations"} {
			c, err := tableColumns(tx, tbl)
			if err != nil {
				return err
			}
			cols[tbl] = c
		}
		if len(cols["delivery_obligations"]) > 0 {
			by, args := "", []any{at, n, ns}
			if cols["delivery_obligations"]["adapter_profile"] {
				by, args = "adapter_profile = ? OR ", []any{at, name, n, ns}
			}
			if err := exec("delivery_obligations", "UPDATE delivery_obligations SET state = 'abandoned', updated_at = ? WHERE ("+by+
				"substr(session_key, 1, ?) = ?) AND state NOT IN ('delivered', 'abandoned')", args...); err != nil {
				return err
			}
		}
		if cols["telegram_dm_topic_mode"]["profile_name"] {
			if err := exec("telegram_dm_topic_mode", "DELETE FROM telegram_dm_topic_mode WHERE profile_name = ?", name); err != nil {
				return err
			}
		}
		if b := cols["telegram_dm_topic_bindings"]; b["session_key"] {
			by, args := "", []any{n, ns}
			if b["profile_name"] {
				by, args = "profile_name = ? OR ", []any{name, n, ns}
			}
			if err := exec("telegram_dm_topic_bindings", "DELETE FROM telegram_dm_topic_bindings WHERE "+by+"substr(session_key, 1, ?) = ?", args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

type routesRepo struct{ db *DB }

// NewRoutes returns the GORM implementation of Routes.
func NewRoutes(db *DB) Routes { return &routesRepo{db} }

func (r *routesRepo) SetRuntimeLock(ctx context.Context, sid string, lock RuntimeLock) error {
	const op = "routes.set_runtime_lock"
	if err := checkID(op, sid); err != nil {
		return err
	}
	for f, v := range map[string]string{"model": lock.Model, "provider": lock.Provider, "route_source": lock.RouteSource} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	opts := lock.ModelOptions
	if opts == nil {
		opts = map[string]any{}
	}
	ob, err := json.Marshal(opts)
	if err != nil {
		return errs.Wrap(errs.ErrInvalid, op, err, "model_options cannot be encoded as JSON")
	}
	// The lock's keys in Hermes' order (a Python dict literal).
	lk := orderedObject{}
	for _, kv := range []struct {
		k string
		v any
	}{{"provider", lock.Provider}, {"model", lock.Model}, {"model_options", json.RawMessage(ob)},
		{"route_source", lock.RouteSource}, {"confirmed", lock.Confirmed}, {"updated_at", pyFloat(nowOf(lock.Now))}} {
		b, _ := json.Marshal(kv.v)
		if lk.vals == nil {
			lk.vals = map[string]json.RawMessage{}
		}
		lk.set(kv.k, b)
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		s, err := getSession(tx, sid)
		if err != nil {
			return err
		}
		merged, err := mergeModelConfig(s.ModelConfig, map[string]any{"browser_model_lock": json.RawMessage(lk.bytes())})
		if err != nil {
			return err
		}
		if err := tx.Exec("UPDATE sessions SET model_config = ?, model = COALESCE(?, model), system_prompt = NULL, system_prompt_hash = NULL WHERE id = ?",
			merged, models.TextOrNil(lock.Model), sid).Error; err != nil {
			return err
		}
		return deleteUnreferencedPrompts(tx)
	})
}

// pyFloat is a float that encodes as Python's repr (a float always has a
// fraction or an exponent: 1.0, not 1).
type pyFloat float64

func (f pyFloat) MarshalJSON() ([]byte, error) { return []byte(PyFloat(float64(f))), nil }

func (r *routesRepo) SetYolo(ctx context.Context, sid string, enabled bool) error {
	const op = "routes.set_yolo"
	if err := checkID(op, sid); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		s, err := getSession(tx, sid)
		if err != nil {
			return err
		}
		merged, err := mergeModelConfig(s.ModelConfig, map[string]any{"yolo_mode": enabled})
		if err != nil {
			return err
		}
		return tx.Exec("UPDATE sessions SET model_config = ? WHERE id = ?", merged, sid).Error
	})
}

func (r *routesRepo) SetBillingRoute(ctx context.Context, sid string, route BillingRoute) error {
	provider, baseURL, mode := route.Provider, route.BaseURL, route.Mode
	const op = "routes.set_billing_route"
	if err := checkID(op, sid); err != nil {
		return err
	}
	for f, v := range map[string]*string{"provider": &provider, "base_url": &baseURL, "billing_mode": mode} {
		if err := checkTextPtr(op, f, v); err != nil {
			return err
		}
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET billing_provider = ?, billing_base_url = ?, billing_mode = COALESCE(?, billing_mode) WHERE id = ?",
			provider, baseURL, mode, sid)
		if res.Error == nil && res.RowsAffected == 0 {
			return noSession(op, sid)
		}
		return res.Error
	})
}

// bareBillingProviders are billing buckets that are not a routable provider
// (Hermes' _BARE_BILLING_PROVIDERS).
var bareBillingProviders = map[string]bool{"auto": true, "custom": true}

// GatewayRuntime returns the runtime route a resume restores from a session
// row (Hermes' session_gateway_runtime): model_config's gateway_runtime
// when it names a provider (None values dropped); else the top-level
// provider, base_url and api_mode that are set, the billing provider (not
// "auto"/"custom") filling a missing provider; else gateway_runtime as it
// is, or an empty map (also for a model_config that is not an object).
func GatewayRuntime(s *models.Session) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	var cfg map[string]any
	if !s.ModelConfig.IsNull() {
		if json.Unmarshal(s.ModelConfig, &cfg) != nil {
			cfg = nil
		}
	}
	runtime, isDict := cfg["gateway_runtime"].(map[string]any)
	noNone := func(m map[string]any) map[string]any {
		o := map[string]any{}
		for k, v := range m {
			if v != nil {
				o[k] = v
			}
		}
		return o
	}
	if isDict && pyTruthy(runtime["provider"]) {
		return noNone(runtime)
	}
	for _, k := range []string{"provider", "base_url", "api_mode"} {
		if v, ok := cfg[k]; ok && pyTruthy(v) {
			out[k] = v
		}
	}
	if bp := strings.TrimSpace(ptr.Deref(s.BillingProvider)); bp != "" && !bareBillingProviders[strings.ToLower(bp)] {
		if _, ok := out["provider"]; !ok {
			out["provider"] = bp
		}
	}
	if len(out) > 0 {
		return out
	}
	if !isDict {
		return out
	}
	return noNone(runtime)
}

// YoloEnabled reports the session's persisted YOLO flag (Hermes'
// session_yolo_enabled): model_config.yolo_mode truthy; false on any parse
// failure.
func YoloEnabled(s *models.Session) bool {
	if s == nil || s.ModelConfig.IsNull() {
		return false
	}
	var cfg map[string]any
	if json.Unmarshal(s.ModelConfig, &cfg) != nil {
		return false
	}
	return pyTruthy(cfg["yolo_mode"])
}

// pyTruthy is Python's bool() of a decoded JSON value.
func pyTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
