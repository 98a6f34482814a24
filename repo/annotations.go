package repo

import (
	"context"
	"encoding/json"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

const (
	reactionsKey  = "reactions" // Hermes' REACTIONS_METADATA_KEY
	toolRetryKey  = "retried"   // Hermes' TOOL_RETRY_METADATA_KEY
	displayActive = "(active = 1 OR compacted = 1)"
)

type annotationsRepo struct{ db *DB }

// NewAnnotations returns the GORM implementation of Annotations.
func NewAnnotations(db *DB) Annotations { return &annotationsRepo{db} }

// decodeMeta is Hermes' _decode_display_metadata: the column as a JSON
// object (a second string layer of pre-guard rows unwrapped); ok is false
// for NULL, invalid JSON or a non-object.
func decodeMeta(raw *string) (orderedObject, bool) {
	if raw == nil {
		return orderedObject{}, false
	}
	b := []byte(*raw)
	for i := 0; i < 2; i++ {
		var s string
		if json.Unmarshal(b, &s) == nil {
			b = []byte(s)
			continue
		}
		break
	}
	var o orderedObject
	if json.Unmarshal(b, &o) != nil || o.keys == nil {
		return orderedObject{}, false
	}
	return o, true
}

// encodeMeta is json.dumps of the object (NULL when it is empty).
func encodeMeta(o orderedObject) (any, error) {
	if len(o.keys) == 0 {
		return nil, nil
	}
	b, err := pyjson.Canonical(o.bytes())
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// reactionList returns the well-formed (object) reactions of meta.
func reactionList(meta orderedObject) []orderedObject {
	v, ok := meta.get(reactionsKey)
	if !ok {
		return nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil {
		return nil
	}
	var out []orderedObject
	for _, r := range raw {
		var o orderedObject
		if json.Unmarshal(r, &o) == nil && o.keys != nil {
			out = append(out, o)
		}
	}
	return out
}

func strField(o orderedObject, k string) string {
	v, ok := o.get(k)
	if !ok {
		return ""
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func truthyField(o orderedObject, k string) bool {
	v, ok := o.get(k)
	if !ok {
		return false
	}
	var x any
	_ = json.Unmarshal(v, &x)
	return pyTruthy(x)
}

func toReactions(list []orderedObject) []Reaction {
	out := make([]Reaction, 0, len(list))
	for _, o := range list {
		var at float64
		if v, ok := o.get("at"); ok {
			_ = json.Unmarshal(v, &at)
		}
		out = append(out, Reaction{Emoji: strField(o, "emoji"), Author: strField(o, "author"), At: at, Seen: truthyField(o, "seen")})
	}
	return out
}

func setList(meta *orderedObject, key string, list []orderedObject) {
	if len(list) == 0 {
		if _, ok := meta.vals[key]; ok {
			delete(meta.vals, key)
			keys := meta.keys[:0]
			for _, k := range meta.keys {
				if k != key {
					keys = append(keys, k)
				}
			}
			meta.keys = keys
		}
		return
	}
	parts := make([]string, len(list))
	for i, o := range list {
		parts[i] = string(o.bytes())
	}
	meta.set(key, json.RawMessage("["+strings.Join(parts, ",")+"]"))
}

// reactionAuthor is author, or Hermes' default "user" when empty.
func reactionAuthor(author string) string {
	if author == "" {
		return "user"
	}
	return author
}

func (r *annotationsRepo) SetReaction(ctx context.Context, sid string, rowID int64, opt ReactionOptions) ([]Reaction, error) {
	const op = "annotations.set_reaction"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	emoji, author, now := opt.Emoji, reactionAuthor(opt.Author), nowOf(opt.Now)
	if err := checkText(op, "author", author); err != nil {
		return nil, err
	}
	if err := checkText(op, "emoji", emoji); err != nil {
		return nil, err
	}
	var out []Reaction
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var rows []struct {
			DisplayMetadata *string
		}
		if err := tx.Raw("SELECT display_metadata FROM messages WHERE id = ? AND session_id = ?", rowID, sid).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return errs.Errorf(errs.ErrNotFound, op, "message %d is not a message of session %q", rowID, sid)
		}
		meta, ok := decodeMeta(rows[0].DisplayMetadata)
		if !ok {
			meta = orderedObject{keys: []string{}, vals: map[string]json.RawMessage{}}
		}
		existing := reactionList(meta)
		var keep []orderedObject
		previous := ""
		hadPrevious := false
		for _, o := range existing {
			if strField(o, "author") == author {
				if !hadPrevious {
					previous, hadPrevious = strField(o, "emoji"), true
				}
				continue
			}
			keep = append(keep, o)
		}
		if emoji != "" && (!hadPrevious || previous != emoji) {
			n := orderedObject{vals: map[string]json.RawMessage{}}
			n.set("emoji", json.RawMessage(mustJSON(emoji)))
			n.set("author", json.RawMessage(mustJSON(author)))
			n.set("at", json.RawMessage(PyFloat(now)))
			keep = append(keep, n)
		}
		setList(&meta, reactionsKey, keep)
		enc, err := encodeMeta(meta)
		if err != nil {
			return err
		}
		out = toReactions(keep)
		return tx.Exec("UPDATE messages SET display_metadata = ? WHERE id = ?", enc, rowID).Error
	})
	return out, err
}

func (r *annotationsRepo) Reactions(ctx context.Context, sid string, rowID int64) ([]Reaction, error) {
	const op = "annotations.reactions"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]Reaction, error) {
		var rows []struct {
			DisplayMetadata *string
		}
		if err := tx.Raw("SELECT display_metadata FROM messages WHERE id = ? AND session_id = ?", rowID, sid).Scan(&rows).Error; err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return []Reaction{}, nil
		}
		meta, _ := decodeMeta(rows[0].DisplayMetadata)
		return toReactions(reactionList(meta)), nil
	})
}

