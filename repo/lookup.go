package repo

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
)

// Session lookups beside the rich listing: id search (Hermes'
// search_sessions_by_id and list_sessions_rich's id_query / search_query),
// one enriched row (get_session_rich_row) and a cron job's runs
// (list_cron_job_runs).

// SearchByIDOptions filters Lookup.SearchByID. The zero value returns up
// to 20 matches, archived sessions included (Hermes' default).
type SearchByIDOptions struct {
	// Limit caps the matches (0 = 20).
	Limit int
	// ExcludeArchived leaves archived sessions out.
	ExcludeArchived bool
	// Source, Sources and ExcludeSources filter as in RichOptions.
	Source         string
	Sources        []string
	ExcludeSources []string
}

// Lookup finds sessions by id and reads single enriched rows.
type Lookup interface {
	// SearchByID returns the listed sessions (compression roots projected
	// onto their live tips, as Listing.Rich) whose id, or the id of a
	// session of their compression chain, contains query
	// (case-insensitively), ranked exact match first, then prefix, then
	// substring, each rank by chain activity. An empty query matches
	// nothing. ErrInvalid for a negative limit.
	SearchByID(ctx context.Context, query string, opt SearchByIDOptions) ([]RichSession, error)
	// RichRow returns one session with its preview and last_active, as a
	// listing row but never projected. ErrNotFound when it does not exist.
	RichRow(ctx context.Context, id string) (*RichSession, error)
	// CronJobRuns returns the run sessions of one cron job (source 'cron',
	// id "cron_<jobID>_..."), newest first, with preview and last_active.
	// Limit 0 means 20. ErrInvalid for an empty job id or negative paging.
	CronJobRuns(ctx context.Context, jobID string, limit, offset int) ([]RichSession, error)
}

type lookupRepo struct{ db *DB }

// NewLookup returns the GORM implementation of Lookup.
func NewLookup(db *DB) Lookup { return &lookupRepo{db} }

// compactNeedle removes everything but letters and digits (Python's
// re.sub(r"[\W_]+", "", s)).
func compactNeedle(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) {
			return r
		}
		return -1
	}, s)
}

// addChainSearch adds the id_query / search_query predicate of
// list_sessions_rich to f (alias s): the row, or a session of its forward
// compression chain, matches. It is written as the set of matching
// sessions and their compression ancestors, so it does not depend on the
// row being scanned.
func (d *DB) addChainSearch(op string, f *filter, idQuery, searchQuery string) error {
	for fld, v := range map[string]string{"id_query": idQuery, "search_query": searchQuery} {
		if err := checkText(op, fld, v); err != nil {
			return err
		}
	}
	idNeedle := strings.ToLower(strings.TrimSpace(idQuery))
	searchNeedle := strings.ToLower(strings.TrimSpace(searchQuery))
	if idNeedle == "" && searchNeedle == "" {
		return nil
	}
	if strings.ContainsRune(idNeedle, 0) || strings.ContainsRune(searchNeedle, 0) {
		// No id or sanitized title holds a NUL (and SQLite's LIKE stops
		// reading its pattern at one, which would match everything).
		f.add("1 = 0")
		return nil
	}
	like := func(n string) string { return "%" + EscapeLike(n) + "%" }
	edge := d.continuationEdge("p", "c")
	var conds []string
	var args []any
	if idNeedle != "" {
		conds = append(conds, `LOWER(m.id) LIKE ? ESCAPE '\'`)
		args = append(args, like(idNeedle))
	}
	if searchNeedle != "" {
		c := `(LOWER(COALESCE(m.title, '')) LIKE ? ESCAPE '\' OR LOWER(m.id) LIKE ? ESCAPE '\'`
		args = append(args, like(searchNeedle), like(searchNeedle))
		if cn := compactNeedle(searchNeedle); cn != "" {
			c += ` OR REPLACE(REPLACE(REPLACE(REPLACE(LOWER(COALESCE(m.title, '')), '-', ''), '_', ''), '.', ''), ' ', '') LIKE ? ESCAPE '\'`
			args = append(args, like(cn))
		}
		conds = append(conds, c+")")
	}
	// Every condition must hold somewhere in the chain, each possibly on a
	// different session of it (Hermes ANDs two EXISTS over the chain).
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf(`s.id IN (WITH RECURSIVE hit(id, depth) AS (
				SELECT m.id, 0 FROM sessions m WHERE %[1]s
				UNION
				SELECT p.id, hit.depth + 1 FROM hit JOIN sessions c ON c.id = hit.id JOIN sessions p ON %[2]s
				WHERE hit.depth < %[3]d
			) SELECT id FROM hit)`, c, edge, maxLineageDepth))
	}
	f.add(strings.Join(parts, " AND "), args...)
	return nil
}

