package browse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/termtext"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Results of store calls. Each carries the sequence number (or
// conversation generation) of its request; Update drops stale ones.
type (
	listMsg struct {
		seq, offset int
		rows        []row
		more        bool
		err         error
	}
	sourcesMsg struct {
		sources []string
		err     error
	}
	debounceMsg struct{ seq int }
	searchMsg   struct {
		seq    int
		query  string
		offset int  // of the message hits (0: the first page)
		more   bool // more message hits match than were read
		rows   []row
		err    error
	}
	titleCheckMsg struct{ err error }
	sessionMsg    struct {
		gen int
		s   *models.Session
		err error
	}
	pageMsg struct {
		gen  int
		req  pageReq
		page repo.MessagePage
		err  error
	}
	jumpMsg struct {
		gen          int
		start, total int64
		err          error
	}
	exportMsg struct {
		path string
		same bool // a file with the same content was there: nothing written
		err  error
	}
	titleMsg struct {
		id, title string
		err       error
	}
)

// queryTimeout bounds every store call of the browser.
const queryTimeout = 30 * time.Second

func (m *Model) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, queryTimeout)
}

// listCmd reads one page of the session list: the pickers' rich listing
// (Hermes' list_sessions_rich: previews, last activity, compression chains
// shown as their live tip), newest started first. That order is the cheap
// one (5-12 ms on a 200k-message store against 15-41 ms ordered by last
// activity; BENCHMARKS.md), and the first paint waits for it.
func (m *Model) listCmd(seq, offset int) tea.Cmd {
	st, src, limit := m.opt.Store, m.source(), m.opt.ListPage
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		rs, err := st.Listing().Rich(ctx, repo.RichOptions{Source: src, Limit: limit, Offset: offset})
		if err != nil {
			return listMsg{seq: seq, offset: offset, err: err}
		}
		out := make([]row, 0, len(rs))
		for _, s := range rs {
			title := ""
			if s.Title != nil {
				title = *s.Title
			}
			out = append(out, row{id: s.ID, title: title, source: s.Source, when: s.LastActive,
				count: s.MessageCount, text: s.Preview})
		}
		return listMsg{seq: seq, offset: offset, rows: out, more: len(rs) == limit}
	}
}

// sourcesCmd reads the sources present, most sessions first.
func (m *Model) sourcesCmd() tea.Cmd {
	st := m.opt.Store
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		by, err := st.Usage().BySource(ctx, repo.StatsFilter{})
		if err != nil {
			return sourcesMsg{err: err}
		}
		out := make([]string, 0, len(by))
		for _, s := range by {
			if s.Source != "" {
				out = append(out, s.Source)
			}
		}
		return sourcesMsg{sources: out}
	}
}

func (m *Model) titleCheckCmd() tea.Cmd {
	check := m.opt.TitleCheck
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		return titleCheckMsg{err: check(ctx)}
	}
}

// searchLimit is the number of message hits a search reads at a time;
// scrolling to the end reads the next ones.
const searchLimit = 100

// titleLimit is the number of sessions found by title a search shows.
const titleLimit = 20