func (r *annotationsRepo) TakeUnseenReactions(ctx context.Context, sid, author string) ([]UnseenReaction, error) {
	const op = "annotations.take_unseen_reactions"
	author = reactionAuthor(author)
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	if err := checkText(op, "author", author); err != nil {
		return nil, err
	}
	var out []UnseenReaction
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		out = []UnseenReaction{}
		var rows []models.Message
		if err := tx.Select("id, role, content, display_metadata").Where("session_id = ? AND active = 1 AND display_metadata IS NOT NULL", sid).
			Order("id").Find(&rows).Error; err != nil {
			return err
		}
		for _, m := range rows {
			raw := string(m.DisplayMetadata)
			meta, ok := decodeMeta(&raw)
			if !ok {
				continue
			}
			v, has := meta.get(reactionsKey)
			var list []json.RawMessage
			if !has || json.Unmarshal(v, &list) != nil {
				continue
			}
			changed := false
			for i, rr := range list {
				var o orderedObject
				if json.Unmarshal(rr, &o) != nil || o.keys == nil || strField(o, "author") != author || truthyField(o, "seen") {
					continue
				}
				o.set("seen", json.RawMessage("true"))
				list[i] = o.bytes()
				changed = true
				text := ""
				if c := m.DecodedContent(); c != nil {
					if s, ok := c.(string); ok {
						text = s
					}
				}
				out = append(out, UnseenReaction{RowID: m.ID, Role: m.Role, Emoji: strField(o, "emoji"), Text: text})
			}
			if !changed {
				continue
			}
			lb, _ := json.Marshal(list)
			meta.set(reactionsKey, lb)
			enc, err := encodeMeta(meta)
			if err != nil {
				return err
			}
			if err := tx.Exec("UPDATE messages SET display_metadata = ? WHERE id = ?", enc, m.ID).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (r *annotationsRepo) ToolRetry(ctx context.Context, sid, callID string) (ToolRetry, bool, error) {
	const op = "annotations.tool_retry"
	if err := checkID(op, sid); err != nil {
		return ToolRetry{}, false, err
	}
	if err := checkNonEmpty(op, "tool call id", callID); err != nil {
		return ToolRetry{}, false, err
	}
	type res struct {
		t  ToolRetry
		ok bool
	}
	out, err := Read(ctx, r.db, op, func(tx *gorm.DB) (res, error) {
		lineage, err := resumeLineage(tx, sid)
		if err != nil {
			return res{}, err
		}
		var rows []struct {
			ID              int64
			DisplayMetadata *string
		}
		if err := tx.Raw("SELECT id, display_metadata FROM messages WHERE role = 'tool' AND tool_call_id = ? AND session_id IN ? AND "+displayActive+
			" ORDER BY id DESC LIMIT 1", callID, lineage).Scan(&rows).Error; err != nil || len(rows) == 0 {
			return res{}, err
		}
		t := ToolRetry{RowID: rows[0].ID}
		if meta, ok := decodeMeta(rows[0].DisplayMetadata); ok {
			if v, ok := meta.get(toolRetryKey); ok {
				var rt struct {
					Result map[string]any `json:"result"`
				}
				if json.Unmarshal(v, &rt) == nil {
					t.Result = rt.Result
				}
			}
		}
		return res{t, true}, nil
	})
	return out.t, out.ok, err
}

func (r *annotationsRepo) SetToolRetry(ctx context.Context, rowID int64, outcome map[string]any) error {
	const op = "annotations.set_tool_retry"
	if outcome == nil {
		outcome = map[string]any{}
	}
	ob, err := json.Marshal(outcome)
	if err != nil {
		return errs.Wrap(errs.ErrInvalid, op, err, "the outcome cannot be encoded as JSON")
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var rows []struct {
			DisplayMetadata *string
		}
		if err := tx.Raw("SELECT display_metadata FROM messages WHERE id = ?", rowID).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return errs.Errorf(errs.ErrNotFound, op, "message %d does not exist", rowID)
		}
		meta, ok := decodeMeta(rows[0].DisplayMetadata)
		if !ok {
			meta = orderedObject{keys: []string{}, vals: map[string]json.RawMessage{}}
		}
		meta.set(toolRetryKey, json.RawMessage(`{"result":`+string(ob)+`,"announced":false}`))
		enc, err := encodeMeta(meta)
		if err != nil {
			return err
		}
		return tx.Exec("UPDATE messages SET display_metadata = ? WHERE id = ?", enc, rowID).Error
	})
}

