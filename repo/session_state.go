package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/querytext"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// Per-session state Hermes' SessionSessionsMixin keeps beside the lifecycle
// (hermes_state_sessions.py): the model and its config, the workspace, the
// tools[] pin, the activity labels, the read watermark, reset promotion,
// recoverable un-archiving, bulk archiving and the picker's status.

// Activity description budget and provenances (agent/session_activity.py).
const activityDescriptionMax = 120

var activityProvenances = map[string]bool{
	"unknown": true, "agent.compression": true, "agent.compression_timeout": true,
	"agent.compression_cooldown": true, "agent.compression_turnhold": true, "agent.session_turn_lease": true,
}

// RecoverableEndReasons are the accidental end reasons recovery treats as
// resumable.
var RecoverableEndReasons = []string{"agent_close", "ws_orphan_reap", "superseded_by_resume", "startup_orphan_reap"}

const recoverableReasonsSQL = "'agent_close', 'ws_orphan_reap', 'superseded_by_resume', 'startup_orphan_reap'"

// Session statuses of SessionState.LifecycleStatuses.
const (
	StatusComplete    = "complete"
	StatusInterrupted = "interrupted"
	StatusError       = "error"
	StatusEmpty       = "empty"
)

// ArchiveOptions selects what SessionState.ArchiveSessions archives (the
// filters of Hermes' archive_sessions): ended, unarchived, unpinned
// sessions (pinned chains included) that are not compression ancestors.
type ArchiveOptions struct {
	// OlderThan keeps sessions whose last activity is older than this
	// (0 = any age).
	OlderThan time.Duration
	// Source keeps one source.
	Source string
	// Now is the reference time (zero = time.Now()).
	Now time.Time
}

