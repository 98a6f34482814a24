package repo

import (
	"context"
	"fmt"
	"strconv"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// maxLineageDepth bounds every walk over parent_session_id, so a corrupt
// cycle cannot loop forever.
const maxLineageDepth = 1000

// maxDepthSQL is maxLineageDepth as the {{max_depth}} of queries/*.sql.
var maxDepthSQL = strconv.Itoa(maxLineageDepth)

// Lineage navigates parent_session_id chains: compression continuations,
// branches, resets and delegate (subagent) runs all point at their parent.
type Lineage interface {
	// Ancestors returns the parent chain of id, nearest first (every kind
	// of parent edge). ErrNotFound when id does not exist.
	Ancestors(ctx context.Context, id string) ([]string, error)
	// Descendants returns every session below id (children, grandchildren,
	// ...), breadth first, ordered by started_at within a level.
	// ErrNotFound when id does not exist.
	Descendants(ctx context.Context, id string) ([]string, error)
	// CompressionTip returns the live end of id's compression chain: while
	// the session ended with "compression", follow its continuation child
	// (not a delegate, branch or reset child, not a tool session) chosen as
	// Hermes does: one that itself ended with compression, else a live one,
	// else the most recently active. A session that is not compressed is
	// its own tip. ErrNotFound when id does not exist.
	CompressionTip(ctx context.Context, id string) (string, error)
	// CompressionChain returns the whole compression lineage id belongs
	// to, from its root (the first compression ancestor) to the tip.
	CompressionChain(ctx context.Context, id string) ([]string, error)
	// CompressionLineage returns Hermes' get_compression_lineage(id): the
	// compression ancestors of id through its tip, oldest first, taking
	// the oldest continuation at each step; [id] for a branch, delegate or
	// tool child, or when id is not part of the lineage found
	// (export_lineage.go). ErrNotFound when id does not exist.
	CompressionLineage(ctx context.Context, id string) ([]string, error)
	// ResolveID returns id when it exists, else the one session whose id
	// starts with it. ErrNotFound when nothing matches, ErrConflict when
	// the prefix is ambiguous.
	ResolveID(ctx context.Context, idOrPrefix string) (string, error)
	// ResolveResume resolves idOrPrefix like ResolveID and returns the
	// session a resume continues, as Hermes' resolve_resume_session_id:
	// the compression tip of the match, then its deepest descendant that
	// holds messages (branch, delegate, reset and tool children are not
	// followed).
	ResolveResume(ctx context.Context, idOrPrefix string) (string, error)
	// SetArchived, SetPinned and SetHidden set the flag on the whole
	// compression lineage of id (pinning also unhides, except a hidden
	// canonical "Bot Chat"). They report whether a row changed.
	SetArchived(ctx context.Context, id string, on bool) (bool, error)
	SetPinned(ctx context.Context, id string, on bool) (bool, error)
	SetHidden(ctx context.Context, id string, on bool) (bool, error)
}

type lineageRepo struct{ db *DB }

// NewLineage returns the GORM implementation of Lineage.
func NewLineage(db *DB) Lineage { return &lineageRepo{db} }

// continuationEdge is the SQL predicate "session c continues compressed
// session p" (aliases p and c).
func (d *DB) continuationEdge(p, c string) string {
	return fmt.Sprintf(`%[1]s.end_reason = 'compression' AND %[2]s.parent_session_id = %[1]s.id
		AND %[3]s IS NULL AND %[4]s IS NULL AND %[5]s IS NULL AND COALESCE(%[2]s.source, '') <> 'tool'`,
		p, c, d.jsonMarker(c+".model_config", "_delegate_from"), d.jsonMarker(c+".model_config", "_branched_from"),
		d.jsonMarker(c+".model_config", "_reset_from"))
}

// nextContinuationAct is a scalar subquery: the continuation of the session
// whose id is the SQL expression pid that Hermes' chain step picks (NULL
// when none): a child that itself ended with compression first, then a live
// child, then the most recently active (last_active DESC, NULLs last as on
// SQLite), then started_at DESC, id DESC. With act set it reads each
// child's activity from ActivityTable (the same value, one lookup).
func (d *DB) nextContinuationAct(pid string, act bool) string {
	return fmt.Sprintf(`(SELECT nc.id FROM sessions np JOIN sessions nc ON %s
		WHERE np.id = %s ORDER BY CASE WHEN nc.end_reason = 'compression' THEN 0 WHEN nc.ended_at IS NULL THEN 1 ELSE 2 END,
		%s DESC%s, nc.started_at DESC, nc.id DESC LIMIT 1)`, d.continuationEdge("np", "nc"), pid, d.lastActive("nc", act), d.nullsLast())
}

// tipCTE returns the recursive CTE "name(root_id, cur_id, depth)" walking
// each seed id's compression chain forward (depth 0 is the seed itself).
func (d *DB) tipCTE(name, seedSQL string) string { return d.tipCTEAct(name, seedSQL, false) }

// tipCTEAct is tipCTE reading activity from ActivityTable when act is set.
func (d *DB) tipCTEAct(name, seedSQL string, act bool) string {
	return fmt.Sprintf(`%[1]s(root_id, cur_id, depth) AS (
		SELECT id, id, 0 FROM (%[2]s) seed
		UNION ALL
		SELECT w.root_id, %[3]s, w.depth + 1 FROM %[1]s w
		WHERE w.depth < %[4]d AND %[3]s IS NOT NULL
	)`, name, seedSQL, d.nextContinuationAct("w.cur_id", act), maxLineageDepth)
}

func (r *lineageRepo) exists(tx *gorm.DB, op, id string) error {
	ok, err := sessionExists(tx, id)
	if err != nil {
		return err
	}
	if !ok {
		return noSession(op, id)
	}
	return nil
}

func (r *lineageRepo) Ancestors(ctx context.Context, id string) ([]string, error) {
	const op = "lineage.ancestors"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		if err := r.exists(tx, op, id); err != nil {
			return nil, err
		}
		out := []string{}
		err := tx.Raw(query("lineage_ancestors", "max_depth", maxDepthSQL), id).Scan(&out).Error
		return dropSelf(out, id), err
	})
}

