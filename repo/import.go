package repo

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// MaxImportLineBytes is the longest line Import reads: one session with all
// its messages. A longer line is refused (ErrInvalid naming the line) before
// it is read whole, so an import's memory stays bounded by a small multiple
// of this, whatever the file holds.
const MaxImportLineBytes = 256 << 20

// importLineCap is MaxImportLineBytes; tests lower it.
var importLineCap int64 = MaxImportLineBytes

// lineTooLong is the refusal of a line over the cap.
type lineTooLong struct{ line, limit int64 }

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("line %d is longer than %s, the import limit (one session per line, messages included)", e.line, mib(e.limit))
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// importBatch is the number of messages per multi-row INSERT while
// importing (all of a session's INSERTs run in one transaction).
const importBatch = 500

// maxRefusalsSaid is how many refused lines Import's error spells out.
const maxRefusalsSaid = 3

// importLine is one non-blank line of an import file: where it lies, its
// 1-based number, and the lowest message id it holds (0: none), the key
// it is imported in order of.
type importLine struct {
	no, off, n, key int64
}

// seekableInput is an input Import can read twice (a file, not a pipe).
type seekableInput interface {
	io.ReaderAt
	io.Seeker
}

func (r *portRepo) Import(ctx context.Context, rd io.Reader, p Progress) (ImportResult, error) {
	const op = "import"
	im := &importer{r: r, ctx: ctx, op: op, pending: map[string]pendingParent{}, p: p}
	var err error
	if in, ok := rd.(seekableInput); ok {
		if size, serr := in.Seek(0, io.SeekEnd); serr == nil {
			err = im.sorted(in, size)
		} else {
			err = im.stream(rd)
		}
	} else {
		err = im.stream(rd)
	}
	if err == nil {
		err = im.reattach()
	}
	if r.db.Dialect == Postgres && im.res.Sessions > 0 {
		// Statistics for what was loaded (also after a failure: what was
		// committed stays): autovacuum may be off or late.
		if aerr := r.db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return AnalyzePostgres(tx, importAnalyzed)
		}); aerr != nil && err == nil {
			err = mapErr(op, aerr)
		}
	}
	if err != nil {
		return im.res, err
	}
	return im.res, im.refusedErr()
}

// importAnalyzed are the tables an import into PostgreSQL analyzes at its
// end.
var importAnalyzed = append([]string{"sessions", "messages", "system_prompts", "session_model_usage"}, AnalyzedTables...)

// pendingParent is the parent of an imported session that was not in the
// store when the session was (it was stored detached), and the line the
// session came from.
type pendingParent struct {
	parent string
	line   int64
}

// importer is one run of Import.
type importer struct {
	r       *portRepo
	ctx     context.Context
	op      string
	pending map[string]pendingParent // child id → its parent not (yet) in the store
	res     ImportResult
	p       Progress
	done    int64
	first   error // the first refusal's error
}

// sorted imports a file it can read twice: a first pass finds its lines
// and the lowest message id of each (and refuses lines over the cap or not
// JSON), the second imports them in ascending id order. An export lists
// the newest session first: stored in that order, every session's rows go
// before the rows already stored, B-tree pages split half-full and the
// file grows by about a third; in id order each insert appends.
func (im *importer) sorted(in io.ReaderAt, size int64) error {
	lines, err := im.scanLines(in, size)
	if err != nil {
		return err
	}
	keyed := lines[:0]
	for _, l := range lines {
		if err := im.ctx.Err(); err != nil {
			return err
		}
		key, err := lineKey(io.NewSectionReader(in, l.off, l.n))
		if err != nil {
			im.refuse(l.no, notJSON(im.op, l.no, err))
			continue
		}
		l.key = key
		keyed = append(keyed, l)
	}
	sort.SliceStable(keyed, func(i, j int) bool { return keyed[i].key < keyed[j].key })
	for _, l := range keyed {
		if err := im.line(io.NewSectionReader(in, l.off, l.n), l.no, int64(len(keyed))); err != nil {
			return err
		}
	}
	return nil
}

