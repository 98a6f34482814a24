package repo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
)

// ExportFilter selects the sessions ExportAll writes. The zero value is
// every session (children and archived ones included), like Hermes'
// export_all.
type ExportFilter struct {
	// Source, else Sources, keeps sessions of those sources.
	Source  string
	Sources []string
	// ExcludeSources drops sessions of these sources.
	ExcludeSources []string
	// StartedAfter / StartedBefore bound started_at (epoch seconds; 0 = no bound).
	StartedAfter, StartedBefore float64
	// Limit caps the number of sessions (0 = no cap).
	Limit int
}

// Progress is called as a long operation advances: done of total units
// (sessions for export, lines for import, sessions for prune). It must be
// cheap; it runs on the caller's goroutine.
type Progress func(done, total int64)

// ImportResult says what Import did.
type ImportResult struct {
	// Sessions imported; Skipped sessions whose id already existed.
	Sessions, Skipped int64
	// Messages imported (skipped sessions' messages are not counted).
	Messages int64
	// Detached sessions imported without their parent (parent_session_id
	// NULL): the parent was in neither the store nor the file, was the
	// session itself, or would have closed a loop of parents. Each is in
	// Changes with its reason.
	Detached int64
	// Adjusted counts values the import changed to what the API would
	// store (a timestamp outside the sane window set to now, a title
	// sanitized); counters are always recomputed and not counted here.
	Adjusted int64
	// Refused lists the lines not imported because the API would refuse
	// what they hold (or they are not JSON), in line order. Import then
	// returns an ErrInvalid error naming them.
	Refused []ImportRefusal `json:"refused,omitempty"`
	// Changes lists what the import changed of the sessions it stored, so
	// as to store what the API would (a parent left out, a tool_calls
	// value that is not JSON stored as NULL, a title another session holds
	// numbered), line by line with the reason (ImportChange).
	Changes []ImportChange `json:"changes,omitempty"`
}

// ImportChange is one change an import made to a session it stored: the
// line, the session id and what changed, in words.
type ImportChange struct {
	Line    int64  `json:"line"`
	Session string `json:"session"`
	Change  string `json:"change"`
}

// ChangedSessions returns how many sessions Changes names.
func (r ImportResult) ChangedSessions() int64 {
	seen := map[string]bool{}
	for _, c := range r.Changes {
		seen[c.Session] = true
	}
	return int64(len(seen))
}

// change records a change of session id from line.
func (r *ImportResult) change(line int64, id, what string) {
	r.Changes = append(r.Changes, ImportChange{Line: line, Session: id, Change: what})
}

// ImportRefusal is a line of an import that was not imported, and why.
type ImportRefusal struct {
	Line   int64  `json:"line"`
	Reason string `json:"reason"`
}

// Portability exports sessions (JSONL for machines, Markdown for people)
// and imports the JSONL into another store.
type Portability interface {
	// Session returns Hermes' export_session(id): the session dict
	// (system_prompt resolved) with a "messages" key holding its active
	// messages. ErrNotFound when the session does not exist.
	Session(ctx context.Context, id string) (*ExportedSession, error)
	// WriteJSONL writes one session per line (the Session dict) to w, newest
	// last_active first, streaming messages row by row: memory stays
	// bounded by one message, whatever the store's size. It returns the
	// number of sessions written. ids, when not empty, exports exactly
	// those sessions (ErrNotFound for a missing one) instead of the filter.
	WriteJSONL(ctx context.Context, w io.Writer, f ExportFilter, ids []string, p Progress) (int64, error)
	// WriteMarkdown writes the same selection as readable Markdown.
	WriteMarkdown(ctx context.Context, w io.Writer, f ExportFilter, ids []string, p Progress) (int64, error)
	// Import reads JSONL written by WriteJSONL (or Hermes-shaped dicts with
	// the same keys; one session per line, blank lines ignored) and stores
	// the sessions whose ids do not exist yet, with their messages and ids
	// preserved (a message id already taken gets a new one). The rules of
	// the API apply (checkSessionRow, importValues): out-of-range
	// timestamps become now, titles are sanitized, flags are 0 or 1,
	// message_count and tool_call_count are counted from the imported rows.
	// A parent missing from both the store and the file is detached. An
	// input that can be read twice (a file) is imported in ascending
	// message id order, whatever the order of its lines (an export lists
	// the newest first), so the store grows as the original did; any other
	// reader in file order. Each session is stored in one transaction (row,
	// messages): a refused line (not JSON, longer than MaxImportLineBytes,
	// or holding what the API refuses) leaves nothing of its session and
	// the other lines are imported; the result lists the refused lines and
	// the error, ErrInvalid, names them with their line numbers, so
	// importing the corrected file again completes it. A line over the cap
	// in a reader that cannot be read twice ends the import there. Any
	// other failure (storage, context) stops the import; the sessions
	// imported before it stay.
	Import(ctx context.Context, r io.Reader, p Progress) (ImportResult, error)
	// Lineage returns Hermes' export_session_lineage(id): the compression
	// lineage id belongs to as one logical session -- the newest segment's
	// dict with "segments" (each segment's Session export, root first),
	// "lineage_session_ids", every segment's messages in order and their
	// total as message_count (export_lineage.go). A missing session is
	// ErrNotFound, where Hermes returns None: the Go call keeps the error
	// every call that asks for one row returns (the CLI exits 1 on it);
	// errors.Is(err, ErrNotFound) is Hermes' None.
	Lineage(ctx context.Context, id string) (*ExportedLineage, error)
}

