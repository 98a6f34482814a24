package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// SessionInput describes a session to create. Empty strings mean "not given".
type SessionInput struct {
	// ID is the session id; empty mints one in Hermes' form.
	ID string
	// Source is the platform: cli, telegram, discord, cron, subagent, ...
	Source          string
	Model           string
	ModelConfig     models.JSON
	SystemPrompt    string
	UserID          string
	ParentSessionID string
	SessionKey      string
	ChatID          string
	ChatType        string
	ThreadID        string
	Cwd             string
	ProfileName     string
	GitRepoRoot     string
	DisplayName     string
	OriginJSON      models.JSON
	// StartedAt defaults to now.
	StartedAt models.Epoch
}

// Sessions is the repository of session rows.
type Sessions interface {
	// Create upserts a session the way Hermes' create_session does: a new
	// row is inserted; an existing row keeps every value an earlier writer
	// set and only gains what it lacked (a placeholder source 'unknown' is
	// replaced). A child inherits cwd, git and profile from its parent, and
	// a compression continuation also its gateway routing. It returns the
	// row as stored, ErrInvalid for bad input, ErrNotFound when the parent
	// does not exist.
	Create(ctx context.Context, s SessionInput) (*models.Session, error)
	// Get returns the session with system_prompt resolved through
	// system_prompts and the _reset_from / _branched_from markers lifted
	// out of model_config, or ErrNotFound.
	Get(ctx context.Context, id string) (*models.Session, error)
	// End stamps ended_at and end_reason if the session is not ended yet
	// (the first reason wins). It reports whether it wrote; ErrNotFound when
	// the session does not exist.
	End(ctx context.Context, id, reason string) (bool, error)
	// Reopen clears ended_at and end_reason (after stamping _reset_from on
	// markerless legacy reset children). ErrNotFound when missing.
	Reopen(ctx context.Context, id string) error
	// SetSystemPrompt stores prompt (deduplicated by hash) as the session's
	// system prompt, removing the previous prompt row when nothing else
	// references it. ErrNotFound when the session is missing.
	SetSystemPrompt(ctx context.Context, id, prompt string) error
	// UpdateTokenCounts applies one usage report (Hermes'
	// update_token_counts): session totals and, for delta reports with
	// usage, the per-model attribution row, in one transaction. A missing
	// session row is created with the given source (else 'unknown'); an
	// existing placeholder source 'unknown' takes a given source, and a
	// NULL model takes the report's model even without usage. Absolute
	// reports set the totals (actual_cost_usd only when given); delta
	// reports add, leaving a NULL token counter NULL as Hermes does.
	// ErrInvalid for bad text, a negative count or a cost that is not a
	// finite amount of at least 0.
	UpdateTokenCounts(ctx context.Context, id string, u TokenUpdate) error
	// List returns sessions newest first (started_at DESC), optionally of
	// one source. Limit 0 means 20.
	List(ctx context.Context, opt ListOptions) ([]models.Session, error)
	// Count returns the number of sessions, optionally of one source.
	Count(ctx context.Context, source string) (int64, error)
}

// ListOptions filters Sessions.List.
type ListOptions struct {
	Source string
	Limit  int
	Offset int
}

// ResetEndReasons are the end reasons that close a conversation generation.
var ResetEndReasons = []string{"session_reset", "session_switch", "idle", "daily", "suspended", "resume_pending_expired"}

func isResetReason(r string) bool {
	for _, x := range ResetEndReasons {
		if x == r {
			return true
		}
	}
	return false
}

type sessionRepo struct{ db *DB }

// NewSessions returns the GORM implementation of Sessions.
func NewSessions(db *DB) Sessions { return &sessionRepo{db} }

// PromptHash returns the system_prompts key of prompt: lowercase hex SHA-256
// of its UTF-8 bytes.
func PromptHash(prompt string) string {
	h := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(h[:])
}