// scanLines finds the non-blank lines of in; a line over the cap is
// refused and skipped.
func (im *importer) scanLines(in io.ReaderAt, size int64) ([]importLine, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(in, 0, size), 64<<10)
	var lines []importLine
	var off, no int64
	for {
		if err := im.ctx.Err(); err != nil {
			return nil, err
		}
		no++
		start, blank := off, true
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			off += int64(len(chunk))
			if blank && len(bytes.TrimSpace(chunk)) > 0 {
				blank = false
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		switch n := off - start; {
		case blank:
		case n > importLineCap+1 || (n == importLineCap+1 && err == io.EOF):
			im.refuse(no, errs.Errorf(errs.ErrInvalid, im.op, "%s", (&lineTooLong{line: no, limit: importLineCap}).Error()))
		default:
			lines = append(lines, importLine{no: no, off: start, n: n})
		}
		if err == io.EOF {
			return lines, nil
		}
	}
}

// lineKey reads one session object and returns the lowest positive
// message id it holds (0 for none); an error when the line is not one
// JSON object. Messages are decoded one at a time, so memory stays
// bounded by the largest message.
func lineKey(r io.Reader) (int64, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil {
		return 0, err
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return 0, errors.New("expected a JSON object")
	}
	var key int64
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return 0, err
		}
		if k != "messages" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, err
			}
			continue
		}
		t, err := dec.Token()
		if err != nil {
			return 0, err
		}
		if t == nil {
			continue
		}
		if d, ok := t.(json.Delim); !ok || d != '[' {
			return 0, errors.New("messages must be a list")
		}
		for dec.More() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if err := dec.Decode(&m); err != nil {
				return 0, err
			}
			if id, err := strconv.ParseInt(string(m.ID), 10, 64); err == nil && id > 0 && (key == 0 || id < key) {
				key = id
			}
		}
		if _, err := dec.Token(); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, errors.New("more than one JSON value on the line")
	}
	return key, nil
}

// stream imports an input it can read once, line by line in file order;
// a line over the cap ends it (refused; its end is not known without
// reading it whole, so the rest of the input is not read).
func (im *importer) stream(rd io.Reader) error {
	lc := &lineCapReader{r: rd, max: importLineCap}
	br := bufio.NewReaderSize(lc, 64<<10)
	var buf []byte
	for no := int64(1); ; no++ {
		if err := im.ctx.Err(); err != nil {
			return err
		}
		buf = buf[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			buf = append(buf, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		var lt *lineTooLong
		switch {
		case errors.As(err, &lt):
			im.refuse(lt.line, errs.Errorf(errs.ErrInvalid, im.op, "%s; the input after it was not read", lt.Error()))
			return nil
		case err != nil && err != io.EOF:
			return errs.Wrap(errs.ErrStorage, im.op, err, fmt.Sprintf("cannot read line %d: %v", no, err))
		}
		if len(bytes.TrimSpace(buf)) > 0 {
			if _, kerr := lineKey(bytes.NewReader(buf)); kerr != nil {
				im.refuse(no, notJSON(im.op, no, kerr))
			} else if err := im.line(bytes.NewReader(buf), no, 0); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// lineCapReader passes r through and fails once a line grows past max
// bytes, so a reader of it never buffers more than that of one line.
type lineCapReader struct {
	r         io.Reader
	max       int64
	line, cur int64 // lines completed, bytes of the current one so far
}

func (l *lineCapReader) Read(p []byte) (int, error) {
	if room := l.max - l.cur + 1; int64(len(p)) > room {
		p = p[:room] // never read more than one byte past the cap
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			l.cur += int64(n - i)
			break
		}
		l.cur += int64(j)
		if l.cur > l.max {
			break
		}
		l.line++
		l.cur = 0
		i += j + 1
	}
	if l.cur > l.max {
		return 0, &lineTooLong{line: l.line + 1, limit: l.max}
	}
	return n, err
}

// notJSON is the refusal of a line that is not one JSON object.
func notJSON(op string, no int64, err error) error {
	return errs.Wrap(errs.ErrInvalid, op, err, fmt.Sprintf("line %d: not a JSON session object: %v", no, err))
}

// line imports the session object of line no, which lineKey read
// without error. A refusal (ErrInvalid) is recorded and the import goes
// on; any other error stops it.
func (im *importer) line(r io.Reader, no, total int64) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	err := im.r.importOne(im.ctx, im.op, dec, no, im.pending, &im.res)
	switch {
	case err == nil:
	case errors.Is(err, errs.ErrInvalid):
		im.refuse(no, err)
	default:
		return err
	}
	im.done++
	if im.p != nil {
		im.p(im.done, total)
	}
	return nil
}

// refuse records a refused line.
func (im *importer) refuse(no int64, err error) {
	if im.first == nil {
		im.first = err
	}
	reason := err.Error()
	var e *errs.Error
	if errors.As(err, &e) && e.Msg != "" {
		reason = e.Msg
	}
	im.res.Refused = append(im.res.Refused, ImportRefusal{Line: no, Reason: reason})
}

// refusedErr is the ErrInvalid error naming the refused lines (nil when
// none): the first few with their reasons, on one line.
func (im *importer) refusedErr() error {
	rs := im.res.Refused
	if len(rs) == 0 {
		return nil
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Line < rs[j].Line })
	var b strings.Builder
	if len(rs) > 1 {
		fmt.Fprintf(&b, "%d lines refused: ", len(rs))
	}
	for i, r := range rs[:min(len(rs), maxRefusalsSaid)] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r.Reason)
	}
	if len(rs) > maxRefusalsSaid {
		fmt.Fprintf(&b, "; and %d more (lines %s)", len(rs)-maxRefusalsSaid, lineList(rs[maxRefusalsSaid:]))
	}
	fmt.Fprintf(&b, " (the other lines: %d imported, %d already stored; importing the corrected file again skips them)", im.res.Sessions, im.res.Skipped)
	return errs.Wrap(errs.ErrInvalid, im.op, im.first, b.String())
}