func dropSelf(ids []string, id string) []string {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

func (r *lineageRepo) Descendants(ctx context.Context, id string) ([]string, error) {
	const op = "lineage.descendants"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		if err := r.exists(tx, op, id); err != nil {
			return nil, err
		}
		out := []string{}
		err := tx.Raw(query("lineage_descendants", "max_depth", maxDepthSQL), id, id).Scan(&out).Error
		return out, err
	})
}

func compressionTip(tx *gorm.DB, d *DB, id string) (string, error) {
	var tips []string
	err := tx.Raw(`WITH RECURSIVE `+d.tipCTE("walk", "SELECT ? AS id")+`
		SELECT cur_id FROM walk ORDER BY depth DESC LIMIT 1`, id).Scan(&tips).Error
	if err != nil || len(tips) == 0 {
		return id, err
	}
	return tips[0], nil
}

func (r *lineageRepo) CompressionTip(ctx context.Context, id string) (string, error) {
	const op = "lineage.compression_tip"
	if err := checkID(op, id); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		if err := r.exists(tx, op, id); err != nil {
			return "", err
		}
		return compressionTip(tx, r.db, id)
	})
}

// compressionRoot walks compression ancestors of id up to the first one.
func compressionRoot(tx *gorm.DB, d *DB, id string) (string, error) {
	var roots []string
	err := tx.Raw(query("lineage_compression_root", "edge", d.continuationEdge("p", "c"), "max_depth", maxDepthSQL), id).Scan(&roots).Error
	if err != nil || len(roots) == 0 {
		return id, err
	}
	return roots[0], nil
}

func (r *lineageRepo) CompressionChain(ctx context.Context, id string) ([]string, error) {
	const op = "lineage.compression_chain"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		if err := r.exists(tx, op, id); err != nil {
			return nil, err
		}
		root, err := compressionRoot(tx, r.db, id)
		if err != nil {
			return nil, err
		}
		out := []string{}
		err = tx.Raw(`WITH RECURSIVE `+r.db.tipCTE("walk", "SELECT ? AS id")+`
			SELECT cur_id FROM walk ORDER BY depth`, root).Scan(&out).Error
		return out, err
	})
}

func resolveID(tx *gorm.DB, op, s string) (string, error) {
	ok, err := sessionExists(tx, s)
	if err != nil {
		return "", err
	}
	if ok {
		return s, nil
	}
	var ids []string
	if err := tx.Model(&models.Session{}).Where("id LIKE ? ESCAPE '\\'", EscapeLike(s)+"%").
		Order("started_at DESC").Limit(2).Pluck("id", &ids).Error; err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", errs.Errorf(errs.ErrNotFound, op, "no session id starts with %q", s)
	case 1:
		return ids[0], nil
	}
	return "", errs.Errorf(errs.ErrConflict, op, "%q matches several sessions; give more of the id", s)
}

func (r *lineageRepo) ResolveID(ctx context.Context, s string) (string, error) {
	const op = "lineage.resolve_id"
	if err := checkID(op, s); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) { return resolveID(tx, op, s) })
}

func (r *lineageRepo) ResolveResume(ctx context.Context, s string) (string, error) {
	const op = "lineage.resolve_resume"
	if err := checkID(op, s); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		id, err := resolveID(tx, op, s)
		if err != nil {
			return "", err
		}
		return resolveResume(tx, r.db, id)
	})
}

// setLineageColumn sets column on every session of id's compression
// lineage (its compression ancestors and continuations).
func (r *lineageRepo) setLineageColumn(tx *gorm.DB, column string, id string, value any) (int64, error) {
	res := tx.Exec(query("lineage_set_column", "edge", r.db.continuationEdge("p", "c"), "max_depth", maxDepthSQL, "column", column),
		id, id, value)
	return res.RowsAffected, res.Error
}

func (r *lineageRepo) setFlag(ctx context.Context, op, column, id string, on bool) (bool, error) {
	if err := checkID(op, id); err != nil {
		return false, err
	}
	v := 0
	if on {
		v = 1
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := r.exists(tx, op, id); err != nil {
			return err
		}
		var err error
		n, err = r.setLineageColumn(tx, column, id, v)
		if err != nil || column != "pinned" || !on {
			return err
		}
		s, err := getSession(tx, id)
		if err != nil {
			return err
		}
		if s.Hidden != 0 && ptr.Deref(s.Title) == BotChatTitle {
			return nil
		}
		_, err = r.setLineageColumn(tx, "hidden", id, 0)
		return err
	})
	return n > 0, err
}

func (r *lineageRepo) SetArchived(ctx context.Context, id string, on bool) (bool, error) {
	return r.setFlag(ctx, "lineage.set_archived", "archived", id, on)
}

func (r *lineageRepo) SetPinned(ctx context.Context, id string, on bool) (bool, error) {
	return r.setFlag(ctx, "lineage.set_pinned", "pinned", id, on)
}

func (r *lineageRepo) SetHidden(ctx context.Context, id string, on bool) (bool, error) {
	return r.setFlag(ctx, "lineage.set_hidden", "hidden", id, on)
}