// SessionState updates and reads per-session state. Every method returns
// ErrInvalid for a bad id or text; writers that address one session return
// ErrNotFound when it does not exist unless they say otherwise.
type SessionState interface {
	// Ensure upserts a session like Sessions.Create, with source
	// "unknown" when none is given (Hermes' ensure_session).
	Ensure(ctx context.Context, s SessionInput) (*models.Session, error)
	// UpdateModel records a mid-session /model switch: model is set, the
	// model (and provider when given) merged into model_config with any
	// browser runtime lock removed, and the stored system prompt dropped
	// (so stale footers are rebuilt); unreferenced prompts are removed.
	UpdateModel(ctx context.Context, id, model, provider string) error
	// UpdateMeta replaces model_config (nil stores NULL) and sets model
	// when one is given.
	UpdateMeta(ctx context.Context, id string, modelConfig models.JSON, model string) error
	// PatchModelConfig merges patch into model_config in one transaction
	// (a nil value removes the key; stored keys keep their order, new ones
	// are added in sorted order). An empty patch writes nothing.
	PatchModelConfig(ctx context.Context, id string, patch map[string]any) error
	// ModelConfigValue returns one key of model_config (parsed) and
	// whether it is there; a missing session or unparsable config has no
	// keys.
	ModelConfigValue(ctx context.Context, id, key string) (any, bool, error)
	// UpdateCwd records the authoritative cwd and claims a new git
	// metadata generation, which it returns. A changed cwd (or
	// replaceGitMeta) replaces git_branch and git_repo_root (empty = NULL);
	// the same cwd only takes the non-empty values. ErrInvalid for an
	// empty cwd.
	UpdateCwd(ctx context.Context, id, cwd, gitBranch, gitRepoRoot string, replaceGitMeta bool) (int64, error)
	// PublishGitMetadata writes the non-empty git values only while the
	// session's cwd and generation are still those given (an async probe
	// cannot overwrite a newer claim); it reports whether it wrote.
	PublishGitMetadata(ctx context.Context, id, cwd string, generation int64, gitBranch, gitRepoRoot string) (bool, error)
	// UpdateToolNames pins the resolved tools[] order (nil clears it),
	// stored as Python's json.dumps of the list.
	UpdateToolNames(ctx context.Context, id string, names []string) error
	// TouchActivity stamps last_activity_at (at, or now when zero) with a
	// description (trimmed, at most 120 characters) and a provenance
	// ("unknown" unless one of Hermes' known ones), never moving the stamp
	// backwards. It reports whether it wrote (false for a missing session
	// too). It uses the short activity write budget.
	TouchActivity(ctx context.Context, id string, at float64, description, provenance string) (bool, error)
	// ClearActivityLabels empties the description and resets the
	// provenance after a turn, keeping last_activity_at; nothing is written
	// when they are already clear (or the session is missing).
	ClearActivityLabels(ctx context.Context, id string) error
	// PromoteToReset ends a live session, or re-ends one closed for a
	// recoverable reason, with reason (default "session_reset"), advancing
	// the peer's conversation generation for a reset reason. It reports
	// whether it wrote.
	PromoteToReset(ctx context.Context, id, reason string) (bool, error)
	// SetRead marks the compression lineage read (last_read_at = now) or
	// unread (0); it reports whether a row changed.
	SetRead(ctx context.Context, id string, read bool) (bool, error)
	// UnarchiveRecoverable un-archives a session whose lineage tip was
	// archived by a recoverable accident (agent_close, ws_orphan_reap, ...),
	// clearing the tip's end stamp; deliberate archives are left alone. It
	// reports whether it un-archived (false for a missing session).
	UnarchiveRecoverable(ctx context.Context, id string) (bool, error)
	// ArchiveSessions archives, lineage by lineage, the sessions opt
	// selects and returns how many matched.
	ArchiveSessions(ctx context.Context, opt ArchiveOptions) (int, error)
	// CountAtLeast reports whether at least n sessions exist.
	CountAtLeast(ctx context.Context, n int) (bool, error)
	// LifecycleStatuses classifies each session by its last message row:
	// "error" (an error finish reason), "interrupted" (ends on a user or
	// tool row, or an assistant row with tool calls), "complete", or
	// "empty" without messages (missing ids included).
	LifecycleStatuses(ctx context.Context, ids []string) (map[string]string, error)
	// ConversationBoundary returns how many conversation boundaries
	// (reset end reasons) the peer (source, session_key) has crossed, and
	// false when it never crossed one (latest_conversation_boundary).
	ConversationBoundary(ctx context.Context, source, sessionKey string) (int64, bool, error)
}

type sessionStateRepo struct{ db *DB }

// NewSessionState returns the GORM implementation of SessionState.
func NewSessionState(db *DB) SessionState { return &sessionStateRepo{db} }

func (r *sessionStateRepo) Ensure(ctx context.Context, in SessionInput) (*models.Session, error) {
	if in.Source == "" {
		in.Source = "unknown"
	}
	return NewSessions(r.db).Create(ctx, in)
}

func (r *sessionStateRepo) UpdateModel(ctx context.Context, id, model, provider string) error {
	const op = "session_state.update_model"
	if err := checkID(op, id); err != nil {
		return err
	}
	for f, v := range map[string]string{"model": model, "provider": provider} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	patch := map[string]any{"browser_model_lock": nil}
	if model != "" {
		patch["model"] = model
	}
	if provider != "" {
		patch["provider"] = provider
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			return err
		}
		merged, err := mergeModelConfig(s.ModelConfig, patch, "browser_model_lock", "model", "provider")
		if err != nil {
			return err
		}
		if err := tx.Exec("UPDATE sessions SET model = ?, model_config = ?, system_prompt = NULL, system_prompt_hash = NULL WHERE id = ?",
			models.TextOrNil(model), merged, id).Error; err != nil {
			return err
		}
		return deleteUnreferencedPrompts(tx)
	})
}