// lineList is "4, 9, 12" (at most 20 numbers, then "...").
func lineList(rs []ImportRefusal) string {
	var b strings.Builder
	for i, r := range rs {
		if i == 20 {
			b.WriteString(", ...")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(r.Line, 10))
	}
	return b.String()
}

// reattach re-attaches children whose parent arrived later in the file,
// except where the parent's own chain of parents leads back to the child:
// that parent would close a loop (every session of a loop vanishes from
// Hermes' listings, which start from sessions without a parent), so the
// child stays detached and the change is recorded.
func (im *importer) reattach() error {
	children := make([]string, 0, len(im.pending))
	for child := range im.pending {
		children = append(children, child)
	}
	sort.Slice(children, func(i, j int) bool { return im.pending[children[i]].line < im.pending[children[j]].line })
	for _, child := range children {
		p := im.pending[child]
		var loop []string
		var found, attached bool
		err := im.r.db.Write(im.ctx, sqlitex.Routine, im.op, func(tx *gorm.DB) error {
			loop, found, attached = nil, false, false
			var err error
			if found, err = sessionExists(tx, p.parent); err != nil || !found {
				return err
			}
			if loop, err = parentLoop(tx, child, p.parent); err != nil || loop != nil {
				return err
			}
			attached = true
			return tx.Model(&models.Session{}).Where("id = ?", child).Update("parent_session_id", p.parent).Error
		})
		if err != nil {
			return err
		}
		if attached {
			delete(im.pending, child)
			continue
		}
		if found {
			im.res.change(p.line, child, fmt.Sprintf("its parent %s would close a loop of parents (%s → %s): imported without a parent", p.parent, child, strings.Join(loop, " → ")))
		} else {
			im.res.change(p.line, child, fmt.Sprintf("its parent %s is in neither the store nor the file: imported without a parent", p.parent))
		}
		im.res.Detached++
	}
	return nil
}

// maxParentWalk bounds a walk up a chain of parents.
const maxParentWalk = 1 << 20

// parentLoop reports whether making parent the parent of child would close
// a loop: it walks up from parent and returns the sessions passed on the
// way back to child (parent first, child last), or nil when the chain ends
// without meeting child (an existing loop elsewhere ends the walk too).
func parentLoop(tx *gorm.DB, child, parent string) ([]string, error) {
	seen := map[string]bool{}
	path := []string{}
	for cur := parent; len(path) < maxParentWalk; {
		path = append(path, cur)
		if cur == child {
			return path, nil
		}
		if seen[cur] {
			return nil, nil
		}
		seen[cur] = true
		var ps []sql.NullString
		if err := tx.Model(&models.Session{}).Where("id = ?", cur).Limit(1).Pluck("parent_session_id", &ps).Error; err != nil {
			return nil, err
		}
		if len(ps) == 0 || !ps[0].Valid {
			return nil, nil
		}
		cur = ps[0].String
	}
	return nil, nil
}

