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
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
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
	// Detached sessions whose parent was in neither the store nor the file
	// (their parent_session_id is NULL).
	Detached int64
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
	// the same keys) and stores the sessions whose ids do not exist yet,
	// with their messages, counters and ids preserved (a message id already
	// taken gets a new one). A parent missing from both the store and the
	// file is detached. Each session is stored in one transaction (row,
	// messages): a failure leaves nothing of that session, so importing the
	// corrected file again completes it. ErrInvalid for malformed input (the
	// line number is in the message); sessions imported before it stay.
	Import(ctx context.Context, r io.Reader, p Progress) (ImportResult, error)
	// Lineage returns Hermes' export_session_lineage(id): the compression
	// lineage id belongs to as one logical session -- the newest segment's
	// dict with "segments" (each segment's Session export, root first),
	// "lineage_session_ids", every segment's messages in order and their
	// total as message_count (export_lineage.go). ErrNotFound when the
	// session does not exist.
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
					return nil, errs.Errorf(errs.ErrNotFound, op, "session %q does not exist", id)
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
			title := deref(s.Title)
			if title == "" {
				title = s.ID
			}
			fmt.Fprintf(bw, "# %s\n\n", mdLine(title))
			fmt.Fprintf(bw, "- id: `%s`\n- source: %s\n- started: %s\n", s.ID, mdLine(s.Source), s.StartedAt.Time().Format(time.RFC3339))
			if s.EndedAt != nil {
				fmt.Fprintf(bw, "- ended: %s (%s)\n", s.EndedAt.Time().Format(time.RFC3339), mdLine(deref(s.EndReason)))
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

// importBatch is the number of messages per multi-row INSERT while
// importing (all of a session's INSERTs run in one transaction).
const importBatch = 500

func (r *portRepo) Import(ctx context.Context, rd io.Reader, p Progress) (ImportResult, error) {
	const op = "import"
	var res ImportResult
	dec := json.NewDecoder(bufio.NewReaderSize(rd, 64<<10))
	dec.UseNumber()
	pending := map[string]string{} // child id → parent id not (yet) in the store
	line := int64(0)
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return res, errs.Wrap(errs.ErrInvalid, op, err, fmt.Sprintf("session %d: not JSON", line))
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return res, errs.Errorf(errs.ErrInvalid, op, "session %d: expected a JSON object", line)
		}
		if err := r.importOne(ctx, op, dec, line, pending, &res); err != nil {
			return res, err
		}
		if p != nil {
			p(line, 0)
		}
	}
	// Re-attach children whose parent arrived later in the file.
	for child, parent := range pending {
		err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
			ok, err := sessionExists(tx, parent)
			if err != nil || !ok {
				return err
			}
			delete(pending, child)
			return tx.Model(&models.Session{}).Where("id = ?", child).Update("parent_session_id", parent).Error
		})
		if err != nil {
			return res, err
		}
	}
	res.Detached = int64(len(pending))
	return res, nil
}

// importMsg is an exported message: the row plus content as JSON (a
// string, null, or a list of multimodal parts).
type importMsg struct {
	models.Message
	Content json.RawMessage `json:"content"`
	// Active defaults to 1 when the key is absent.
	Active *int64 `json:"active"`
}

// importOne reads the rest of one session object (after '{'): its fields,
// then its messages, and stores the session with all its messages in ONE
// write transaction, so a failure (bad message, full disk, lock budget
// exhausted) leaves nothing of the session and a later import of the same
// file stores it whole. The session's messages are held in memory until
// that transaction (memory is bounded by the largest session, not by the
// file); a session whose id already exists is decoded and discarded
// message by message without being kept.
func (r *portRepo) importOne(ctx context.Context, op string, dec *json.Decoder, line int64, pending map[string]string, res *ImportResult) error {
	d := &importSession{r: r, ctx: ctx, op: op, dec: dec, line: line, fields: map[string]json.RawMessage{}}
	if err := d.read(); err != nil {
		return err
	}
	if d.skip {
		res.Skipped++
		return nil
	}
	exists, missingParent, err := r.storeImported(ctx, op, d.sess, d.msgs)
	if err != nil {
		return err
	}
	if exists {
		res.Skipped++
		return nil
	}
	if missingParent != "" {
		pending[d.sess.ID] = missingParent
	}
	res.Sessions++
	res.Messages += int64(len(d.msgs))
	return nil
}