func getSession(tx *gorm.DB, id string) (*models.Session, error) {
	var s models.Session
	err := tx.Where("id = ?", id).Limit(1).Find(&s).Error
	if err != nil {
		return nil, err
	}
	if s.ID == "" {
		return nil, noSession("sessions.get", id)
	}
	return &s, nil
}

func resolvePrompt(tx *gorm.DB, s *models.Session) error {
	if s.SystemPromptHash == nil {
		return nil
	}
	var p []string
	if err := tx.Model(&models.SystemPromptRow{}).Where("hash = ?", *s.SystemPromptHash).Limit(1).Pluck("prompt", &p).Error; err != nil {
		return err
	}
	if len(p) == 1 {
		s.SystemPrompt = &p[0]
	}
	return nil
}

func (r *sessionRepo) Get(ctx context.Context, id string) (*models.Session, error) {
	const op = "sessions.get"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*models.Session, error) {
		s, err := getSession(tx, id)
		if err != nil {
			return nil, err
		}
		s.LiftMarkers()
		return s, resolvePrompt(tx, s)
	})
}

func storePrompt(tx *gorm.DB, prompt string) (string, error) {
	h := PromptHash(prompt)
	err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&models.SystemPromptRow{Hash: h, Prompt: prompt}).Error
	return h, err
}

func (r *sessionRepo) Create(ctx context.Context, in SessionInput) (*models.Session, error) {
	const op = "sessions.create"
	if in.ID == "" {
		in.ID = NewSessionID()
	}
	// The rules of every stored session (rowcheck.go), on the row this
	// input describes.
	probe := models.Session{ID: in.ID, Source: in.Source, Model: &in.Model, ModelConfig: models.JSONText(in.ModelConfig),
		SystemPrompt: &in.SystemPrompt, UserID: &in.UserID, SessionKey: &in.SessionKey, ChatID: &in.ChatID,
		ChatType: &in.ChatType, ThreadID: &in.ThreadID, Cwd: &in.Cwd, ProfileName: &in.ProfileName,
		GitRepoRoot: &in.GitRepoRoot, DisplayName: &in.DisplayName, OriginJSON: models.JSONText(in.OriginJSON),
		ParentSessionID: models.TextOrNil(in.ParentSessionID), StartedAt: in.StartedAt}
	if _, err := checkSessionRow(op, &probe, models.Now()); err != nil {
		return nil, err
	}
	if in.ParentSessionID == in.ID {
		return nil, errs.Errorf(errs.ErrInvalid, op, "a session cannot be its own parent")
	}
	in.StartedAt = probe.StartedAt
	var out *models.Session
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		s, err := createSession(tx, in)
		out = s
		return err
	})
	return out, err
}