func (r *sessionStateRepo) UpdateMeta(ctx context.Context, id string, mc models.JSON, model string) error {
	const op = "session_state.update_meta"
	if err := checkID(op, id); err != nil {
		return err
	}
	if err := checkText(op, "model", model); err != nil {
		return err
	}
	var cfg any
	if len(mc) > 0 {
		if err := checkJSON(op, "model_config", mc); err != nil {
			return err
		}
		b, err := pyjson.Canonical(mc)
		if err != nil {
			return errs.Wrap(errs.ErrInvalid, op, err, "model_config is not valid JSON")
		}
		cfg = string(b)
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET model_config = ?, model = COALESCE(?, model) WHERE id = ?", cfg, models.TextOrNil(model), id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return noSession(op, id)
		}
		return nil
	})
}

func (r *sessionStateRepo) PatchModelConfig(ctx context.Context, id string, patch map[string]any) error {
	const op = "session_state.patch_model_config"
	if err := checkID(op, id); err != nil {
		return err
	}
	if len(patch) == 0 {
		return nil
	}
	if _, err := json.Marshal(patch); err != nil {
		return errs.Wrap(errs.ErrInvalid, op, err, "the patch cannot be encoded as JSON")
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			return err
		}
		merged, err := mergeModelConfig(s.ModelConfig, patch)
		if err != nil {
			return err
		}
		return tx.Exec("UPDATE sessions SET model_config = ? WHERE id = ?", merged, id).Error
	})
}

func (r *sessionStateRepo) ModelConfigValue(ctx context.Context, id, key string) (any, bool, error) {
	const op = "session_state.model_config_value"
	if err := checkID(op, id); err != nil {
		return nil, false, err
	}
	if err := checkText(op, "key", key); err != nil {
		return nil, false, err
	}
	type res struct {
		v  any
		ok bool
	}
	out, err := Read(ctx, r.db, op, func(tx *gorm.DB) (res, error) {
		var rows []struct{ ModelConfig *string }
		if err := tx.Model(&models.Session{}).Select("model_config").Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
			return res{}, err
		}
		if len(rows) == 0 || rows[0].ModelConfig == nil {
			return res{}, nil
		}
		dec := json.NewDecoder(strings.NewReader(*rows[0].ModelConfig))
		dec.UseNumber()
		var cfg map[string]any
		if dec.Decode(&cfg) != nil {
			return res{}, nil
		}
		v, ok := cfg[key]
		return res{v, ok}, nil
	})
	return out.v, out.ok, err
}

func (r *sessionStateRepo) UpdateCwd(ctx context.Context, id, cwd, branch, root string, replace bool) (int64, error) {
	const op = "session_state.update_cwd"
	if err := checkID(op, id); err != nil {
		return 0, err
	}
	if cwd == "" {
		return 0, errs.Errorf(errs.ErrInvalid, op, "cwd is empty")
	}
	for f, v := range map[string]string{"cwd": cwd, "git_branch": branch, "git_repo_root": root} {
		if err := checkText(op, f, v); err != nil {
			return 0, err
		}
	}
	branch, root = strings.TrimSpace(branch), strings.TrimSpace(root)
	var gen int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			return err
		}
		up := map[string]any{"cwd": cwd, "git_metadata_generation": gorm.Expr("COALESCE(git_metadata_generation, 0) + 1")}
		if ptr.Deref(s.Cwd) != cwd || s.Cwd == nil || replace {
			up["git_branch"] = models.TextOrNil(branch)
			up["git_repo_root"] = models.TextOrNil(root)
		} else {
			if branch != "" {
				up["git_branch"] = branch
			}
			if root != "" {
				up["git_repo_root"] = root
			}
		}
		if err := tx.Model(&models.Session{}).Where("id = ?", id).Updates(up).Error; err != nil {
			return err
		}
		return tx.Model(&models.Session{}).Select("git_metadata_generation").Where("id = ?", id).Scan(&gen).Error
	})
	return gen, err
}