// importMsg is an exported message: the row plus content as JSON (a
// string, null, or a list of multimodal parts).
type importMsg struct {
	models.Message
	Content json.RawMessage `json:"content"`
	// Active defaults to 1 when the key is absent.
	Active *int64 `json:"active"`
}

// importRow is a message ready to insert: its id in the file (0 = none)
// and its column values in messageInsertCols order. Messages are turned
// into rows as they are decoded, so a session in memory is held once.
type importRow struct {
	id   int64
	vals []any
}

// importOne reads the rest of one session object (after '{'): its fields,
// then its messages, and stores the session with all its messages in ONE
// write transaction, so a failure (bad message, full disk, lock budget
// exhausted) leaves nothing of the session and a later import of the same
// file stores it whole. The session's messages are held in memory until
// that transaction (memory is bounded by the line cap, not by the file); a
// session whose id already exists is decoded and discarded message by
// message without being kept.
func (r *portRepo) importOne(ctx context.Context, op string, dec *json.Decoder, line int64, pending map[string]pendingParent, res *ImportResult) error {
	if tok, err := dec.Token(); err != nil {
		return errs.Wrap(errs.ErrInvalid, op, err, fmt.Sprintf("line %d: not JSON: %v", line, err))
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errs.Errorf(errs.ErrInvalid, op, "line %d: expected a JSON object", line)
	}
	d := &importSession{r: r, ctx: ctx, op: op, dec: dec, line: line, fields: map[string]json.RawMessage{}}
	if err := d.read(); err != nil {
		return err
	}
	if d.skip {
		res.Skipped++
		return nil
	}
	exists, missingParent, retitled, err := r.storeImported(ctx, op, d.sess, d.rows)
	if errors.Is(err, errs.ErrConflict) {
		// The session collides with a stored row in a way the import
		// does not resolve: this line is refused, the others go on.
		return d.bad(err, "")
	}
	if err != nil {
		return err
	}
	if retitled != "" {
		d.changes = append(d.changes, retitled)
	}
	if exists {
		res.Skipped++
		return nil
	}
	if missingParent != "" {
		pending[d.sess.ID] = pendingParent{parent: missingParent, line: line}
	}
	for _, c := range d.changes {
		res.change(line, d.sess.ID, c)
	}
	if d.detached {
		res.Detached++
	}
	res.Sessions++
	res.Messages += int64(len(d.rows))
	res.Adjusted += d.adjusted
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
	rows        []importRow
	sawMessages bool
	now         models.Epoch
	adjusted    int64
	// changes says, in words, what the import changed of this session to
	// store what the API would (a parent that is the session itself, a
	// tool_calls value that is not JSON).
	changes []string
	// detached: the session is stored without its parent (it was its own).
	detached bool
}

// bad is an ErrInvalid error about this session: "line N: what: cause"
// (what or the cause may be absent).
func (d *importSession) bad(err error, what string) error {
	msg := fmt.Sprintf("line %d", d.line)
	if id := d.id(); id != "" {
		msg += " (session " + id + ")"
	}
	if what != "" {
		msg += ": " + what
	}
	var e *errs.Error
	switch {
	case errors.As(err, &e) && e.Msg != "":
		msg += ": " + e.Msg
	case err != nil:
		msg += ": " + err.Error()
	}
	return errs.Wrap(errs.ErrInvalid, d.op, err, msg)
}

// id is the session id of the object, as far as it was read ("" when
// unknown), quoted when it is not a valid id.
func (d *importSession) id() string {
	id := ""
	if d.sess != nil {
		id = d.sess.ID
	} else if raw, ok := d.fields["id"]; ok && json.Unmarshal(raw, &id) != nil {
		return ""
	}
	if id != "" && checkID(d.op, id) != nil {
		return strconv.Quote(id)
	}
	return id
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
	if err := d.prepare(); err != nil {
		return err
	}
	d.count()
	return nil
}