// ExportedSession is one exported session: the session row and its active
// messages, marshalled as one flat JSON object.
type ExportedSession struct {
	models.Session
	Messages []models.Message `json:"messages"`
}

type portRepo struct{ db *DB }

// NewPortability returns the GORM implementation of Portability.
func NewPortability(db *DB) Portability { return &portRepo{db} }

func (r *portRepo) Session(ctx context.Context, id string) (*ExportedSession, error) {
	const op = "export.session"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*ExportedSession, error) {
		s, err := getSession(tx, id)
		if err != nil {
			return nil, err
		}
		if err := resolvePrompt(tx, s); err != nil {
			return nil, err
		}
		s.LiftMarkers()
		ms, err := listActive(tx, op, id)
		if err != nil {
			return nil, err
		}
		return &ExportedSession{Session: *s, Messages: ms}, nil
	})
}

// exportIDs returns the ids to export in order (ids only: the sessions
// and their messages are then read one at a time).
type exportRef struct {
	ID         string
	LastActive *float64
}

func (r *portRepo) exportIDs(ctx context.Context, op string, f ExportFilter, ids []string) ([]exportRef, error) {
	if len(ids) > 0 {
		for _, id := range ids {
			if err := checkID(op, id); err != nil {
				return nil, err
			}
		}
		return Read(ctx, r.db, op, func(tx *gorm.DB) ([]exportRef, error) {
			out := make([]exportRef, 0, len(ids))
			for _, id := range ids {
				var refs []exportRef
				if err := tx.Raw(fmt.Sprintf("SELECT s.id, %s AS last_active FROM sessions s WHERE s.id = ?", lastActiveSQL("s")), id).Scan(&refs).Error; err != nil {
					return nil, err
				}
				if len(refs) == 0 {
					return nil, noSession(op, id)
				}
				out = append(out, refs[0])
			}
			return out, nil
		})
	}
	if err := checkSources(op, []string{f.Source}, f.Sources, f.ExcludeSources); err != nil {
		return nil, err
	}
	q := &filter{}
	include := f.Sources
	if f.Source != "" {
		include = []string{f.Source}
	}
	if len(include) > 0 {
		q.add("s.source IN ("+placeholders(len(include))+")", anySlice(include)...)
	}
	if len(f.ExcludeSources) > 0 {
		q.add("s.source NOT IN ("+placeholders(len(f.ExcludeSources))+")", anySlice(f.ExcludeSources)...)
	}
	if f.StartedAfter > 0 {
		q.add("s.started_at >= ?", f.StartedAfter)
	}
	if f.StartedBefore > 0 {
		q.add("s.started_at < ?", f.StartedBefore)
	}
	sql := fmt.Sprintf(`SELECT s.id, %s AS last_active FROM sessions s %s ORDER BY last_active DESC, s.started_at DESC, s.id DESC`, lastActiveSQL("s"), q.sql())
	args := q.args
	if f.Limit > 0 {
		sql += " LIMIT ?"
		args = append(args, f.Limit)
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]exportRef, error) {
		out := []exportRef{}
		return out, tx.Raw(sql, args...).Scan(&out).Error
	})
}