func (r *sessionStateRepo) PublishGitMetadata(ctx context.Context, id, cwd string, gen int64, branch, root string) (bool, error) {
	const op = "session_state.publish_git_metadata"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	branch, root = strings.TrimSpace(branch), strings.TrimSpace(root)
	if cwd == "" || gen < 1 || (branch == "" && root == "") {
		return false, nil
	}
	for f, v := range map[string]string{"cwd": cwd, "git_branch": branch, "git_repo_root": root} {
		if err := checkText(op, f, v); err != nil {
			return false, err
		}
	}
	up := map[string]any{}
	if branch != "" {
		up["git_branch"] = branch
	}
	if root != "" {
		up["git_repo_root"] = root
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Model(&models.Session{}).Where("id = ? AND cwd = ? AND git_metadata_generation = ?", id, cwd, gen).Updates(up)
		n = res.RowsAffected
		return res.Error
	})
	return n == 1, err
}

func (r *sessionStateRepo) UpdateToolNames(ctx context.Context, id string, names []string) error {
	const op = "session_state.update_tool_names"
	if err := checkID(op, id); err != nil {
		return err
	}
	var payload any
	if names != nil {
		for _, n := range names {
			if err := checkText(op, "tool name", n); err != nil {
				return err
			}
		}
		b, err := pyjson.Dumps(names)
		if err != nil {
			return errs.Wrap(errs.ErrInvalid, op, err, "tool names cannot be encoded")
		}
		payload = string(b)
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET tool_names = ? WHERE id = ?", payload, id)
		if res.Error == nil && res.RowsAffected == 0 {
			return noSession(op, id)
		}
		return res.Error
	})
}

// boundDescription trims an activity description to the shared budget.
func boundDescription(s string) string {
	s = querytext.Strip(s)
	if utf8.RuneCountInString(s) <= activityDescriptionMax {
		return s
	}
	return string([]rune(s)[:activityDescriptionMax-1]) + "…"
}

