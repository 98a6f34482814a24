package repo

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/models"
)

// RichOptions filters Listing.Rich, with the arguments of Hermes'
// list_sessions_rich. The zero value lists the 20 newest visible sessions.
type RichOptions struct {
	// Source, else Sources, restricts the listing to those sources.
	Source  string
	Sources []string
	// ExcludeSources drops sessions of these sources.
	ExcludeSources []string
	// CwdPrefix keeps sessions whose cwd is the prefix or under it.
	CwdPrefix string
	// SessionKey keeps sessions of one gateway session_key.
	SessionKey string
	// Limit (0 means 20) and Offset page the listing.
	Limit, Offset int
	// IncludeChildren also lists delegate runs and compression
	// continuations (and then no projection is done).
	IncludeChildren bool
	// MinMessageCount drops sessions with fewer messages.
	MinMessageCount int
	// NoProjectCompressionTips shows a compression root as itself instead
	// of projecting it onto its live tip.
	NoProjectCompressionTips bool
	// OrderByLastActive orders by the activity of the whole compression
	// chain (newest first) instead of started_at.
	OrderByLastActive bool
	// IncludeArchived also lists archived sessions; ArchivedOnly lists only
	// them (hidden ones included).
	IncludeArchived, ArchivedOnly bool
	// IncludePinned appends pinned sessions the page missed.
	IncludePinned bool
	// IncludeHidden also lists hidden sessions.
	IncludeHidden bool
	// IDQuery keeps rows whose id, or the id of any session of their
	// forward compression chain, contains it (case-insensitively).
	// SearchQuery does the same over ids and titles, also matching a
	// title with its punctuation and spaces removed ("an94" finds
	// "AN-94"). Hermes honours both only with OrderByLastActive;
	// hermesstate applies them to every order (lookup.go).
	IDQuery, SearchQuery string
	// StartedSince and StartedBefore, when > 0, keep sessions started at
	// or after StartedSince and before StartedBefore (epoch seconds; a
	// projected compression chain by its first session).
	StartedSince, StartedBefore float64
}

// CountOptions filters Listing.Count (Hermes' session_count); it counts the
// same rows Rich would list without paging and without the hidden filter.
type CountOptions struct {
	Source          string
	Sources         []string
	ExcludeSources  []string
	CwdPrefix       string
	MinMessageCount int
	IncludeArchived bool
	ArchivedOnly    bool
	// ExcludeChildren drops delegate runs and compression continuations.
	ExcludeChildren bool
}

// RichSession is one listing row: the session (a compression root
// projected onto its live tip) with its preview and last activity.
type RichSession struct {
	models.Session
	// Preview is the head of the first real user message (60 characters
	// and "..." when longer), "" when there is none.
	Preview string `json:"preview"`
	// LastActive is the newest of last_activity_at and the newest message
	// timestamp, else started_at (epoch seconds).
	LastActive float64 `json:"last_active"`
	// LineageRootID is set on a projected row: the id of the compression
	// root shown (the row's ID is the tip's).
	LineageRootID string `json:"_lineage_root_id,omitempty"`
	// Unread: activity postdates last_read_at (NULL last_read_at = read).
	Unread bool `json:"unread"`
}

// Listing reads session listings: the pickers' rich listing with previews,
// the most-recent-activity listing, and counts.
type Listing interface {
	// Rich returns a page of sessions with preview and last_active in one
	// query (Hermes' list_sessions_rich): archived and hidden sessions,
	// delegate runs and compression continuations are left out by default,
	// newest started first; a compression root is shown projected onto its
	// live tip (tip's id, title, counts, preview, last_active; root's
	// started_at and token totals). ErrInvalid for a negative limit/offset.
	Rich(ctx context.Context, opt RichOptions) ([]RichSession, error)
	// Count returns how many sessions match (Hermes' session_count).
	Count(ctx context.Context, opt CountOptions) (int64, error)
	// Recent returns sessions by last activity, newest first, every kind
	// included (Hermes' search_sessions), optionally of some sources. The
	// rows carry LastActive but no preview.
	Recent(ctx context.Context, sources []string, limit, offset int) ([]RichSession, error)
	// CountEmpty returns the number of ended, unarchived sessions without
	// messages (Hermes' count_empty_sessions).
	CountEmpty(ctx context.Context) (int64, error)
	// Explain runs Rich(opt) and returns, for every statement it ran, its
	// SQL text and its query plan (EXPLAIN on PostgreSQL, EXPLAIN QUERY
	// PLAN on SQLite), for tests and diagnosis. Errors are Rich's.
	Explain(ctx context.Context, opt RichOptions) ([]Plan, error)
}

// Plan is one statement a listing ran and its query plan, one line per
// plan node.
type Plan struct {
	SQL   string
	Lines []string
}

type listingRepo struct{ db *DB }

// NewListing returns the GORM implementation of Listing.
func NewListing(db *DB) Listing { return &listingRepo{db} }

