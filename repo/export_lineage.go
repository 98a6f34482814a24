package repo

import (
	"context"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
)

// ExportedLineage is a compression lineage exported as one logical
// session (Hermes' export_session_lineage): the newest segment's session
// dict, its message_count the lineage total and its messages those of
// every segment, plus the segments themselves and their ids.
type ExportedLineage struct {
	ExportedSession
	Segments          []ExportedSession `json:"segments"`
	LineageSessionIDs []string          `json:"lineage_session_ids"`
}

// isCompressionChildRow reports whether c continues its parent: it has a
// parent ended by compression and is not a branch, delegate, reset or tool
// child of it.
func isCompressionChildRow(tx *gorm.DB, c *models.Session) (*models.Session, bool, error) {
	pid := ptr.Deref(c.ParentSessionID)
	if pid == "" || isExplicitForkChild(c, true) {
		return nil, false, nil
	}
	p, err := getSession(tx, pid)
	if err != nil {
		if isNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return p, ptr.Deref(p.EndReason) == "compression", nil
}

// compressionLineage is Hermes' get_compression_lineage: the compression
// ancestors of id through its tip, oldest first, following at each step
// the oldest continuation; [id] for an explicit fork child or a lineage id
// is not part of; nil when id does not exist.
func compressionLineage(tx *gorm.DB, id string) ([]string, error) {
	s, err := getSession(tx, id)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if isExplicitForkChild(s, false) {
		return []string{id}, nil
	}
	root := s
	seen := map[string]bool{root.ID: true}
	for depth := 0; depth < maxLineageDepth; depth++ {
		p, ok, err := isCompressionChildRow(tx, root)
		if err != nil {
			return nil, err
		}
		if !ok || seen[p.ID] {
			break
		}
		root = p
		seen[p.ID] = true
	}
	lineage := []string{root.ID}
	inLineage := map[string]bool{root.ID: true}
	cur := root
	for depth := 0; depth < maxLineageDepth && ptr.Deref(cur.EndReason) == "compression"; depth++ {
		var kids []models.Session
		if err := tx.Where("parent_session_id = ?", cur.ID).Order("started_at ASC").Find(&kids).Error; err != nil {
			return nil, err
		}
		var next *models.Session
		for i := range kids {
			if !isExplicitForkChild(&kids[i], true) {
				next = &kids[i]
				break
			}
		}
		if next == nil || inLineage[next.ID] {
			break
		}
		lineage = append(lineage, next.ID)
		inLineage[next.ID] = true
		cur = next
	}
	if !inLineage[id] {
		return []string{id}, nil
	}
	return lineage, nil
}

func (r *portRepo) Lineage(ctx context.Context, id string) (*ExportedLineage, error) {
	const op = "export.lineage"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*ExportedLineage, error) {
		ids, err := compressionLineage(tx, id)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, noSession(op, id)
		}
		out := &ExportedLineage{Segments: []ExportedSession{}, LineageSessionIDs: []string{}}
		var all []models.Message
		for _, sid := range ids {
			s, err := getSession(tx, sid)
			if err != nil {
				if isNotFound(err) {
					continue
				}
				return nil, err
			}
			if err := resolvePrompt(tx, s); err != nil {
				return nil, err
			}
			s.LiftMarkers()
			ms, err := listActive(tx, op, sid)
			if err != nil {
				return nil, err
			}
			out.Segments = append(out.Segments, ExportedSession{Session: *s, Messages: ms})
			out.LineageSessionIDs = append(out.LineageSessionIDs, sid)
			all = append(all, ms...)
		}
		if len(out.Segments) == 0 {
			return nil, noSession(op, id)
		}
		last := out.Segments[len(out.Segments)-1]
		out.ExportedSession = ExportedSession{Session: last.Session, Messages: append([]models.Message{}, all...)}
		out.MessageCount = int64(len(all))
		return out, nil
	})
}

func (r *lineageRepo) CompressionLineage(ctx context.Context, id string) ([]string, error) {
	const op = "lineage.compression_lineage"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		ids, err := compressionLineage(tx, id)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, noSession(op, id)
		}
		return ids, nil
	})
}