func (r *annotationsRepo) TakeUnannouncedToolRetries(ctx context.Context, sid string) ([]AnnouncedRetry, error) {
	const op = "annotations.take_unannounced_tool_retries"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	var out []AnnouncedRetry
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		out = []AnnouncedRetry{}
		lineage, err := resumeLineage(tx, sid)
		if err != nil {
			return err
		}
		var rows []struct {
			ID              int64
			ToolName        *string
			DisplayMetadata *string
		}
		if err := tx.Raw("SELECT id, tool_name, display_metadata FROM messages WHERE session_id IN ? AND "+displayActive+" AND "+
			r.db.jsonMarker("display_metadata", toolRetryKey)+" IS NOT NULL ORDER BY id", lineage).Scan(&rows).Error; err != nil {
			return err
		}
		for _, row := range rows {
			meta, ok := decodeMeta(row.DisplayMetadata)
			if !ok {
				continue
			}
			v, _ := meta.get(toolRetryKey)
			var rt orderedObject
			if json.Unmarshal(v, &rt) != nil || rt.keys == nil || truthyField(rt, "announced") {
				continue
			}
			rv, _ := rt.get("result")
			var result map[string]any
			if json.Unmarshal(rv, &result) != nil || result == nil {
				continue
			}
			rt.set("announced", json.RawMessage("true"))
			meta.set(toolRetryKey, rt.bytes())
			enc, err := encodeMeta(meta)
			if err != nil {
				return err
			}
			if err := tx.Exec("UPDATE messages SET display_metadata = ? WHERE id = ?", enc, row.ID).Error; err != nil {
				return err
			}
			name := "tool"
			if row.ToolName != nil && *row.ToolName != "" {
				name = *row.ToolName
			}
			out = append(out, AnnouncedRetry{Result: result, ToolName: name})
		}
		return nil
	})
	return out, err
}