// streamSession reads one session and calls each for its active messages
// in id order, one row at a time.
func (r *portRepo) streamSession(ctx context.Context, op, id string, head func(*models.Session) error, each func(*models.Message) error) error {
	_, err := Read(ctx, r.db, op, func(tx *gorm.DB) (struct{}, error) {
		s, err := getSession(tx, id)
		if err != nil {
			return struct{}{}, err
		}
		if err := resolvePrompt(tx, s); err != nil {
			return struct{}{}, err
		}
		s.LiftMarkers()
		if err := head(s); err != nil {
			return struct{}{}, err
		}
		// database/sql rows scanned into reused variables (export_fast.go):
		// GORM's per-row ScanRows cost ~4 KB and most of the time per message.
		rows, err := tx.Raw("SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", id).Rows()
		if err != nil {
			return struct{}{}, err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return struct{}{}, err
		}
		sc := newMsgScanner(cols)
		var m models.Message
		for rows.Next() {
			if err := sc.scan(rows, &m); err != nil {
				return struct{}{}, err
			}
			if err := each(&m); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, rows.Err()
	})
	return err
}

// writeErr marks an error of the destination writer (never retried).
type writeErr struct{ err error }

func (e writeErr) Error() string { return e.err.Error() }
func (e writeErr) Unwrap() error { return e.err }

func (r *portRepo) WriteJSONL(ctx context.Context, w io.Writer, f ExportFilter, ids []string, p Progress) (int64, error) {
	const op = "export.jsonl"
	order, err := r.exportIDs(ctx, op, f, ids)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	encode := func(v any) ([]byte, error) {
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	var n int64
	var line []byte // one message's JSON, reused
	for _, ref := range order {
		first := true
		err := r.streamSession(ctx, op, ref.ID, func(s *models.Session) error {
			b, err := encode(s)
			if err != nil {
				return err
			}
			// The session object, reopened to append last_active (as Hermes'
			// export_all rows carry it) and the messages key.
			if _, err := bw.Write(b[:len(b)-1]); err != nil {
				return writeErr{err}
			}
			la, _ := json.Marshal(ref.LastActive)
			_, err = bw.WriteString(`,"last_active":` + string(la) + `,"messages":[`)
			return wrapW(err)
		}, func(m *models.Message) error {
			var err error
			line = line[:0]
			if !first {
				line = append(line, ',')
			}
			if line, err = appendMessageJSON(line, m); err != nil {
				return err
			}
			first = false
			_, err = bw.Write(line)
			return wrapW(err)
		})
		if err != nil {
			return n, exportErr(op, err)
		}
		if _, err := bw.WriteString("]}\n"); err != nil {
			return n, exportErr(op, writeErr{err})
		}
		n++
		if p != nil {
			p(n, int64(len(order)))
		}
	}
	return n, exportErr(op, wrapW(bw.Flush()))
}

func wrapW(err error) error {
	if err == nil {
		return nil
	}
	return writeErr{err}
}

func exportErr(op string, err error) error {
	var we writeErr
	if err == nil {
		return nil
	}
	if errorsAs(err, &we) {
		return errs.Wrap(errs.ErrStorage, op, we.err, "cannot write the export: "+we.err.Error())
	}
	return err
}

func (r *portRepo) WriteMarkdown(ctx context.Context, w io.Writer, f ExportFilter, ids []string, p Progress) (int64, error) {
	const op = "export.markdown"
	order, err := r.exportIDs(ctx, op, f, ids)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var n int64
	for _, ref := range order {
		err := r.streamSession(ctx, op, ref.ID, func(s *models.Session) error {
			title := ptr.Deref(s.Title)
			if title == "" {
				title = s.ID
			}
			fmt.Fprintf(bw, "# %s\n\n", mdLine(title))
			fmt.Fprintf(bw, "- id: `%s`\n- source: %s\n- started: %s\n", s.ID, mdLine(s.Source), s.StartedAt.Time().Format(time.RFC3339))
			if s.EndedAt != nil {
				fmt.Fprintf(bw, "- ended: %s (%s)\n", s.EndedAt.Time().Format(time.RFC3339), mdLine(ptr.Deref(s.EndReason)))
			}
			if s.Model != nil {
				fmt.Fprintf(bw, "- model: %s\n", mdLine(*s.Model))
			}
			if s.ParentSessionID != nil {
				fmt.Fprintf(bw, "- parent: `%s`\n", *s.ParentSessionID)
			}
			fmt.Fprintf(bw, "- messages: %d, tokens in/out: %d / %d\n\n", s.MessageCount, s.InputTokens, s.OutputTokens)
			_, err := bw.WriteString("")
			return wrapW(err)
		}, func(m *models.Message) error {
			head := m.Role
			if m.ToolName != nil {
				head += " (" + *m.ToolName + ")"
			}
			fmt.Fprintf(bw, "## %s · %s\n\n", mdLine(head), m.Timestamp.Time().Format(time.RFC3339))
			if text := m.ContentText(); text != "" {
				bw.WriteString(text)
				bw.WriteString("\n\n")
			}
			if !m.ToolCalls.IsNull() {
				var calls []models.ToolCall
				if m.ToolCalls.Decode(&calls) == nil {
					for _, c := range calls {
						fmt.Fprintf(bw, "- tool call `%s`: `%s`\n", mdLine(c.Function.Name), mdLine(c.Function.Arguments))
					}
					bw.WriteString("\n")
				}
			}
			return nil
		})
		if err != nil {
			return n, exportErr(op, err)
		}
		n++
		if p != nil {
			p(n, int64(len(order)))
		}
	}
	return n, exportErr(op, wrapW(bw.Flush()))
}

func mdLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "`", "'").Replace(s)
}
