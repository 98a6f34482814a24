package repo

import (
	"context"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/models"
)

// skillScaffoldPrefix opens every /skill-expanded user turn (Hermes'
// SKILL_SCAFFOLD_SQL_LIKE without its %).
const skillScaffoldPrefix = `[IMPORTANT: The user has invoked the "`

type viewsRepo struct{ db *DB }

// NewViews returns the GORM implementation of Views.
func NewViews(db *DB) Views { return &viewsRepo{db} }

func (r *viewsRepo) Anchored(ctx context.Context, sid string, anchor int64, opt AnchoredOptions) (AnchoredView, error) {
	const op = "views.anchored"
	if err := checkID(op, sid); err != nil {
		return AnchoredView{}, err
	}
	window, bookend := opt.Window, opt.Bookend
	if window == 0 {
		window = 5
	}
	if bookend == 0 {
		bookend = 3
	}
	window, bookend = max(window, 0), max(bookend, 0)
	roles := opt.KeepRoles
	if roles == nil {
		roles = []string{"user", "assistant"}
	}
	empty := AnchoredView{Window: []WindowMessage{}, BookendStart: []WindowMessage{}, BookendEnd: []WindowMessage{}}
	around, err := NewTranscript(r.db).Around(ctx, sid, anchor, window)
	if err != nil {
		return empty, err
	}
	if len(around.Window) == 0 {
		return empty, nil
	}
	out := empty
	out.MessagesBefore, out.MessagesAfter = around.MessagesBefore, around.MessagesAfter
	for _, m := range around.Window {
		if opt.AllRoles || m.ID == anchor || slices.Contains(roles, m.Role) {
			out.Window = append(out.Window, m)
		}
	}
	if bookend == 0 {
		return out, nil
	}
	first, last := around.Window[0].ID, around.Window[len(around.Window)-1].ID
	type ends struct{ start, end []models.Message }
	e, err := Read(ctx, r.db, op, func(tx *gorm.DB) (ends, error) {
		q := func(cmp string, boundary int64, order string) ([]models.Message, error) {
			var rows []models.Message
			db := tx.Where("session_id = ? AND id "+cmp+" ? AND LENGTH(content) > 0", sid, boundary)
			if !opt.AllRoles {
				db = db.Where("role IN ?", roles)
			}
			err := db.Order("id " + order).Limit(bookend).Find(&rows).Error
			return rows, err
		}
		s, err := q("<", first, "ASC")
		if err != nil {
			return ends{}, err
		}
		en, err := q(">", last, "DESC")
		slices.Reverse(en)
		return ends{s, en}, err
	})
	if err != nil {
		return empty, err
	}
	for _, m := range e.start {
		out.BookendStart = append(out.BookendStart, WindowMessage{m})
	}
	for _, m := range e.end {
		out.BookendEnd = append(out.BookendEnd, WindowMessage{m})
	}
	return out, nil
}

func (r *viewsRepo) AncestorDisplayPrefix(ctx context.Context, sid string) ([]ConversationItem, error) {
	const op = "views.ancestor_display_prefix"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	type res struct {
		rows []models.Message
		ids  []string
	}
	got, err := Read(ctx, r.db, op, func(tx *gorm.DB) (res, error) {
		ids, err := resumeLineage(tx, sid)
		if err != nil || len(ids) <= 1 {
			return res{ids: ids}, err
		}
		rows, err := lineageRows(tx, ids, false, true)
		return res{rows, ids}, err
	})
	if err != nil {
		return nil, err
	}
	out := []ConversationItem{}
	if len(got.ids) <= 1 {
		return out, nil
	}
	ancestor := map[int64]bool{}
	for _, m := range got.rows {
		if m.SessionID != sid {
			ancestor[m.ID] = true
		}
	}
	if len(ancestor) == 0 {
		return out, nil
	}
	for _, it := range ToConversation(got.rows, ConversationOptions{IncludeAncestors: true, IncludeRowIDs: true}) {
		if ancestor[it.RowID] {
			it.RowID = 0
			out = append(out, it)
		}
	}
	return out, nil
}