func (r *sessionStateRepo) TouchActivity(ctx context.Context, id string, at float64, description, provenance string) (bool, error) {
	const op = "session_state.touch_activity"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	for f, v := range map[string]string{"description": description, "provenance": provenance} {
		if err := checkText(op, f, v); err != nil {
			return false, err
		}
	}
	if at == 0 {
		at = float64(models.Now())
	}
	prov := strings.TrimSpace(provenance)
	if !activityProvenances[prov] {
		prov = "unknown"
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Activity, op, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE sessions SET last_activity_at = ?, last_activity_description = ?, last_activity_provenance = ?
			WHERE id = ? AND (last_activity_at IS NULL OR last_activity_at < ?)`, at, boundDescription(description), prov, id, at)
		n = res.RowsAffected
		return res.Error
	})
	return n == 1, err
}

func (r *sessionStateRepo) ClearActivityLabels(ctx context.Context, id string) error {
	const op = "session_state.clear_activity_labels"
	if err := checkID(op, id); err != nil {
		return err
	}
	clear, err := Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		var rows []struct{ LastActivityDescription, LastActivityProvenance *string }
		if err := tx.Model(&models.Session{}).Select("last_activity_description, last_activity_provenance").
			Where("id = ?", id).Limit(1).Find(&rows).Error; err != nil {
			return false, err
		}
		if len(rows) == 0 {
			return true, nil
		}
		p := ptr.Deref(rows[0].LastActivityProvenance)
		return ptr.Deref(rows[0].LastActivityDescription) == "" && (p == "" || p == "unknown"), nil
	})
	if err != nil || clear {
		return err
	}
	return r.db.Write(ctx, sqlitex.Activity, op, func(tx *gorm.DB) error {
		return tx.Exec("UPDATE sessions SET last_activity_description = '', last_activity_provenance = 'unknown' WHERE id = ?", id).Error
	})
}

// bumpGeneration advances the peer's conversation generation for a reset
// boundary written to session s.
func bumpGeneration(tx *gorm.DB, s *models.Session, reason string) error {
	if !isResetReason(reason) || strings.TrimSpace(s.Source) == "" || strings.TrimSpace(ptr.Deref(s.SessionKey)) == "" {
		return nil
	}
	return tx.Exec(`INSERT INTO conversation_generations (source, session_key, generation) VALUES (?, ?, 1)
		ON CONFLICT(source, session_key) DO UPDATE SET generation = conversation_generations.generation + 1`,
		strings.TrimSpace(s.Source), strings.TrimSpace(*s.SessionKey)).Error
}

func (r *sessionStateRepo) PromoteToReset(ctx context.Context, id, reason string) (bool, error) {
	const op = "session_state.promote_to_reset"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	if reason == "" {
		reason = "session_reset"
	}
	if err := checkName(op, "end_reason", reason); err != nil {
		return false, err
	}
	var wrote bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		wrote = false
		if err := lockSession(tx, id); err != nil {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		res := tx.Exec("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND (ended_at IS NULL OR end_reason IN ("+recoverableReasonsSQL+"))",
			models.Now(), reason, id)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		wrote = true
		return bumpGeneration(tx, s, reason)
	})
	return wrote, err
}

func (r *sessionStateRepo) SetRead(ctx context.Context, id string, read bool) (bool, error) {
	const op = "session_state.set_read"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	v := 0.0
	if read {
		v = float64(models.Now())
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var err error
		n, err = (&lineageRepo{r.db}).setLineageColumn(tx, "last_read_at", id, v)
		return err
	})
	return n > 0, err
}

func isRecoverable(reason string) bool {
	for _, x := range RecoverableEndReasons {
		if x == reason {
			return true
		}
	}
	return false
}

func (r *sessionStateRepo) UnarchiveRecoverable(ctx context.Context, id string) (bool, error) {
	const op = "session_state.unarchive_recoverable"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	var done bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		done = false
		s, err := getSession(tx, id)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		if s.Archived == 0 {
			return nil
		}
		tipID, err := compressionTip(tx, r.db, id)
		if err != nil {
			return err
		}
		tip := s
		if tipID != id {
			if t, err := getSession(tx, tipID); err == nil {
				tip = t
			}
		}
		if !isRecoverable(ptr.Deref(tip.EndReason)) {
			return nil
		}
		n, err := (&lineageRepo{r.db}).setLineageColumn(tx, "archived", id, 0)
		if err != nil || n == 0 {
			return err
		}
		done = true
		return tx.Exec("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", tip.ID).Error
	})
	return done, err
}

func (r *sessionStateRepo) ArchiveSessions(ctx context.Context, opt ArchiveOptions) (int, error) {
	const op = "session_state.archive_sessions"
	if opt.OlderThan < 0 {
		return 0, errs.Errorf(errs.ErrInvalid, op, "older-than must not be negative")
	}
	if opt.Source != "" {
		if err := checkName(op, "source", opt.Source); err != nil {
			return 0, err
		}
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	edge := r.db.continuationEdge("p", "c")
	// Compression ancestors are archived with their tip, never on their own
	// age: an old compressed-away root would otherwise hide its open,
	// recently active tip (Hermes' lineage_tips_only).
	where := []string{"s.ended_at IS NOT NULL", "COALESCE(s.end_reason, '') <> 'compression'"}
	var args []any
	if opt.OlderThan > 0 {
		cutoff := float64(models.EpochOf(now.Add(-opt.OlderThan)))
		where = append(where, lastActiveSQL("s")+" < ?", "(COALESCE(s.end_reason, '') <> 'startup_orphan_reap' OR s.ended_at < ?)")
		args = append(args, cutoff, cutoff)
	}
	if opt.Source != "" {
		where = append(where, "s.source = ?")
		args = append(args, opt.Source)
	}
	where = append(where, "s.archived = 0", "COALESCE(s.pinned, 0) = 0", fmt.Sprintf(`s.id NOT IN (WITH RECURSIVE tail(id, depth) AS (
			SELECT c.id, 1 FROM sessions c JOIN sessions p ON %[1]s WHERE COALESCE(p.pinned, 0) = 1
			UNION
			SELECT c.id, tail.depth + 1 FROM tail JOIN sessions p ON p.id = tail.id JOIN sessions c ON %[1]s
			WHERE tail.depth < %[2]d
		) SELECT id FROM tail)`, edge, maxLineageDepth))
	q := "SELECT s.id FROM sessions s WHERE " + strings.Join(where, " AND ") + " ORDER BY s.started_at, s.id"
	var n int
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Raw(q, args...).Scan(&ids).Error; err != nil {
			return err
		}
		lin := &lineageRepo{r.db}
		for _, id := range ids {
			if _, err := lin.setLineageColumn(tx, "archived", id, 1); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

func (r *sessionStateRepo) CountAtLeast(ctx context.Context, n int) (bool, error) {
	if n <= 0 {
		return true, nil
	}
	return Read(ctx, r.db, "session_state.count_at_least", func(tx *gorm.DB) (bool, error) {
		var got int64
		err := tx.Raw(fmt.Sprintf("SELECT COUNT(*) FROM (SELECT 1 FROM sessions LIMIT %d) x", n)).Scan(&got).Error
		return got >= int64(n), err
	})
}

// classifyStatus is Hermes' classify_session_status.
func classifyStatus(role string, hasToolCalls bool, finish string) string {
	switch strings.ToLower(strings.TrimSpace(finish)) {
	case "error", "agent_error", "content_filter":
		return StatusError
	}
	r := strings.ToLower(strings.TrimSpace(role))
	if r == "user" || r == "tool" || (r == "assistant" && hasToolCalls) {
		return StatusInterrupted
	}
	return StatusComplete
}

func (r *sessionStateRepo) LifecycleStatuses(ctx context.Context, ids []string) (map[string]string, error) {
	const op = "session_state.lifecycle_statuses"
	var keep []string
	for _, id := range ids {
		if id == "" {
			continue
		}
		if err := checkID(op, id); err != nil {
			return nil, err
		}
		keep = append(keep, id)
	}
	out := map[string]string{}
	for _, id := range keep {
		out[id] = StatusEmpty
	}
	if len(keep) == 0 {
		return out, nil
	}
	_, err := Read(ctx, r.db, op, func(tx *gorm.DB) (struct{}, error) {
		for _, ch := range chunks(keep) {
			var rows []struct {
				SessionID    string
				Role         string
				HasToolCalls bool
				FinishReason *string
			}
			if err := tx.Raw(`SELECT m.session_id, m.role, m.tool_calls IS NOT NULL AS has_tool_calls, m.finish_reason
				FROM messages m JOIN (SELECT session_id, MAX(id) AS max_id FROM messages WHERE session_id IN (`+placeholders(len(ch))+`)
				GROUP BY session_id) latest ON m.id = latest.max_id`, anySlice(ch)...).Scan(&rows).Error; err != nil {
				return struct{}{}, err
			}
			for _, row := range rows {
				out[row.SessionID] = classifyStatus(row.Role, row.HasToolCalls, ptr.Deref(row.FinishReason))
			}
		}
		return struct{}{}, nil
	})
	return out, err
}

func (r *sessionStateRepo) ConversationBoundary(ctx context.Context, source, key string) (int64, bool, error) {
	const op = "session_state.conversation_boundary"
	if source == "" || key == "" {
		return 0, false, nil
	}
	for f, v := range map[string]string{"source": source, "session_key": key} {
		if err := checkText(op, f, v); err != nil {
			return 0, false, err
		}
	}
	g, err := Read(ctx, r.db, op, func(tx *gorm.DB) (int64, error) {
		var gens []int64
		err := tx.Raw("SELECT generation FROM conversation_generations WHERE source = ? AND session_key = ?", source, key).Scan(&gens).Error
		if err != nil || len(gens) == 0 {
			return 0, err
		}
		return gens[0], nil
	})
	return g, g > 0, err
}