// importSession is one session object of an import being read: its
// fields (which must come before its messages), the session they decode to,
// and its messages, or skip when the session is already stored.
type importSession struct {
	r           *portRepo
	ctx         context.Context
	op          string
	dec         *json.Decoder
	line        int64
	fields      map[string]json.RawMessage
	sess        *models.Session
	skip        bool
	msgs        []importMsg
	sawMessages bool
}

// bad is an ErrInvalid error about this session.
func (d *importSession) bad(err error, what string) error {
	return errs.Wrap(errs.ErrInvalid, d.op, err, fmt.Sprintf("session %d: %s", d.line, what))
}

// read reads the rest of the session object (after '{') and its closing
// '}'.
func (d *importSession) read() error {
	dec := d.dec
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return d.bad(err, "not JSON")
		}
		key, ok := kt.(string)
		if !ok {
			return d.bad(nil, "expected a key")
		}
		if key == "messages" {
			if err := d.readMessages(); err != nil {
				return err
			}
			continue
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return d.bad(err, "bad value of "+key)
		}
		if d.sawMessages {
			return d.bad(nil, "session fields must come before messages")
		}
		d.fields[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return d.bad(err, "unterminated session")
	}
	return d.prepare()
}

// readMessages reads the value of "messages": a list (or null), kept in
// memory unless the session is skipped.
func (d *importSession) readMessages() error {
	dec := d.dec
	d.sawMessages = true
	if err := d.prepare(); err != nil {
		return err
	}
	if t, err := dec.Token(); err != nil {
		return d.bad(err, "bad messages")
	} else if delim, ok := t.(json.Delim); !ok || delim != '[' {
		if t == nil {
			return nil
		}
		return d.bad(nil, "messages must be a list")
	}
	for dec.More() {
		if d.skip {
			var discard json.RawMessage
			if err := dec.Decode(&discard); err != nil {
				return d.bad(err, "bad message")
			}
			continue
		}
		var m importMsg
		if err := dec.Decode(&m); err != nil {
			return d.bad(err, "bad message")
		}
		d.msgs = append(d.msgs, m)
	}
	if _, err := dec.Token(); err != nil {
		return d.bad(err, "unterminated messages")
	}
	return nil
}

// prepare decodes the session from its fields, once, and checks whether
// it is already stored.
func (d *importSession) prepare() error {
	if d.sess != nil || d.skip {
		return nil
	}
	b, _ := json.Marshal(d.fields)
	var s models.Session
	if err := json.Unmarshal(b, &s); err != nil {
		return d.bad(err, "bad session fields")
	}
	if err := checkID(d.op, s.ID); err != nil {
		return err
	}
	if err := checkName(d.op, "source", s.Source); err != nil {
		return err
	}
	// An early look (re-checked in the write transaction) so that the
	// messages of a session already stored are not kept in memory.
	exists, err := Read(d.ctx, d.r.db, d.op, func(tx *gorm.DB) (bool, error) { return sessionExists(tx, s.ID) })
	if err != nil {
		return err
	}
	d.skip = exists
	d.sess = &s
	return nil
}

// storeImported stores sess with all its msgs in one write transaction.
// exists reports a session stored meanwhile (nothing written);
// missingParent is the parent id not in the store (see insertImported).
func (r *portRepo) storeImported(ctx context.Context, op string, sess *models.Session, msgs []importMsg) (exists bool, missingParent string, err error) {
	err = r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		exists, missingParent = false, ""
		ok, err := sessionExists(tx, sess.ID)
		if err != nil || ok {
			exists = ok
			return err
		}
		s := *sess // insertImported rewrites fields; a retry starts from the decoded row
		if missingParent, err = insertImported(tx, &s); err != nil {
			return err
		}
		for i := 0; i < len(msgs); i += importBatch {
			if err := insertImportedMessages(tx, s.ID, msgs[i:min(i+importBatch, len(msgs))]); err != nil {
				return err
			}
		}
		return nil
	})
	return exists, missingParent, err
}