func (r *viewsRepo) PRURLMessages(ctx context.Context, ids []string) ([]PRURLMessage, error) {
	const op = "views.pr_url_messages"
	var keep []string
	for _, id := range ids {
		if id != "" {
			keep = append(keep, id)
		}
	}
	out := []PRURLMessage{}
	for start := 0; start < len(keep); start += 900 {
		chunk := keep[start:min(start+900, len(keep))]
		rows, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]PRURLMessage, error) {
			var rows []PRURLMessage
			err := tx.Raw("SELECT session_id, content FROM messages WHERE session_id IN ? AND role = 'tool' AND content LIKE '%/pull/%' ORDER BY id ASC", chunk).Scan(&rows).Error
			return rows, err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

func (r *viewsRepo) SkillScaffolded(ctx context.Context, limit int) ([]ScaffoldedSession, error) {
	const op = "views.skill_scaffolded"
	if limit < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "the limit %d is negative", limit)
	}
	if limit == 0 {
		limit = 200
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]ScaffoldedSession, error) {
		out := []ScaffoldedSession{}
		err := tx.Raw(fmt.Sprintf(`SELECT s.id, s.title, m.content FROM sessions s
			JOIN messages m ON m.id = (SELECT m2.id FROM messages m2 WHERE m2.session_id = s.id AND m2.role = 'user'
				AND m2.content IS NOT NULL ORDER BY m2.timestamp, m2.id LIMIT 1)
			WHERE s.title IS NOT NULL AND m.content %s ? ORDER BY s.started_at DESC LIMIT ?`, r.db.likeCI()),
			skillScaffoldPrefix+"%", limit).Scan(&out).Error
		return out, err
	})
}

func (r *viewsRepo) ProjectClocks(ctx context.Context, exclude []string) ([]ProjectClock, error) {
	const op = "views.project_clocks"
	rows, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]ProjectClock, error) {
		where := r.db.listableChildSQL() + " AND s.message_count >= 1 AND s.archived = 0 AND s.hidden = 0"
		args := []any{}
		if len(exclude) > 0 {
			where += " AND s.source NOT IN ?"
			args = append(args, exclude)
		}
		var roots []string
		if err := tx.Raw("SELECT s.id FROM sessions s WHERE "+where+" ORDER BY s.id", args...).Scan(&roots).Error; err != nil {
			return nil, err
		}
		out := make([]ProjectClock, 0, len(roots))
		for _, root := range roots {
			var chain []string
			if err := tx.Raw(`WITH RECURSIVE `+r.db.tipCTE("walk", "SELECT ? AS id")+` SELECT cur_id FROM walk ORDER BY depth`, root).Scan(&chain).Error; err != nil {
				return nil, err
			}
			if len(chain) == 0 {
				chain = []string{root}
			}
			tip, err := getSession(tx, chain[len(chain)-1])
			if err != nil {
				return nil, err
			}
			out = append(out, ProjectClock{ID: tip.ID, LineageIDs: chain, Cwd: tip.Cwd, GitBranch: tip.GitBranch, GitRepoRoot: tip.GitRepoRoot})
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	times, err := r.LastMessageTimes(ctx, rows)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].LastMessageAt = times[rows[i].ID]
	}
	return rows, nil
}

func (r *viewsRepo) LastMessageTimes(ctx context.Context, rows []ProjectClock) (map[string]float64, error) {
	const op = "views.last_message_times"
	bySegment := map[string][]string{}
	out := map[string]float64{}
	for _, row := range rows {
		if row.ID == "" {
			continue
		}
		out[row.ID] = 0
		segs := row.LineageIDs
		if len(segs) == 0 {
			segs = []string{row.ID}
		}
		for _, s := range segs {
			bySegment[s] = append(bySegment[s], row.ID)
		}
	}
	segs := make([]string, 0, len(bySegment))
	for s := range bySegment {
		segs = append(segs, s)
	}
	slices.Sort(segs)
	for start := 0; start < len(segs); start += 900 {
		chunk := segs[start:min(start+900, len(segs))]
		res, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]struct {
			SessionID   string
			MessageTime float64
		}, error) {
			var res []struct {
				SessionID   string
				MessageTime float64
			}
			err := tx.Raw(`SELECT session_id, MAX(timestamp) AS message_time FROM messages WHERE session_id IN ?
				AND role IN ('user', 'assistant') AND (active = 1 OR compacted = 1) AND timestamp `+sqlIn+` GROUP BY session_id`, chunk).Scan(&res).Error
			return res, err
		})
		if err != nil {
			return nil, err
		}
		for _, x := range res {
			for _, id := range bySegment[x.SessionID] {
				out[id] = max(out[id], x.MessageTime)
			}
		}
	}
	return out, nil
}