func createSession(tx *gorm.DB, in SessionInput) (*models.Session, error) {
	const op = "sessions.create"
	if err := lockSession(tx, in.ID); err != nil {
		return nil, err
	}
	var parent *models.Session
	if in.ParentSessionID != "" {
		p, err := getSession(tx, in.ParentSessionID)
		if err != nil {
			if errors.Is(err, errs.ErrNotFound) {
				return nil, errs.Errorf(errs.ErrNotFound, op, "parent session %q does not exist", in.ParentSessionID)
			}
			return nil, err
		}
		parent = p
	}
	var hash *string
	if in.SystemPrompt != "" {
		h, err := storePrompt(tx, in.SystemPrompt)
		if err != nil {
			return nil, err
		}
		hash = &h
	}
	existing, err := getSession(tx, in.ID)
	if err != nil && !errors.Is(err, errs.ErrNotFound) {
		return nil, err
	}
	if existing == nil {
		return insertSession(tx, in, hash, parent)
	}
	up, err := sessionUpsert(op, existing, in, hash)
	if err != nil {
		return nil, err
	}
	if len(up) > 0 {
		if err := tx.Model(&models.Session{}).Where("id = ?", in.ID).Updates(up).Error; err != nil {
			return nil, err
		}
	}
	s, err := getSession(tx, in.ID)
	if err != nil {
		return nil, err
	}
	if s.ParentSessionID != nil && parent == nil {
		parent, _ = getSession(tx, *s.ParentSessionID)
	}
	if parent != nil {
		before := *s
		inherit(s, parent)
		if err := saveInherited(tx, &before, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// insertSession inserts a new session row (what it inherits from parent
// included) and reads it back.
func insertSession(tx *gorm.DB, in SessionInput, hash *string, parent *models.Session) (*models.Session, error) {
	s := &models.Session{
		ID: in.ID, Source: in.Source, UserID: models.TextOrNil(in.UserID),
		SessionKey: models.TextOrNil(in.SessionKey), ChatID: models.TextOrNil(in.ChatID),
		ChatType: models.TextOrNil(in.ChatType), ThreadID: models.TextOrNil(in.ThreadID),
		Model: models.TextOrNil(in.Model), ModelConfig: models.JSONText(in.ModelConfig),
		SystemPromptHash: hash, ParentSessionID: models.TextOrNil(in.ParentSessionID),
		Cwd: models.TextOrNil(in.Cwd), ProfileName: models.TextOrNil(in.ProfileName),
		GitRepoRoot: models.TextOrNil(in.GitRepoRoot), OriginJSON: models.JSONText(in.OriginJSON),
		DisplayName: models.TextOrNil(in.DisplayName), StartedAt: in.StartedAt,
	}
	if parent != nil {
		inherit(s, parent)
	}
	if err := tx.Create(s).Error; err != nil {
		return nil, err
	}
	return getSession(tx, in.ID)
}

// sessionUpsert returns the columns a create of an existing session sets:
// what an earlier writer left empty and in gives (what it set is kept).
func sessionUpsert(op string, existing *models.Session, in SessionInput, hash *string) (map[string]any, error) {
	up := map[string]any{}
	fill := func(col string, cur *string, v string) {
		if cur == nil && v != "" {
			up[col] = v
		}
	}
	if existing.Source == "unknown" && in.Source != "unknown" {
		up["source"] = in.Source
	}
	fill("model", existing.Model, in.Model)
	if existing.ModelConfig.IsNull() && !in.ModelConfig.IsNull() {
		b, err := pyjson.Canonical(in.ModelConfig)
		if err != nil {
			return nil, errs.Wrap(errs.ErrInvalid, op, err, "model_config is not valid JSON")
		}
		up["model_config"] = string(b)
	}
	if existing.SystemPromptHash == nil && hash != nil {
		up["system_prompt_hash"] = *hash
		up["system_prompt"] = nil
	}
	for col, pair := range map[string]struct {
		cur *string
		v   string
	}{
		"session_key": {existing.SessionKey, in.SessionKey}, "chat_id": {existing.ChatID, in.ChatID},
		"chat_type": {existing.ChatType, in.ChatType}, "thread_id": {existing.ThreadID, in.ThreadID},
		"parent_session_id": {existing.ParentSessionID, in.ParentSessionID}, "cwd": {existing.Cwd, in.Cwd},
		"profile_name": {existing.ProfileName, in.ProfileName}, "git_repo_root": {existing.GitRepoRoot, in.GitRepoRoot},
		"display_name": {existing.DisplayName, in.DisplayName},
	} {
		fill(col, pair.cur, pair.v)
	}
	if existing.OriginJSON.IsNull() && !in.OriginJSON.IsNull() {
		b, err := pyjson.Canonical(in.OriginJSON)
		if err != nil {
			return nil, errs.Wrap(errs.ErrInvalid, op, err, "origin_json is not valid JSON")
		}
		up["origin_json"] = string(b)
	}
	return up, nil
}

// agentNamespace returns the "agent:<ns>:" prefix of a gateway session key.
func agentNamespace(key string) string {
	if !strings.HasPrefix(key, "agent:") {
		return ""
	}
	rest := key[len("agent:"):]
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		return key[:len("agent:")+i+1]
	}
	return ""
}

// inherit NULL-fills a child's workspace and profile from its parent, and,
// for a compression continuation, its gateway routing.
func inherit(child, parent *models.Session) {
	fillPtr := func(dst **string, src *string) {
		if *dst == nil && src != nil {
			v := *src
			*dst = &v
		}
	}
	fillPtr(&child.Cwd, parent.Cwd)
	fillPtr(&child.GitRepoRoot, parent.GitRepoRoot)
	fillPtr(&child.GitBranch, parent.GitBranch)
	if child.ProfileName == nil && parent.ProfileName != nil {
		if parent.SessionKey == nil || child.SessionKey == nil || agentNamespace(*parent.SessionKey) == agentNamespace(*child.SessionKey) {
			fillPtr(&child.ProfileName, parent.ProfileName)
		}
	}
	if parent.EndReason != nil && *parent.EndReason == "compression" {
		fillPtr(&child.UserID, parent.UserID)
		fillPtr(&child.SessionKey, parent.SessionKey)
		fillPtr(&child.ChatID, parent.ChatID)
		fillPtr(&child.ChatType, parent.ChatType)
		fillPtr(&child.ThreadID, parent.ThreadID)
		fillPtr(&child.DisplayName, parent.DisplayName)
		if child.OriginJSON.IsNull() && !parent.OriginJSON.IsNull() {
			child.OriginJSON = append(models.JSONText(nil), parent.OriginJSON...)
		}
	}
}

func saveInherited(tx *gorm.DB, before, after *models.Session) error {
	up := map[string]any{}
	cmp := func(col string, b, a *string) {
		if b == nil && a != nil {
			up[col] = *a
		}
	}
	cmp("cwd", before.Cwd, after.Cwd)
	cmp("git_repo_root", before.GitRepoRoot, after.GitRepoRoot)
	cmp("git_branch", before.GitBranch, after.GitBranch)
	cmp("profile_name", before.ProfileName, after.ProfileName)
	cmp("user_id", before.UserID, after.UserID)
	cmp("session_key", before.SessionKey, after.SessionKey)
	cmp("chat_id", before.ChatID, after.ChatID)
	cmp("chat_type", before.ChatType, after.ChatType)
	cmp("thread_id", before.ThreadID, after.ThreadID)
	cmp("display_name", before.DisplayName, after.DisplayName)
	if before.OriginJSON.IsNull() && !after.OriginJSON.IsNull() {
		up["origin_json"] = string(after.OriginJSON)
	}
	if len(up) == 0 {
		return nil
	}
	return tx.Model(&models.Session{}).Where("id = ?", after.ID).Updates(up).Error
}

func (r *sessionRepo) End(ctx context.Context, id, reason string) (bool, error) {
	const op = "sessions.end"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	if err := checkName(op, "end_reason", reason); err != nil {
		return false, err
	}
	var wrote bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			return err
		}
		res := tx.Model(&models.Session{}).Where("id = ? AND ended_at IS NULL", id).
			Updates(map[string]any{"ended_at": models.Now(), "end_reason": reason})
		if res.Error != nil {
			return res.Error
		}
		wrote = res.RowsAffected == 1
		if wrote && isResetReason(reason) && strings.TrimSpace(s.Source) != "" && s.SessionKey != nil && strings.TrimSpace(*s.SessionKey) != "" {
			return tx.Exec(`INSERT INTO conversation_generations (source, session_key, generation) VALUES (?, ?, 1)
				ON CONFLICT(source, session_key) DO UPDATE SET generation = conversation_generations.generation + 1`,
				strings.TrimSpace(s.Source), strings.TrimSpace(*s.SessionKey)).Error
		}
		return nil
	})
	return wrote, err
}