// searchCmd runs a search from the offset-th message hit and names each
// hit's session by its title. The first page starts with the sessions
// whose title holds the query (rows with role "title", opened at their
// start).
func (m *Model) searchCmd(ctx context.Context, seq int, query, src string, offset int) tea.Cmd {
	st := m.opt.Store
	return func() tea.Msg {
		var out []row
		if offset == 0 {
			rs, err := st.Listing().Rich(ctx, repo.RichOptions{Source: src, Limit: titleLimit, SearchQuery: query, OrderByLastActive: true})
			if err != nil {
				return searchMsg{seq: seq, query: query, err: err}
			}
			for _, r := range rs {
				if r.Title == nil || !titleHas(*r.Title, query) {
					continue // an id match: the search box is about words
				}
				out = append(out, row{id: r.ID, title: *r.Title, source: r.Source, when: r.LastActive, count: -1, role: "title",
					text: ">>>" + *r.Title + "<<<"})
			}
		}
		opt := repo.SearchOptions{Limit: searchLimit + 1, Offset: offset}
		if src != "" {
			opt.Sources = []string{src}
		}
		hits, err := st.Search().Messages(ctx, query, opt)
		if err != nil {
			return searchMsg{seq: seq, query: query, err: err}
		}
		more := len(hits) > searchLimit
		hits = hits[:min(len(hits), searchLimit)]
		titles := map[string]string{}
		for _, h := range hits {
			title, ok := titles[h.SessionID]
			if !ok {
				title, _ = st.Titles().Get(ctx, h.SessionID) // untitled on error: the hit still shows
				titles[h.SessionID] = title
			}
			r := row{id: h.SessionID, title: title, when: h.Timestamp, count: -1, role: h.Role, msgID: h.ID}
			if h.Source != nil {
				r.source = *h.Source
			}
			if h.Snippet != nil {
				r.text = *h.Snippet
			}
			out = append(out, r)
		}
		return searchMsg{seq: seq, query: query, offset: offset, more: more, rows: out}
	}
}

// titleHas reports whether title holds every word of query, case and
// punctuation aside (what Listing's SearchQuery matched on the title).
func titleHas(title, query string) bool {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, s)
	}
	t := norm(title)
	for _, w := range strings.Fields(query) {
		if !strings.Contains(t, norm(w)) {
			return false
		}
	}
	return strings.TrimSpace(query) != ""
}

func (m *Model) sessionCmd(gen int, id string) tea.Cmd {
	st := m.opt.Store
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		s, err := st.Sessions().Get(ctx, id)
		return sessionMsg{gen: gen, s: s, err: err}
	}
}

// jumpCmd finds where a message sits in its session (for opening a hit).
func (m *Model) jumpCmd(gen int, id string, msgID int64) tea.Cmd {
	st := m.opt.Store
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		p, err := st.Messages().Page(ctx, id, repo.PageOptions{AfterID: msgID - 1, Limit: 1})
		return jumpMsg{gen: gen, start: p.Start, total: p.Total, err: err}
	}
}

// pageReq asks for window number n of a conversation, by id from a
// neighbouring window when one is held, else by offset.
type pageReq struct {
	n                 int64
	afterID, beforeID int64
	size              int
}

func (m *Model) pageCmd(gen int, id string, req pageReq) tea.Cmd {
	st := m.opt.Store
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		opt := repo.PageOptions{Limit: req.size}
		switch {
		case req.afterID > 0:
			opt.AfterID = req.afterID
		case req.beforeID > 0:
			opt.BeforeID = req.beforeID
		default:
			opt.Offset = int(req.n) * req.size
		}
		p, err := st.Messages().Page(ctx, id, opt)
		return pageMsg{gen: gen, req: req, page: p, err: err}
	}
}