// readMessages reads the value of "messages": a list (or null), each
// message turned into its row at once, unless the session is skipped.
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
	for n := 1; dec.More(); n++ {
		if d.skip {
			var discard json.RawMessage
			if err := dec.Decode(&discard); err != nil {
				return d.bad(err, "bad message")
			}
			continue
		}
		var m importMsg
		if err := dec.Decode(&m); err != nil {
			return d.bad(err, fmt.Sprintf("message %d: not a message object", n))
		}
		if !m.Timestamp.Sane() {
			m.Timestamp = d.now
			d.adjusted++
		}
		vals, changed, err := importValues(d.sess.ID, &m)
		if err != nil {
			return d.bad(err, fmt.Sprintf("message %d", n))
		}
		for _, c := range changed {
			d.changes = append(d.changes, fmt.Sprintf("message %d: %s", n, c))
		}
		d.rows = append(d.rows, importRow{id: m.ID, vals: vals})
	}
	if _, err := dec.Token(); err != nil {
		return d.bad(err, "unterminated messages")
	}
	return nil
}

// prepare decodes the session from its fields, once, applies the rules
// the API applies to the same values (checkSessionRow), and checks whether
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
	d.now = models.Now()
	n, err := checkSessionRow(d.op, &s, d.now)
	if err != nil {
		return d.bad(err, "")
	}
	d.adjusted += n
	if s.ParentSessionID != nil && *s.ParentSessionID == s.ID {
		// The API refuses a session that is its own parent; an import
		// keeps the session and leaves the parent out, as it does for a
		// missing parent.
		s.ParentSessionID = nil
		d.detached = true
		d.changes = append(d.changes, "its parent is itself: imported without a parent")
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

// count sets the session's counters from its imported rows. message_count
// is the number of rows. tool_call_count follows the append path's rule
// (hooks.bumpCounters: the tool calls of every row that is not a tool
// result), except that the file's value is kept when it agrees with the
// rows under Hermes' v1-v2 rule (one per tool-related row), the two rules
// doctor accepts. A file's counters are otherwise not trusted: they count
// rows the export did not carry (inactive ones) or were edited.
func (d *importSession) count() {
	if d.skip || d.sess == nil {
		return
	}
	var tc, tcOld int64
	for _, r := range d.rows {
		calls, _ := r.vals[4].(string)
		if r.vals[1] == "tool" || calls != "" {
			tcOld++
		}
		if r.vals[1] != "tool" && calls != "" {
			tc += models.ToolCallCount(models.JSON(calls))
		}
	}
	d.sess.MessageCount = int64(len(d.rows))
	if d.sess.ToolCallCount != tcOld || tcOld == tc {
		d.sess.ToolCallCount = tc
	}
}

// storeImported stores sess with all its rows in one write transaction.
// exists reports a session stored meanwhile (nothing written);
// missingParent is the parent id not in the store (see insertImported);
// retitled says how the title was changed because another session holds
// it (see freeTitle), "" when it was not.
func (r *portRepo) storeImported(ctx context.Context, op string, sess *models.Session, rows []importRow) (exists bool, missingParent, retitled string, err error) {
	err = r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		exists, missingParent, retitled = false, "", ""
		ok, err := sessionExists(tx, sess.ID)
		if err != nil || ok {
			exists = ok
			return err
		}
		s := *sess // insertImported rewrites fields; a retry starts from the decoded row
		if retitled, err = r.freeTitle(tx, &s); err != nil {
			return err
		}
		if missingParent, err = insertImported(tx, &s); err != nil {
			return err
		}
		for i := 0; i < len(rows); i += importBatch {
			if err := insertImportedMessages(tx, rows[i:min(i+importBatch, len(rows))]); err != nil {
				return err
			}
		}
		return nil
	})
	return exists, missingParent, retitled, err
}