func (r *sessionRepo) Reopen(ctx context.Context, id string) error {
	const op = "sessions.reopen"
	if err := checkID(op, id); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		p, err := getSession(tx, id)
		if err != nil {
			return err
		}
		if err := stampLegacyResetChildren(tx, p); err != nil {
			return err
		}
		return tx.Model(&models.Session{}).Where("id = ?", id).
			Updates(map[string]any{"ended_at": nil, "end_reason": nil}).Error
	})
}

// stampLegacyResetChildren writes $._reset_from on children of p that are
// legacy reset children (p ended with a reset reason, same non-empty
// session_key) and carry no lineage marker, so reopening p keeps them
// classified.
func stampLegacyResetChildren(tx *gorm.DB, p *models.Session) error {
	if p.EndReason == nil || !isResetReason(*p.EndReason) || p.SessionKey == nil || *p.SessionKey == "" {
		return nil
	}
	var kids []models.Session
	if err := tx.Where("parent_session_id = ? AND COALESCE(source, '') <> 'tool' AND started_at >= ? AND session_key = ?",
		p.ID, p.StartedAt, *p.SessionKey).Find(&kids).Error; err != nil {
		return err
	}
	for _, k := range kids {
		skip := false
		for _, m := range []string{"_reset_from", "_branched_from", "_delegate_from"} {
			if _, ok := models.JSONGetString(k.ModelConfig, m); ok {
				skip = true
			}
		}
		if skip {
			continue
		}
		mc, err := models.JSONSetKey(k.ModelConfig, "_reset_from", p.ID)
		if err != nil {
			return err
		}
		if err := tx.Model(&models.Session{}).Where("id = ?", k.ID).Update("model_config", string(mc)).Error; err != nil {
			return err
		}
	}
	return nil
}