func (r *lookupRepo) SearchByID(ctx context.Context, query string, opt SearchByIDOptions) ([]RichSession, error) {
	const op = "lookup.search_by_id"
	if opt.Limit < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "limit must not be negative")
	}
	if opt.Limit == 0 {
		opt.Limit = defaultListLimit
	}
	needle := strings.ToLower(strings.TrimSpace(query))
	if needle == "" || strings.ContainsRune(needle, 0) {
		return []RichSession{}, nil
	}
	rows, err := NewListing(r.db).Rich(ctx, RichOptions{Source: opt.Source, Sources: opt.Sources, ExcludeSources: opt.ExcludeSources,
		Limit: opt.Limit * 4, IncludeArchived: !opt.ExcludeArchived, OrderByLastActive: true, IDQuery: needle})
	if err != nil {
		return nil, mapErr(op, err)
	}
	score := func(s *RichSession) int {
		best := 2
		for _, v := range []string{s.ID, s.LineageRootID} {
			v = strings.ToLower(v)
			switch {
			case v == "":
			case v == needle:
				return 0
			case strings.HasPrefix(v, needle):
				best = 1
			}
		}
		return best
	}
	sort.SliceStable(rows, func(i, j int) bool { return score(&rows[i]) < score(&rows[j]) })
	if len(rows) > opt.Limit {
		rows = rows[:opt.Limit]
	}
	return rows, nil
}

// enrichedRows runs a SELECT over sessions s with the listing's preview and
// last_active columns, then where (with args) and tail (ORDER/LIMIT).
func (r *lookupRepo) enrichedRows(tx *gorm.DB, where, tail string, args ...any) ([]RichSession, error) {
	q := fmt.Sprintf(`SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _prompt, %s AS _preview, %s AS _last_active
		FROM sessions s LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash
		WHERE %s %s`, r.db.previewSQL("s"), lastActiveSQL("s"), where, tail)
	var rows []richRow
	if err := tx.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]RichSession, len(rows))
	for i := range rows {
		out[i] = rows[i].toRich(false)
	}
	return out, nil
}

func (r *lookupRepo) RichRow(ctx context.Context, id string) (*RichSession, error) {
	const op = "lookup.rich_row"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*RichSession, error) {
		rows, err := r.enrichedRows(tx, "s.id = ?", "", id)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, noSession(op, id)
		}
		return &rows[0], nil
	})
}

func (r *lookupRepo) CronJobRuns(ctx context.Context, jobID string, limit, offset int) ([]RichSession, error) {
	const op = "lookup.cron_job_runs"
	if jobID == "" {
		return nil, errs.Errorf(errs.ErrInvalid, op, "job id is empty")
	}
	if err := checkText(op, "job id", jobID); err != nil {
		return nil, err
	}
	if limit < 0 || offset < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "limit and offset must not be negative")
	}
	if limit == 0 {
		limit = defaultListLimit
	}
	// A half-open id range [prefix, prefix with its last byte + 1): an
	// index range scan bound to one job.
	prefix := "cron_" + jobID + "_"
	hi := prefix[:len(prefix)-1] + string(rune(prefix[len(prefix)-1]+1))
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]RichSession, error) {
		return r.enrichedRows(tx, "s.source = 'cron' AND s.id >= ? AND s.id < ?",
			fmt.Sprintf("ORDER BY s.started_at DESC, s.id DESC LIMIT %d OFFSET %d", limit, offset), prefix, hi)
	})
}