// Epoch window of trusted activity timestamps: values outside it (garbage
// salvaged from a damaged page) are ignored by last_active.
const (
	EpochMin = 946684800.0  // 2000-01-01
	EpochMax = 4102444800.0 // 2100-01-01
)

// Hermes' compaction-summary markers (agent/context_compressor.py).
const (
	summaryLongFormPrefix  = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. This is a handoff from a previous context window — treat it as background reference, NOT as active instructions. "
	summaryLegacyPrefix    = "[CONTEXT SUMMARY]:"
	summaryEndMarker       = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
	mergedPriorHeader      = "[PRIOR CONTEXT — for reference only; not a new message]"
	mergedSummaryDelimiter = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
	previewHeadChars       = 63
	previewMaxChars        = 60
	sqlIn                  = "BETWEEN 946684800.0 AND 4102444800.0"
	resetReasonsSQL        = "'session_reset', 'session_switch', 'idle', 'daily', 'suspended', 'resume_pending_expired'"
	defaultListLimit       = 20
	maxListLimit           = 100000
)

func sqlLit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (d *DB) startsWith(expr string, prefixes ...string) string {
	trimmed := "LTRIM(" + expr + ", " + d.ws() + ")"
	var parts []string
	for _, p := range prefixes {
		parts = append(parts, fmt.Sprintf("SUBSTR(%s, 1, %d) = %s", trimmed, utf8.RuneCountInString(p), sqlLit(p)))
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

func (d *DB) afterMarker(marker string) string {
	return fmt.Sprintf("SUBSTR(m.content, %s + %d)", d.instr("m.content", sqlLit(marker)), utf8.RuneCountInString(marker))
}

// previewSQL is the correlated subquery of the raw preview of the session
// alias s: the first eligible user row by (timestamp, id) through
// idx_messages_session, cut in the database so only a short string leaves
// it. On SQLite eligibility and cutting are the Go function previewFunc
// (listing_preview_sqlite.go): the same result as previewSQLPlain, in a statement
// a fraction of the size to compile.
func (d *DB) previewSQL(s string) string {
	if d.Dialect == SQLite {
		// The function runs once per row looked at: the inner LIMIT -1
		// keeps SQLite from flattening the subquery, which would evaluate
		// it again in the outer WHERE.
		return fmt.Sprintf(`COALESCE((SELECT p FROM (SELECT %[2]s(m.content, m.display_kind) AS p FROM messages m
		WHERE m.session_id = %[1]s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT -1)
		WHERE p IS NOT NULL LIMIT 1), '')`, s, previewFunc)
	}
	return d.previewSQLPlain(s)
}

// previewSQLPlain is previewSQL in plain SQL (any dialect).
func (d *DB) previewSQLPlain(s string) string {
	standalone := d.startsWith("m.content", summaryLongFormPrefix, summaryLegacyPrefix)
	mergedAfter := d.afterMarker(mergedSummaryDelimiter)
	merged := fmt.Sprintf("(%s > 0 AND %s)", d.instr("m.content", sqlLit(mergedSummaryDelimiter)),
		d.startsWith(mergedAfter, summaryLongFormPrefix, summaryLegacyPrefix))
	prior := fmt.Sprintf("TRIM(SUBSTR(m.content, 1, %s - 1), %s)", d.instr("m.content", sqlLit(mergedSummaryDelimiter)), d.ws())
	priorL := "LTRIM(" + prior + ", " + d.ws() + ")"
	hl := utf8.RuneCountInString(mergedPriorHeader)
	priorUnwrapped := fmt.Sprintf("CASE WHEN SUBSTR(%[1]s, 1, %[2]d) = %[3]s THEN LTRIM(SUBSTR(%[1]s, %[4]d), %[5]s) ELSE %[6]s END",
		priorL, hl, sqlLit(mergedPriorHeader), hl+1, d.ws(), prior)
	remainder := d.afterMarker(summaryEndMarker)
	eligible := fmt.Sprintf(`(COALESCE(m.display_kind, '') <> 'hidden' AND ((NOT %[1]s AND NOT %[2]s)
		OR (%[1]s AND %[3]s > 0 AND LENGTH(TRIM(%[4]s, %[5]s)) > 0)
		OR (%[2]s AND LENGTH(TRIM(%[6]s, %[5]s)) > 0)))`,
		standalone, merged, d.instr("m.content", sqlLit(summaryEndMarker)), remainder, d.ws(), priorUnwrapped)
	raw := fmt.Sprintf("CASE WHEN %s THEN %s WHEN %s THEN %s ELSE SUBSTR(%s, 1, %d) END",
		standalone, remainder, merged, priorUnwrapped, d.newlineSpaces("m.content"), previewHeadChars)
	return fmt.Sprintf(`COALESCE((SELECT %s FROM messages m
		WHERE m.session_id = %s.id AND m.role = 'user' AND m.content IS NOT NULL AND %s
		ORDER BY m.timestamp, m.id LIMIT 1), '')`, raw, s, eligible)
}

// lastActiveSQL is the last_active expression of session alias s.
func lastActiveSQL(s string) string {
	return fmt.Sprintf(`COALESCE((SELECT MAX(v) FROM (SELECT %[1]s.last_activity_at AS v UNION ALL
		SELECT (SELECT MAX(am.timestamp) FROM messages am WHERE am.session_id = %[1]s.id AND am.timestamp %[2]s)) av
		WHERE v %[2]s), CASE WHEN %[1]s.started_at %[2]s THEN %[1]s.started_at END)`, s, sqlIn)
}

// lastActive is the last activity of session alias s: read from
// ActivityTable when act is set (the file has it, kept by triggers: the
// same value), else computed (lastActiveSQL).
func (d *DB) lastActive(s string, act bool) string {
	if act {
		return "(SELECT xa.active_at FROM hermesstate_session_activity xa WHERE xa.session_id = " + s + ".id)"
	}
	return lastActiveSQL(s)
}

// newlineSpacer turns LF and CR into spaces.
var newlineSpacer = strings.NewReplacer("\n", " ", "\r", " ")

// ShapePreview turns a raw preview (the head of a message) into what
// pickers show: trimmed, newlines as spaces, cut to 60 characters plus
// "..." when longer.
func ShapePreview(raw string) string {
	t := strings.TrimSpace(raw)
	if t == "" {
		return ""
	}
	t = newlineSpacer.Replace(t)
	if utf8.RuneCountInString(t) > previewMaxChars {
		r := []rune(t)
		return string(r[:previewMaxChars]) + "..."
	}
	return t
}

// listableChildSQL keeps roots and branch/reset children (alias s).
func (d *DB) listableChildSQL() string {
	return fmt.Sprintf(`(s.parent_session_id IS NULL
		OR %[1]s IS NOT NULL
		OR EXISTS (SELECT 1 FROM sessions bp WHERE bp.id = s.parent_session_id AND bp.end_reason = 'branched' AND s.started_at >= bp.ended_at)
		OR %[2]s IS NOT NULL
		OR EXISTS (SELECT 1 FROM sessions rp WHERE rp.id = s.parent_session_id AND rp.end_reason IN (%[3]s)
			AND s.session_key IS NOT NULL AND s.session_key <> '' AND s.session_key = rp.session_key))
		AND %[4]s`,
		d.jsonMarker("s.model_config", "_branched_from"), d.jsonMarker("s.model_config", "_reset_from"), resetReasonsSQL,
		d.jsonMarkerAbsent("s.model_config", "_delegate_from"))
}

type filter struct {
	where []string
	args  []any
	// listed, on PostgreSQL, is the condition on ActivityTable (alias a)
	// that selects the same sessions as where from its listed column
	// (activityListedArm), "" when where holds more than that table
	// answers.
	listed string
}

func (f *filter) add(clause string, args ...any) {
	f.where = append(f.where, clause)
	f.args = append(f.args, args...)
}

func (f *filter) sql() string {
	if len(f.where) == 0 {
		return ""
	}
	return "WHERE " + strings.Join(f.where, " AND ")
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anySlice(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func (d *DB) sessionFilter(excludeChildren bool, source string, sources, exclude []string, sessionKey, cwdPrefix string,
	minMessages int, archivedOnly, includeArchived bool) *filter {
	f := &filter{}
	if excludeChildren {
		f.add(d.listableChildSQL())
	}
	include := sources
	if source != "" {
		include = []string{source}
	}
	if len(include) > 0 {
		f.add("s.source IN ("+placeholders(len(include))+")", anySlice(include)...)
	}
	if sessionKey != "" {
		f.add("s.session_key = ?", sessionKey)
	}
	if len(exclude) > 0 {
		f.add("s.source NOT IN ("+placeholders(len(exclude))+")", anySlice(exclude)...)
	}
	if cwdPrefix != "" {
		p := strings.TrimRight(cwdPrefix, `/\`)
		if p == "" {
			p = cwdPrefix
		}
		e := EscapeLike(p)
		f.add(`(s.cwd = ? OR s.cwd LIKE ? ESCAPE '\' OR s.cwd LIKE ? ESCAPE '\')`, p, e+"/%", e+`\\%`)
	}
	if minMessages > 0 {
		f.add("s.message_count >= ?", minMessages)
	}
	switch {
	case archivedOnly:
		f.add("s.archived = 1")
	case !includeArchived:
		f.add("s.archived = 0")
	}
	return f
}

func checkSources(op string, lists ...[]string) error {
	for _, l := range lists {
		for _, s := range l {
			if err := checkText(op, "source", s); err != nil {
				return err
			}
		}
	}
	return nil
}

// richRow is one scanned listing row: the root's columns, then the tip's
// projected columns (t_*), the resolved prompts and the computed values.
type richRow struct {
	models.Session `gorm:"embedded"`
	PromptResolved *string  `gorm:"column:_prompt"`
	Preview        string   `gorm:"column:_preview"`
	LastActive     *float64 `gorm:"column:_last_active"`
	TipID          *string  `gorm:"column:t_id"`
	TipEndedAt     *models.Epoch
	TipEndReason   *string
	TipMsgs        int64
	TipTools       int64
	TipTitle       *string
	TipModel       *string
	TipPrompt      *string
	TipCwd         *string
	TipGitBranch   *string
	TipGitRepoRoot *string
	TipPreview     string
	TipLastActive  *float64
	// Bound and Above report the bounded activity scan (see richQuery).
	Bound *float64 `gorm:"column:_bound"`
	Above int64    `gorm:"column:_above"`
}

const tipCols = `t.id AS t_id, t.ended_at AS tip_ended_at, t.end_reason AS tip_end_reason, t.message_count AS tip_msgs,
	t.tool_call_count AS tip_tools, t.title AS tip_title, t.model AS tip_model,
	COALESCE(tsp.prompt, t.system_prompt) AS tip_prompt, t.cwd AS tip_cwd, t.git_branch AS tip_git_branch,
	t.git_repo_root AS tip_git_repo_root`

func (row *richRow) toRich(project bool) RichSession {
	out := RichSession{Session: row.Session, Preview: ShapePreview(row.Preview)}
	out.SystemPrompt = row.PromptResolved
	out.LiftMarkers()
	if row.LastActive != nil {
		out.LastActive = *row.LastActive
	}
	if project && row.TipID != nil && *row.TipID != row.ID {
		out.LineageRootID = row.ID
		out.ID = *row.TipID
		out.EndedAt, out.EndReason = row.TipEndedAt, row.TipEndReason
		out.MessageCount, out.ToolCallCount = row.TipMsgs, row.TipTools
		if row.TipTitle != nil {
			out.Title = row.TipTitle
		}
		out.Model, out.SystemPrompt = row.TipModel, row.TipPrompt
		out.Cwd, out.GitBranch, out.GitRepoRoot = row.TipCwd, row.TipGitBranch, row.TipGitRepoRoot
		out.Preview = ShapePreview(row.TipPreview)
		out.LastActive = 0
		if row.TipLastActive != nil {
			out.LastActive = *row.TipLastActive
		}
	}
	if out.LastReadAt != nil {
		out.Unread = out.LastActive > float64(*out.LastReadAt)
	}
	return out
}

func (r *listingRepo) Rich(ctx context.Context, opt RichOptions) ([]RichSession, error) {
	const op = "listing.rich"
	if opt.Limit < 0 || opt.Offset < 0 || opt.MinMessageCount < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "limit, offset and min_message_count must not be negative")
	}
	if opt.Limit == 0 {
		opt.Limit = defaultListLimit
	}
	if opt.Limit > maxListLimit {
		opt.Limit = maxListLimit
	}
	if err := checkSources(op, []string{opt.Source, opt.SessionKey, opt.CwdPrefix}, opt.Sources, opt.ExcludeSources); err != nil {
		return nil, err
	}
	d := r.db
	if d.AsIs > 0 && d.AsIs < 6 {
		// Hermes v4 (list_sessions_rich came in v4) listed every session,
		// delegate runs and compression continuations included, each as
		// itself; v6 began hiding children and projecting roots onto
		// their tips.
		opt.IncludeChildren, opt.NoProjectCompressionTips = true, true
	}
	f := d.sessionFilter(!opt.IncludeChildren, opt.Source, opt.Sources, opt.ExcludeSources, opt.SessionKey, opt.CwdPrefix,
		opt.MinMessageCount, opt.ArchivedOnly, opt.IncludeArchived)
	if !opt.IncludeHidden && !opt.ArchivedOnly {
		f.add("s.hidden = 0")
	}
	if opt.IDQuery != "" || opt.SearchQuery != "" {
		if err := d.addChainSearch(op, f, opt.IDQuery, opt.SearchQuery); err != nil {
			return nil, err
		}
	}
	if opt.StartedSince > 0 {
		f.add("s.started_at >= ?", opt.StartedSince)
	}
	if opt.StartedBefore > 0 {
		f.add("s.started_at < ?", opt.StartedBefore)
	}
	if d.Dialect == Postgres {
		f = f.inlinedPostgres()
		f.listed = listedCondPostgres(opt)
	}
	project := !opt.NoProjectCompressionTips && !opt.IncludeChildren
	return Read(ctx, d, op, func(tx *gorm.DB) ([]RichSession, error) {
		rows, err := r.richQuery(tx, f, opt, project, false)
		if err != nil {
			return nil, err
		}
		if opt.IncludePinned {
			pf := &filter{where: append(append([]string{}, f.where...), "s.pinned = 1"), args: f.args}
			pinned, err := r.richQuery(tx, pf, RichOptions{}, project, true)
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			for _, x := range rows {
				seen[x.ID] = true
			}
			for _, x := range pinned {
				if !seen[x.ID] {
					seen[x.ID] = true
					rows = append(rows, x)
				}
			}
		}
		out := make([]RichSession, len(rows))
		for i := range rows {
			out[i] = rows[i].toRich(project)
		}
		return out, nil
	})
}

// richQuery runs the listing as one statement: the page of admitted rows
// (ids only, from the indexes), the compression tip of each paged root (a
// recursive walk bounded by the page), then previews and last_active for
// the page rows alone.
//
// Ordered by last activity, the page is found without computing the
// activity of every session: the newest n message timestamps and the
// newest n session activity stamps (both from indexes) give a bound T (the
// newer of the two scans' last values): a session not among the scanned
// messages, and whose own stamp is not above T, has activity at or below
// T. The remaining candidates' chain roots get their exact activity, so
// the candidates above T are exactly the newest ones.
// When fewer than offset+limit rows lie above T, n grows and the
// statement runs again; past a cap it falls back to the full computation.
func (r *listingRepo) richQuery(tx *gorm.DB, f *filter, opt RichOptions, project, all bool) ([]richRow, error) {
	act := r.db.hasActivity(tx)
	if !opt.OrderByLastActive || all {
		return r.richStatement(tx, f, opt, project, all, 0, act)
	}
	need := opt.Offset + opt.Limit
	if act && r.db.Dialect == Postgres {
		// One exact statement: PostgreSQL walks the activity index in
		// order (or sorts the admitted rows for a deep page) and merges
		// the compressed roots in (activityUnionPage).
		return r.richStatement(tx, f, opt, project, false, 0, true)
	}
	if act {
		// Scan the newest sessions by their own activity (ActivityTable),
		// widening until enough rows are provably the newest; the widest
		// scan covers every session and is exact by itself.
		for n := max(64, need*4); ; n *= 8 {
			rows, err := r.richStatement(tx, f, opt, project, false, -n, true)
			if err != nil {
				return nil, err
			}
			if len(rows) > 0 && (rows[0].Above >= int64(need) || rows[0].Bound == nil) {
				return rows, nil
			}
			if len(rows) == 0 {
				var total int64
				if err := tx.Raw("SELECT COUNT(*) FROM " + ActivityTable).Scan(&total).Error; err != nil {
					return nil, err
				}
				if int64(n) >= total {
					return rows, nil
				}
			}
		}
	}
	for n := max(4096, need*128); n <= maxActivityScan; n *= 8 {
		rows, err := r.richStatement(tx, f, opt, project, false, n, false)
		if err != nil {
			return nil, err
		}
		if len(rows) > 0 && (rows[0].Above >= int64(need) || rows[0].Bound == nil) {
			return rows, nil
		}
	}
	return r.richStatement(tx, f, opt, project, false, 0, false)
}

// maxActivityScan caps the bounded activity scan before the fallback.
const maxActivityScan = 1 << 21

// richPage is the part of a listing statement that picks the page: its
// CTEs (ending in one named page with columns id, eff, started_at), their
// arguments and the _bound/_above columns the bounded scans report.
type richPage struct {
	sql    string
	args   []any
	bounds string
}

const (
	// noBounds: the page is exact by itself.
	noBounds = ", NULL AS _bound, 0 AS _above"
	// scanBounds: the bound T of a bounded activity scan and how many
	// candidates lie above it.
	scanBounds = `, CASE WHEN (SELECT t FROM bound) > -1e308 THEN (SELECT t FROM bound) END AS _bound,
			(SELECT COUNT(*) FROM pall WHERE pall.eff > (SELECT t FROM bound)) AS _above`
)

func (r *listingRepo) richStatement(tx *gorm.DB, f *filter, opt RichOptions, project, all bool, scan int, act bool) ([]richRow, error) {
	d := r.db
	// LIMIT/OFFSET and scan sizes are written as integer literals: a bound
	// parameter there makes SQLite re-prepare the (large) statement at its
	// first step, which cost as much as the first prepare.
	limit := ""
	if !all {
		limit = fmt.Sprintf(" LIMIT %d OFFSET %d", opt.Limit, opt.Offset)
	}
	var p richPage
	switch {
	case opt.OrderByLastActive && scan < 0:
		p = d.activityScanPage(f, limit, -scan)
	case opt.OrderByLastActive && scan > 0:
		p = d.messageScanPage(f, limit, scan, max(64, (opt.Offset+opt.Limit)*4))
	case opt.OrderByLastActive && act && d.Dialect == Postgres:
		p = d.activityUnionPage(f, limit, opt.Offset+opt.Limit, f.listed != "" && d.hasActivityListed(tx))
	case opt.OrderByLastActive:
		p = d.fullActivityPage(f, limit)
	default:
		ids, anyCompressed, err := d.startedPageIDs(tx, f, limit)
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		project = project && anyCompressed
		if !project {
			return d.richByIDs(tx, ids, act)
		}
		p = richPage{
			sql:    fmt.Sprintf(`page AS (SELECT s.id, s.started_at AS eff, s.started_at FROM sessions s WHERE s.id IN (%s))`, placeholders(len(ids))),
			args:   ids,
			bounds: noBounds,
		}
	}
	return d.richRows(tx, p, project, act)
}

// activityScanPage: the newest k sessions by their own activity
// (ActivityTable) give the candidates (with every compression ancestor)
// and the bound T: a session outside them has activity at or below T, and
// so has every chain made only of such sessions.
func (d *DB) activityScanPage(f *filter, limit string, k int) richPage {
	chain := d.tipCTEAct("chain", "SELECT cand.id FROM cand "+d.crossJoin()+" sessions cs ON cs.id = cand.id WHERE cs.end_reason = 'compression'", true)
	sql := query("listing_page_activity_scan", "scan", strconv.Itoa(k), "edge", d.continuationEdge("p", "c"), "max_depth", maxDepthSQL,
		"chain", chain, "where", f.sql(), "limit", limit, "nulls_last", d.nullsLast(), "cross", d.crossJoin())
	return richPage{sql: sql, args: append([]any{}, f.args...), bounds: scanBounds}
}

// messageScanPage: the newest scan message timestamps and the newest ss
// session activity stamps (both from indexes) give the candidates and the
// bound T (the newer of the two scans' last values).
func (d *DB) messageScanPage(f *filter, limit string, scan, ss int) richPage {
	bound := d.greatest(fmt.Sprintf("CASE WHEN (SELECT COUNT(*) FROM rm) < %d THEN -1e308 ELSE (SELECT MIN(ts) FROM rm) END", scan),
		fmt.Sprintf("CASE WHEN (SELECT COUNT(*) FROM rs) < %d THEN -1e308 ELSE (SELECT MIN(ts) FROM rs) END", ss))
	chain := d.tipCTE("chain", "SELECT id FROM cand")
	sql := query("listing_page_message_scan", "recent", sqlIn, "scan", strconv.Itoa(scan), "session_scan", strconv.Itoa(ss),
		"bound", bound, "edge", d.continuationEdge("p", "c"), "max_depth", maxDepthSQL, "chain", chain,
		"last_active", lastActiveSQL("cs"), "where", f.sql(), "limit", limit)
	return richPage{sql: sql, args: append([]any{}, f.args...), bounds: scanBounds}
}

// activityUnionPage (PostgreSQL, with ActivityTable): a session that did
// not end with compression has its own activity as its chain's, read from
// ActivityTable in index order; a compressed root gets the newest activity
// of its forward chain. The page is the union of both kinds, ordered: the
// first kind streams from idx_hermesstate_session_activity (a first page
// reads a few index entries), the second is as long as the store has
// compressed roots admitted (idx_hermesstate_sessions_compressed finds
// them). Only the first need (offset + limit) sessions of the first kind
// can be on the page, so that side stops there (a plain index walk).
// Nothing reads messages.
//
// With listed (the store has migration 0107 and the filter is one its
// listed column answers, f.listed), the first kind is read from
// idx_hermesstate_activity_listed (or its source variant) alone: the
// index holds the sessions the default filter shows, in the page's order,
// so a deep page walks offset + limit index entries and reads no session
// row. The few rows whose listed is NULL (a model_config that is not
// JSON) are read through sessions and the full filter, as before.
func (d *DB) activityUnionPage(f *filter, limit string, need int, listed bool) richPage {
	where := f.sql()
	and := " AND "
	if where == "" {
		where, and = "WHERE ", ""
	}
	first := fmt.Sprintf(`(SELECT s.id, a.active_at AS eff, s.started_at FROM %[1]s a JOIN sessions s ON s.id = a.session_id
			%[2]s%[3]s(s.end_reason IS NULL OR s.end_reason <> 'compression')
			ORDER BY a.active_at DESC NULLS LAST, s.started_at DESC, s.id DESC LIMIT %[4]d)`, ActivityTable, where, and, need)
	args := append(append(append([]any{}, f.args...), f.args...), f.args...)
	if listed {
		first = fmt.Sprintf(`(SELECT a.session_id AS id, a.active_at AS eff, a.started_at FROM %[1]s a WHERE %[2]s
			ORDER BY a.active_at DESC NULLS LAST, a.started_at DESC, a.session_id DESC LIMIT %[5]d)
			UNION ALL
			(SELECT s.id, a.active_at AS eff, s.started_at FROM %[1]s a JOIN sessions s ON s.id = a.session_id
			%[3]s%[4]sa.listed IS NULL AND (s.end_reason IS NULL OR s.end_reason <> 'compression')
			ORDER BY a.active_at DESC NULLS LAST, s.started_at DESC, s.id DESC LIMIT %[5]d)`, ActivityTable, f.listed, where, and, need)
	}
	chain := d.tipCTEAct("chain", "SELECT s.id FROM sessions s "+where+and+"s.end_reason = 'compression'", true)
	sql := chain + ",\n" + fmt.Sprintf(`page AS (SELECT id, eff, started_at FROM (
			%[6]s
			UNION ALL
			SELECT s.id, (SELECT MAX(ca.active_at) FROM chain c JOIN %[1]s ca ON ca.session_id = c.cur_id WHERE c.root_id = s.id), s.started_at
			FROM sessions s %[2]s%[3]ss.end_reason = 'compression'
		) u ORDER BY eff DESC NULLS LAST, started_at DESC, id DESC%[4]s)`, ActivityTable, where, and, limit, need, first)
	return richPage{sql: sql, args: args, bounds: noBounds}
}

// fullActivityPage: the activity of the whole forward compression chain of
// every admitted row.
func (d *DB) fullActivityPage(f *filter, limit string) richPage {
	sql := d.tipCTE("chain", "SELECT s.id FROM sessions s "+f.sql()) + ",\n" + fmt.Sprintf(`page AS (
			SELECT s.id, MAX(%[1]s) AS eff, s.started_at FROM sessions s
			LEFT JOIN chain c ON c.root_id = s.id
			LEFT JOIN sessions cs ON cs.id = c.cur_id
			%[2]s
			GROUP BY s.id, s.started_at
			ORDER BY eff DESC, s.started_at DESC, s.id DESC%[3]s
		)`, lastActiveSQL("cs"), f.sql(), limit)
	return richPage{sql: sql, args: append(append([]any{}, f.args...), f.args...), bounds: noBounds}
}

// startedPageIDs returns the ids of a started_at-ordered page and whether
// any of them is a compressed root.
//
// started_at order walks idx_sessions_started; the parent column is kept
// away from the planner so it does not pick idx_sessions_parent and sort
// every session.
//
// The page's ids come first from a short statement of their own, then the
// rows from one that names them: compiling is most of a listing's cost
// here (the driver compiles every statement on every call), and two short
// statements compile in a fraction of the time of one long one; the
// compression-tip projection is left out when no paged row is a compressed
// root.
func (d *DB) startedPageIDs(tx *gorm.DB, f *filter, limit string) (ids []any, anyCompressed bool, err error) {
	q := fmt.Sprintf(`SELECT s.id, CASE WHEN s.end_reason = 'compression' THEN 1 ELSE 0 END FROM sessions s %s
			ORDER BY s.started_at DESC%s`, strings.ReplaceAll(f.sql(), "s.parent_session_id IS NULL", d.noIndex("s.parent_session_id")+" IS NULL"), limit)
	if err := explainInto(tx, q, f.args); err != nil {
		return nil, false, err
	}
	rows, err := queryRows(tx, q, f.args...)
	if err != nil {
		return nil, false, err
	}
	for rows.Next() {
		var id string
		var compressed int64
		if err := rows.Scan(&id, &compressed); err != nil {
			rows.Close()
			return nil, false, err
		}
		ids = append(ids, id)
		anyCompressed = anyCompressed || compressed != 0
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, false, err
	}
	return ids, anyCompressed, nil
}

// richByIDs reads the rows of a started_at page by id, put in the page's
// order here (no sort to compile or run).
func (d *DB) richByIDs(tx *gorm.DB, ids []any, act bool) ([]richRow, error) {
	q := fmt.Sprintf(`SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _prompt, %s AS _preview, %s AS _last_active
				FROM sessions s LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash WHERE s.id IN (%s)`,
		d.previewSQL("s"), d.lastActive("s", act), placeholders(len(ids)))
	if err := explainInto(tx, q, ids); err != nil {
		return nil, err
	}
	got, err := scanRich(tx, q, ids...)
	if err != nil {
		return nil, err
	}
	at := make(map[string]int, len(got))
	for i := range got {
		at[got[i].ID] = i
	}
	out := make([]richRow, 0, len(got))
	for _, id := range ids {
		if i, ok := at[id.(string)]; ok {
			out = append(out, got[i])
		}
	}
	// Ties on started_at: id DESC, as the one-statement form sorted.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].StartedAt != out[j].StartedAt {
			return out[i].StartedAt > out[j].StartedAt
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// richRows reads the page's rows with their previews, last_active and,
// when project is set, the compression tip of each compressed root.
func (d *DB) richRows(tx *gorm.DB, p richPage, project, act bool) ([]richRow, error) {
	page := p.sql
	tipJoin := ""
	tipSel := ", NULL AS t_id"
	if project {
		page += ",\n" + d.tipCTEAct("walk", "SELECT p.id FROM page p "+d.crossJoin()+" sessions ps ON ps.id = p.id WHERE ps.end_reason = 'compression'", act) +
			`, tips AS (SELECT w.root_id, w.cur_id FROM walk w WHERE w.depth > 0 AND w.depth = (SELECT MAX(w2.depth) FROM walk w2 WHERE w2.root_id = w.root_id))`
		tipJoin = `LEFT JOIN tips ON tips.root_id = s.id
			LEFT JOIN sessions t ON t.id = tips.cur_id
			LEFT JOIN system_prompts tsp ON tsp.hash = t.system_prompt_hash`
		tipSel = ", " + tipCols + ", CASE WHEN t.id IS NULL THEN '' ELSE " + d.previewSQL("t") + " END AS tip_preview, " +
			"CASE WHEN t.id IS NULL THEN NULL ELSE " + d.lastActive("t", act) + " END AS tip_last_active"
	}
	q := fmt.Sprintf(`WITH RECURSIVE %s
		SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _prompt, %s AS _preview, %s AS _last_active%s%s
		FROM page JOIN sessions s ON s.id = page.id
		LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash
		%s
		ORDER BY page.eff DESC%s, page.started_at DESC, s.id DESC`, page, d.previewSQL("s"), d.lastActive("s", act), tipSel, p.bounds, tipJoin, d.nullsLast())
	if err := explainInto(tx, q, p.args); err != nil {
		return nil, err
	}
	return scanRich(tx, q, p.args...)
}

func (r *listingRepo) Count(ctx context.Context, opt CountOptions) (int64, error) {
	const op = "listing.count"
	if err := checkSources(op, []string{opt.Source, opt.CwdPrefix}, opt.Sources, opt.ExcludeSources); err != nil {
		return 0, err
	}
	f := r.db.sessionFilter(opt.ExcludeChildren, opt.Source, opt.Sources, opt.ExcludeSources, "", opt.CwdPrefix,
		opt.MinMessageCount, opt.ArchivedOnly, opt.IncludeArchived)
	return Read(ctx, r.db, op, func(tx *gorm.DB) (int64, error) {
		var n int64
		err := tx.Raw("SELECT COUNT(*) FROM sessions s "+f.sql(), f.args...).Scan(&n).Error
		return n, err
	})
}

func (r *listingRepo) Recent(ctx context.Context, sources []string, limit, offset int) ([]RichSession, error) {
	const op = "listing.recent"
	if limit < 0 || offset < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "limit and offset must not be negative")
	}
	if limit == 0 {
		limit = defaultListLimit
	}
	if err := checkSources(op, sources); err != nil {
		return nil, err
	}
	f := &filter{}
	if len(sources) > 0 {
		f.add("s.source IN ("+placeholders(len(sources))+")", anySlice(sources)...)
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]RichSession, error) {
		var rows []richRow
		q := fmt.Sprintf(`SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _prompt, %s AS _last_active
			FROM sessions s LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash %s
			ORDER BY _last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?`, lastActiveSQL("s"), f.sql())
		if err := tx.Raw(q, append(f.args, limit, offset)...).Scan(&rows).Error; err != nil {
			return nil, err
		}
		out := make([]RichSession, len(rows))
		for i := range rows {
			out[i] = rows[i].toRich(false)
		}
		return out, nil
	})
}

func (r *listingRepo) CountEmpty(ctx context.Context) (int64, error) {
	return Read(ctx, r.db, "listing.count_empty", func(tx *gorm.DB) (int64, error) {
		var n int64
		err := tx.Raw(`SELECT COUNT(*) FROM sessions WHERE message_count = 0 AND ended_at IS NOT NULL AND archived = 0
			AND NOT EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id)`).Scan(&n).Error
		return n, err
	})
}

// explainKey carries the plans an Explain collects through the context.
type explainKey struct{}

// explainInto appends the plan of q to the collector of tx's context, if
// any (Listing.Explain).
func explainInto(tx *gorm.DB, q string, args []any) error {
	ctx := tx.Statement.Context
	if ctx == nil {
		return nil
	}
	plans, ok := ctx.Value(explainKey{}).(*[]Plan)
	if !ok {
		return nil
	}
	prefix, col := "EXPLAIN QUERY PLAN ", 3
	if isPostgres(tx) {
		prefix, col = "EXPLAIN ", 0
	}
	rows, err := queryRows(tx, prefix+q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	p := Plan{SQL: q}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if col < len(vals) {
			switch v := vals[col].(type) {
			case []byte:
				p.Lines = append(p.Lines, string(v))
			default:
				p.Lines = append(p.Lines, fmt.Sprint(v))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	*plans = append(*plans, p)
	return nil
}

func (r *listingRepo) Explain(ctx context.Context, opt RichOptions) ([]Plan, error) {
	var plans []Plan
	_, err := r.Rich(context.WithValue(ctx, explainKey{}, &plans), opt)
	return plans, err
}