// insertImported writes the session row (and its system prompt). It
// returns the parent id when the parent is not in the store (the row is
// then written detached, parent_session_id NULL).
func insertImported(tx *gorm.DB, s *models.Session) (missingParent string, err error) {
	if s.ParentSessionID != nil {
		ok, err := sessionExists(tx, *s.ParentSessionID)
		if err != nil {
			return "", err
		}
		if !ok {
			missingParent = *s.ParentSessionID
			s.ParentSessionID = nil
		}
	}
	if s.SystemPromptHash != nil {
		if s.SystemPrompt != nil {
			row := models.SystemPromptRow{Hash: *s.SystemPromptHash, Prompt: *s.SystemPrompt}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
				return "", err
			}
			s.SystemPrompt = nil
		} else {
			s.SystemPromptHash = nil
		}
	}
	return missingParent, tx.Create(s).Error
}

// messageInsertCols are the columns Import writes (display_identity and
// display_order are left to Hermes' display triggers).
var messageInsertCols = []string{"session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "effect_disposition",
	"timestamp", "token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
	"codex_message_items", "platform_message_id", "observed", "_compressed_summary", "active", "compacted", "api_content",
	"display_kind", "display_metadata"}

func nullText(t []byte) any {
	if len(t) == 0 {
		return nil
	}
	return string(t)
}

func pyText(j models.JSON) (any, error) {
	if j.IsNull() {
		return nil, nil
	}
	b, err := pyjson.Canonical(j)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// insertImportedMessages writes rows with plain INSERTs (no GORM create
// callbacks: the session's counters were imported as they were). A row
// keeps its id unless another message already has it.
func insertImportedMessages(tx *gorm.DB, sessionID string, rows []importMsg) error {
	ids := make([]int64, 0, len(rows))
	for _, m := range rows {
		if m.ID > 0 {
			ids = append(ids, m.ID)
		}
	}
	taken := map[int64]bool{}
	if len(ids) > 0 {
		var got []int64
		if err := tx.Model(&models.Message{}).Where("id IN ?", ids).Pluck("id", &got).Error; err != nil {
			return err
		}
		for _, id := range got {
			taken[id] = true
		}
	}
	withID := "INSERT INTO messages (id, " + strings.Join(messageInsertCols, ", ") + ") VALUES "
	noID := "INSERT INTO messages (" + strings.Join(messageInsertCols, ", ") + ") VALUES "
	var argsID, argsNo []any
	var nID, nNo int
	for i := range rows {
		m := &rows[i]
		vals, err := importValues(sessionID, m)
		if err != nil {
			return errs.Wrap(errs.ErrInvalid, "import", err, fmt.Sprintf("message %d: bad JSON column", m.ID))
		}
		if m.ID > 0 && !taken[m.ID] {
			taken[m.ID] = true
			argsID = append(append(argsID, m.ID), vals...)
			nID++
		} else {
			argsNo = append(argsNo, vals...)
			nNo++
		}
	}
	tuple := func(n int) string { return "(" + placeholders(n) + ")" }
	if nID > 0 {
		q := withID + strings.TrimSuffix(strings.Repeat(tuple(len(messageInsertCols)+1)+", ", nID), ", ")
		if err := tx.Exec(q, argsID...).Error; err != nil {
			return err
		}
	}
	if nNo > 0 {
		q := noID + strings.TrimSuffix(strings.Repeat(tuple(len(messageInsertCols))+", ", nNo), ", ")
		if err := tx.Exec(q, argsNo...).Error; err != nil {
			return err
		}
	}
	return nil
}

func importValues(sessionID string, m *importMsg) ([]any, error) {
	var content any
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		content = s
	default:
		b, err := pyjson.Canonical(c)
		if err != nil {
			return nil, err
		}
		content = models.MultimodalPrefix + string(b)
	}
	if s, ok := content.(string); ok {
		if err := checkText("import", "content", s); err != nil {
			return nil, err
		}
	}
	tc, err := pyText(m.ToolCalls)
	if err != nil {
		return nil, err
	}
	dm, err := pyText(m.DisplayMetadata)
	if err != nil {
		return nil, err
	}
	active := int64(1)
	if m.Active != nil {
		active = *m.Active
	}
	role := m.Role
	if role == "" {
		return nil, fmt.Errorf("role is empty")
	}
	return []any{sessionID, role, content, m.ToolCallID, tc, m.ToolName, m.EffectDisposition, float64(m.Timestamp), m.TokenCount,
		m.FinishReason, m.Reasoning, m.ReasoningContent, nullText(m.ReasoningDetails), nullText(m.CodexReasoningItems),
		nullText(m.CodexMessageItems), m.PlatformMessageID, m.Observed, m.CompressedSummary, active, m.Compacted,
		m.APIContent, m.DisplayKind, dm}, nil
}