// freeTitle gives s a title no other session holds: a title held by
// another session (titles are unique) becomes the next free numbered form
// of it, Hermes' rule for a title in use ("X" → "X #2", see nextTitleIn),
// or none when that form would be longer than MaxTitleLength. It returns
// the change in words, "" when the title was free.
func (r *portRepo) freeTitle(tx *gorm.DB, s *models.Session) (string, error) {
	if s.Title == nil {
		return "", nil
	}
	var holder []string
	if err := tx.Model(&models.Session{}).Where("title = ?", *s.Title).Limit(1).Pluck("id", &holder).Error; err != nil {
		return "", err
	}
	if len(holder) == 0 {
		return "", nil
	}
	was := *s.Title
	next, err := nextTitleIn(tx, r.db, was)
	if err != nil {
		return "", err
	}
	if clean, serr := SanitizeTitle(next); serr != nil || clean != next {
		s.Title, s.TitleSource = nil, nil
		return fmt.Sprintf("title %q is held by session %s, and numbered it would be too long: imported without a title", was, holder[0]), nil
	}
	s.Title = &next
	return fmt.Sprintf("title %q is held by session %s: imported as %q (Hermes' numbered-title rule)", was, holder[0], next), nil
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

// messageInsertCols are the columns Import writes (display_identity as
// Hermes writes it, models.DisplayIdentity; display_order is left to
// Hermes' display triggers). importValues and importSession.count depend on
// this order (role second, tool_calls fifth).
var messageInsertCols = []string{"session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "effect_disposition",
	"timestamp", "token_count", "finish_reason", "reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
	"codex_message_items", "platform_message_id", "observed", "_compressed_summary", "active", "compacted", "api_content",
	"display_kind", "display_metadata", "display_identity"}

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
// callbacks: the session's counters were set from the rows already). A
// row keeps its id unless another message already has it.
func insertImportedMessages(tx *gorm.DB, rows []importRow) error {
	ids := make([]int64, 0, len(rows))
	for _, m := range rows {
		if m.id > 0 {
			ids = append(ids, m.id)
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
	for _, m := range rows {
		if m.id > 0 && !taken[m.id] {
			taken[m.id] = true
			argsID = append(append(argsID, m.id), m.vals...)
			nID++
		} else {
			argsNo = append(argsNo, m.vals...)
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

// importValues turns a decoded message into its column values, with the
// rules every writer of a message obeys (checkMessageRow): content is a
// string, null or a list of parts (the API's Content and Parts), and a
// tool_calls string is the column's text (an export writes text that is
// not JSON that way), parsed as Hermes parses it. It returns the values,
// what was changed (in words) and the error naming the value refused.
func importValues(sessionID string, m *importMsg) ([]any, []string, error) {
	row := m.Message
	row.SessionID = sessionID
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
		row.Content = nil
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, nil, fmt.Errorf("content: %w", err)
		}
		row.Content = &s
	case c[0] == '[':
		b, err := pyjson.Canonical(c)
		if err != nil {
			return nil, nil, fmt.Errorf("content: not a list of parts Python can read: %w", err)
		}
		s := models.MultimodalPrefix + string(b)
		row.Content = &s
	default:
		return nil, nil, errs.Errorf(errs.ErrInvalid, "import", "content must be a string, null or a list of parts, not %s", jsonKind(c))
	}
	if tc := bytes.TrimSpace(row.ToolCalls); len(tc) > 0 && tc[0] == '"' {
		var s string
		if err := json.Unmarshal(tc, &s); err != nil {
			return nil, nil, fmt.Errorf("tool_calls: %w", err)
		}
		row.ToolCalls = models.JSON(s)
	}
	row.Active = 1
	if m.Active != nil {
		row.Active = *m.Active
	}
	changed, err := checkMessageRow("import", &row)
	if err != nil {
		return nil, nil, err
	}
	tc, err := pyText(row.ToolCalls)
	if err != nil {
		return nil, nil, fmt.Errorf("tool_calls: %w", err)
	}
	dm, err := pyText(row.DisplayMetadata)
	if err != nil {
		return nil, nil, fmt.Errorf("display_metadata: %w", err)
	}
	if s, ok := tc.(string); ok {
		row.ToolCalls = models.JSON(s)
	}
	var identity any
	if id := models.DisplayIdentity(&row); id != nil {
		identity = id
	}
	var content any
	if row.Content != nil {
		content = *row.Content
	}
	return []any{sessionID, row.Role, content, row.ToolCallID, tc, row.ToolName, row.EffectDisposition, float64(row.Timestamp), row.TokenCount,
		row.FinishReason, row.Reasoning, row.ReasoningContent, nullText(row.ReasoningDetails), nullText(row.CodexReasoningItems),
		nullText(row.CodexMessageItems), row.PlatformMessageID, row.Observed, row.CompressedSummary, row.Active, row.Compacted,
		row.APIContent, row.DisplayKind, dm, identity}, changed, nil
}

// jsonKind names the kind of the JSON value b ("an object", "a number",
// "true", ...).
func jsonKind(b []byte) string {
	switch b[0] {
	case '{':
		return "an object"
	case 't', 'f':
		return string(b)
	}
	return "a number"
}