func (r *sessionRepo) SetSystemPrompt(ctx context.Context, id, prompt string) error {
	const op = "sessions.set_system_prompt"
	if err := checkID(op, id); err != nil {
		return err
	}
	if err := checkText(op, "system_prompt", prompt); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			return err
		}
		var newHash any
		if prompt != "" {
			h, err := storePrompt(tx, prompt)
			if err != nil {
				return err
			}
			newHash = h
		}
		if err := tx.Model(&models.Session{}).Where("id = ?", id).
			Updates(map[string]any{"system_prompt_hash": newHash, "system_prompt": nil}).Error; err != nil {
			return err
		}
		if s.SystemPromptHash != nil && (newHash == nil || *s.SystemPromptHash != newHash.(string)) {
			return deletePromptIfUnused(tx, *s.SystemPromptHash)
		}
		return nil
	})
}

// deletePromptIfUnused removes the prompt row of hash unless a session
// references it by system_prompt_hash or tool_names.
func deletePromptIfUnused(tx *gorm.DB, hash string) error {
	return tx.Exec(`DELETE FROM system_prompts WHERE hash = ?
		AND NOT EXISTS (SELECT 1 FROM sessions WHERE system_prompt_hash = ?)
		AND NOT EXISTS (SELECT 1 FROM sessions WHERE tool_names = ?)`, hash, hash, hash).Error
}

func (r *sessionRepo) List(ctx context.Context, opt ListOptions) ([]models.Session, error) {
	const op = "sessions.list"
	if opt.Limit <= 0 {
		opt.Limit = 20
	}
	if opt.Offset < 0 {
		opt.Offset = 0
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.Session, error) {
		q := tx.Model(&models.Session{})
		if opt.Source != "" {
			q = q.Where("source = ?", opt.Source)
		}
		var out []models.Session
		err := q.Order("started_at DESC").Order("id DESC").Limit(opt.Limit).Offset(opt.Offset).Find(&out).Error
		return out, err
	})
}

func (r *sessionRepo) Count(ctx context.Context, source string) (int64, error) {
	return Read(ctx, r.db, "sessions.count", func(tx *gorm.DB) (int64, error) {
		q := tx.Model(&models.Session{})
		if source != "" {
			q = q.Where("source = ?", source)
		}
		var n int64
		err := q.Count(&n).Error
		return n, err
	})
}