// exportCmd writes one session to ExportDir (Markdown or JSONL) under a
// private temporary name and links it to its final name, so a failure
// leaves nothing half-written and no existing file is ever replaced: a
// file already there with other content (one the user edited, or an
// export of an older state) is kept and the export takes the next free
// name (hermes-session-ID-2.md, ...); one with the same content is
// reported and nothing is written. Errors name the final file, never the
// temporary one.
func (m *Model) exportCmd(id string) tea.Cmd {
	st, dir, format := m.opt.Store, m.opt.ExportDir, m.opt.ExportFormat
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		ext := ".md"
		if format == "jsonl" {
			ext = ".jsonl"
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return exportMsg{err: err}
		}
		base := filepath.Join(abs, "hermes-session-"+fileSafe(id))
		path := base + ext
		safefile.RemoveStale(abs, exportTempPrefix) // what a killed browser left
		tmp, err := safefile.CreateTemp(abs, exportTempPrefix)
		if err != nil {
			return exportMsg{err: writeErr(path, err)}
		}
		defer os.Remove(tmp) // after a link, the final name keeps the file
		if err := writeExport(ctx, st, tmp, id, format); err != nil {
			return exportMsg{err: writeErr(path, err)}
		}
		for i := 1; i <= maxExportNames; i++ {
			if i > 1 {
				path = fmt.Sprintf("%s-%d%s", base, i, ext)
			}
			if _, err := os.Lstat(path); err == nil {
				if sameContent(tmp, path) {
					return exportMsg{path: path, same: true}
				}
				continue
			}
			err := safefile.Publish(tmp, path)
			if errors.Is(err, fs.ErrExist) {
				continue // appeared meanwhile
			}
			if err != nil {
				return exportMsg{err: writeErr(path, err)}
			}
			return exportMsg{path: path}
		}
		return exportMsg{err: fmt.Errorf("%s and %d more exports of this session exist; move some away", base+ext, maxExportNames-1)}
	}
}

// writeExport writes session id to the file tmp.
func writeExport(ctx context.Context, st *hs.Store, tmp, id, format string) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	p := st.Portability()
	var n int64
	if format == "jsonl" {
		n, err = p.WriteJSONL(ctx, f, repo.ExportFilter{}, []string{id}, nil)
	} else {
		// Markdown for people, as the CLI writes it: control characters
		// and bidi controls neutralised (termtext); JSONL keeps the bytes.
		tw := termtext.NewWriter(f)
		if n, err = p.WriteMarkdown(ctx, tw, repo.ExportFilter{}, []string{id}, nil); err == nil {
			err = tw.Flush()
		}
	}
	if err == nil && n != 1 {
		err = fmt.Errorf("session %s was not exported", id)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sameContent reports whether files a and b hold the same bytes (false
// when either cannot be read).
func sameContent(a, b string) bool {
	if st, err := os.Stat(b); err != nil || !st.Mode().IsRegular() {
		return false // never opened: a FIFO would block the open
	}
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	sa, ea := fa.Stat()
	sb, eb := fb.Stat()
	if ea != nil || eb != nil || sa.Size() != sb.Size() || !sb.Mode().IsRegular() {
		return false
	}
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, erra := io.ReadFull(fa, ba)
		nb, errb := io.ReadFull(fb, bb)
		switch {
		case na != nb || !bytes.Equal(ba[:na], bb[:nb]):
			return false
		case erra == io.EOF || erra == io.ErrUnexpectedEOF: // the end of both: the sizes are equal
			return errb == erra
		case erra != nil || errb != nil:
			return false
		}
	}
}

// exportTempPrefix starts the private name an export is written under.
const exportTempPrefix = ".hermes-session-"

// maxExportNames bounds the numbered names an export tries.
const maxExportNames = 100

// writeErr says that path could not be written and why, in words that
// name path only (the cause of an *fs.PathError or *os.LinkError without
// the temporary name it carries).
func writeErr(path string, err error) error {
	cause := err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		cause = pe.Err
	case errors.As(err, &le):
		cause = le.Err
	}
	return fmt.Errorf("cannot write %s: %w", path, cause)
}

// fileSafe maps a session id to a file name part.
func fileSafe(id string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, id)
	s = strings.TrimLeft(s, ".")
	if len(s) > 120 {
		s = s[:120]
	}
	if s == "" {
		s = "session"
	}
	return s
}

func (m *Model) titleCmd(id, title string) tea.Cmd {
	set, st := m.opt.SetTitle, m.opt.Store
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		if err := set(ctx, id, title); err != nil {
			return titleMsg{id: id, title: title, err: err}
		}
		// The store sanitizes titles: show what it kept.
		if got, err := st.Titles().Get(ctx, id); err == nil {
			title = got
		}
		return titleMsg{id: id, title: title}
	}
}
