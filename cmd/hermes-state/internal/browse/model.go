// Package browse is the interactive session browser of `hermes-state
// browse`: a Bubble Tea program over a store opened through the root
// package's public API.
//
// Every store call runs as a tea.Cmd, off the UI loop; each result carries
// the sequence number (or conversation generation) of the request that
// produced it, and a result whose number is no longer current is dropped,
// so a slow query never overwrites a newer one. A conversation is read in
// windows of PageSize messages (Messages().Page) and at most a few windows
// are kept, so a session of any length scrolls without being loaded whole.
package browse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/repo"
)

// Options configure a browser.
type Options struct {
	// Store is the open store to browse (read-only is enough to browse).
	Store *hs.Store
	// Location names the store in the header (a path or a redacted URL).
	Location string
	// Source is the source filter to start with ("" for all).
	Source string
	// ExportDir receives exported sessions; default the current directory.
	ExportDir string
	// ExportFormat is "md" (default) or "jsonl".
	ExportFormat string
	// SetTitle stores a title the user typed. Nil means Store's own
	// Titles().Set (which fails on a read-only store).
	SetTitle func(ctx context.Context, id, title string) error
	// TitleCheck, when set, runs once after the first listing, off the UI
	// loop; an error disables the title key, and its message is shown in
	// the header and when the key is pressed.
	TitleCheck func(ctx context.Context) error
	// Debounce is how long typing must pause before a search runs;
	// default 150 ms.
	Debounce time.Duration
	// PageSize is the number of messages per conversation window
	// (default 200) and ListPage the number of sessions per listing query
	// (default 50).
	PageSize, ListPage int
	// MaxWindows is how many conversation windows are kept (default 5).
	MaxWindows int
	// TimeZone formats timestamps; default time.Local.
	TimeZone *time.Location
	// FirstPaint, when set, is called once, with the time, when a frame
	// first shows the session list (or says it is empty).
	FirstPaint func(time.Time)
}

type screen int

const (
	screenList screen = iota
	screenConv
)

// row is one line of the list: a session, or a search hit in a session.
type row struct {
	id, title, source string
	when              float64
	count             int64 // messages; -1 for a hit
	text              string
	role              string // hits
	msgID             int64  // hits: the message to open at
}

// Model is the browser's Bubble Tea model. Create it with New.
type Model struct {
	opt    Options
	ctx    context.Context
	width  int
	height int
	screen screen

	input   textinput.Model
	sources []string // "" (all) first
	srcIdx  int

	sessions    []row
	listSeq     int
	listLoading bool
	listMore    bool
	listErr     error
	listLoaded  bool

	searchSeq    int
	searching    bool
	hits         []row
	hitsQuery    string
	hitsMore     bool // more message hits match: scrolling on reads them
	hitsLoading  bool
	msgHits      int // message hits read (hits also holds title rows)
	searchErr    error
	searchCancel context.CancelFunc

	cursor, top int

	conv *conv
	gen  int

	prompting bool
	prompt    textinput.Model
	promptFor string

	titleBlocked error
	status       string
	statusErr    bool
	painted      bool
	quitting     bool
	first        tea.Cmd // the prefetched first listing (Run)
}

// New returns a browser over opt.Store (it does not touch the store until
// Init). Run it with tea.NewProgram (see Run), or drive Update directly in
// tests. Store calls use ctx and a 30 s timeout each.
func New(ctx context.Context, opt Options) *Model {
	if opt.Debounce <= 0 {
		opt.Debounce = 150 * time.Millisecond
	}
	if opt.PageSize <= 0 {
		opt.PageSize = 200
	}
	if opt.PageSize > repo.MaxPageLimit {
		opt.PageSize = repo.MaxPageLimit
	}
	if opt.ListPage <= 0 {
		opt.ListPage = 50
	}
	if opt.MaxWindows < 3 {
		opt.MaxWindows = 5
	}
	if opt.TimeZone == nil {
		opt.TimeZone = time.Local
	}
	if opt.ExportDir == "" {
		opt.ExportDir = "."
	}
	if opt.ExportFormat == "" {
		opt.ExportFormat = "md"
	}
	if opt.SetTitle == nil {
		st := opt.Store
		opt.SetTitle = func(ctx context.Context, id, title string) error {
			_, err := st.Titles().Set(ctx, id, title)
			return err
		}
	}
	m := &Model{opt: opt, ctx: ctx, width: 80, height: 24, sources: []string{""}}
	if opt.Source != "" {
		m.sources = append(m.sources, opt.Source)
		m.srcIdx = 1
	}
	m.input = newInput("Search: ", "type to search every message")
	m.input.Focus()
	m.prompt = newInput("Title: ", "")
	m.prompt.CharLimit = repo.MaxTitleLength
	m.listLoading = true
	return m
}

func newInput(prompt, placeholder string) textinput.Model {
	in := textinput.New()
	in.Prompt = prompt
	in.Placeholder = placeholder
	s := in.Styles()
	s.Cursor.Blink = false
	in.SetStyles(s)
	km := textinput.DefaultKeyMap()
	// ctrl+e and ctrl+d are browser keys; tab and up/down move the list.
	km.LineEnd.SetKeys("end")
	km.DeleteCharacterForward.SetKeys("delete")
	km.AcceptSuggestion.Unbind()
	km.NextSuggestion.Unbind()
	km.PrevSuggestion.Unbind()
	in.KeyMap = km
	return in
}

// Init starts the first listing alone, so the first paint waits for one
// cheap query; the source list and the title check follow it (onList).
func (m *Model) Init() tea.Cmd {
	if m.first != nil {
		return m.first
	}
	m.listSeq++
	return m.listCmd(m.listSeq, 0)
}

// prefetch starts the first listing at once, while Bubble Tea sets up the
// terminal (tens of milliseconds), and makes Init's command wait for it.
func (m *Model) prefetch() {
	m.listSeq++
	cmd := m.listCmd(m.listSeq, 0)
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	m.first = func() tea.Msg { return <-ch }
}

// afterFirstList starts what the first paint does not need.
func (m *Model) afterFirstList() tea.Cmd {
	cmds := []tea.Cmd{m.sourcesCmd()}
	if m.opt.TitleCheck != nil {
		cmds = append(cmds, m.titleCheckCmd())
	}
	return tea.Batch(cmds...)
}

func (m *Model) source() string { return m.sources[m.srcIdx] }

func (m *Model) query() string { return strings.TrimSpace(m.input.Value()) }

// rows returns what the list shows: search hits while there is a query,
// else sessions.
func (m *Model) rows() []row {
	if m.query() != "" {
		return m.hits
	}
	return m.sessions
}

func (m *Model) setStatus(s string, isErr bool) { m.status, m.statusErr = s, isErr }

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.input.SetWidth(max(10, m.width-len(m.input.Prompt)-2))
		m.prompt.SetWidth(max(10, m.width-len(m.prompt.Prompt)-2))
		m.clampCursor()
		if m.conv != nil {
			m.conv.resize(m.width)
			return m, m.convFollowUp()
		}
		return m, nil
	case listMsg:
		return m, m.onList(msg)
	case sourcesMsg:
		m.onSources(msg)
		return m, nil
	case debounceMsg:
		if msg.seq != m.searchSeq || m.query() == "" {
			return m, nil
		}
		return m, m.startSearch()
	case searchMsg:
		if msg.seq != m.searchSeq {
			return m, nil // a newer query was typed
		}
		m.searching, m.hitsLoading = false, false
		if msg.err != nil || msg.offset == 0 {
			m.hits, m.hitsQuery, m.searchErr = msg.rows, msg.query, msg.err
			m.msgHits = 0
		} else if msg.offset == m.msgHits {
			m.hits = append(m.hits, msg.rows...)
		}
		for _, r := range msg.rows {
			if r.msgID > 0 {
				m.msgHits++
			}
		}
		m.hitsMore = msg.more && msg.err == nil
		m.clampCursor()
		return m, m.maybeMore()
	case titleCheckMsg:
		m.titleBlocked = msg.err
		return m, nil
	case sessionMsg, pageMsg, jumpMsg:
		if m.conv == nil {
			return m, nil
		}
		m.conv.handle(msg)
		return m, m.convFollowUp()
	case exportMsg:
		if msg.err != nil {
			m.setStatus("export failed: "+errText(msg.err), true)
		} else {
			if msg.same {
				m.setStatus("already exported: "+msg.path+" (the same content; nothing written)", false)
			} else {
				m.setStatus("exported to "+msg.path, false)
			}
		}
		return m, nil
	case titleMsg:
		return m, m.onTitle(msg)
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	if m.prompting {
		var cmd tea.Cmd
		m.prompt, cmd = m.prompt.Update(msg)
		return m, cmd
	}
	if m.screen == screenList {
		before := m.input.Value()
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg) // a paste, the cursor's own messages
		if m.input.Value() != before {
			return m, tea.Batch(cmd, m.queryChanged())
		}
		return m, cmd
	}
	return m, nil
}

func (m *Model) onList(msg listMsg) tea.Cmd {
	if msg.seq != m.listSeq {
		return nil // the filter changed since
	}
	var first tea.Cmd
	if !m.listLoaded {
		first = m.afterFirstList()
	}
	m.listLoading = false
	m.listLoaded = true
	m.listErr = msg.err
	if msg.err != nil {
		return first
	}
	if msg.offset == 0 {
		m.sessions = msg.rows
	} else if msg.offset == len(m.sessions) {
		m.sessions = append(m.sessions, msg.rows...)
	}
	m.listMore = msg.more
	m.clampCursor()
	return tea.Batch(first, m.maybeMore())
}

func (m *Model) onSources(msg sourcesMsg) {
	if msg.err != nil {
		return // the filter keeps "all" (and a --source given)
	}
	cur := m.source()
	seen := map[string]bool{"": true}
	out := []string{""}
	for _, s := range append(msg.sources, cur) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	m.sources = out
	for i, s := range out {
		if s == cur {
			m.srcIdx = i
		}
	}
}

func (m *Model) onTitle(msg titleMsg) tea.Cmd {
	if msg.err != nil {
		m.setStatus("title not set: "+errText(msg.err), true)
		return nil
	}
	for _, rs := range [][]row{m.sessions, m.hits} {
		for i := range rs {
			if rs[i].id == msg.id {
				rs[i].title = msg.title
			}
		}
	}
	if m.conv != nil && m.conv.id == msg.id {
		m.conv.title = msg.title
	}
	if msg.title == "" {
		m.setStatus("title cleared", false)
	} else {
		m.setStatus(fmt.Sprintf("title set to %q", msg.title), false)
	}
	return nil
}

// errText is an error's message on one line, in the user's terms (as the
// CLI says it).
func errText(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return oneLine(errtext.Message(err))
}

func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return m.quit()
	}
	if m.prompting {
		return m.promptKey(k)
	}
	if m.screen == screenConv {
		return m.convKey(k)
	}
	return m.listKey(k)
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	if m.searchCancel != nil {
		m.searchCancel()
	}
	return tea.Quit
}

func (m *Model) listKey(k tea.KeyPressMsg) tea.Cmd {
	page := max(1, m.listHeight()-1)
	switch k.String() {
	case "esc":
		if m.status != "" && m.statusErr {
			m.setStatus("", false) // dismiss the error; the next esc goes on
			return nil
		}
		if m.input.Value() != "" {
			m.input.SetValue("")
			return m.queryChanged()
		}
		return m.quit()
	case "up", "ctrl+p":
		m.move(-1)
	case "down", "ctrl+n":
		m.move(1)
	case "pgup":
		m.move(-page)
	case "pgdown":
		m.move(page)
	case "tab":
		return m.cycleSource(1)
	case "shift+tab":
		return m.cycleSource(-1)
	case "enter":
		if r, ok := m.selected(); ok {
			return m.open(r)
		}
	case "ctrl+y":
		if r, ok := m.selected(); ok {
			return m.copyID(r.id)
		}
	case "ctrl+e":
		if r, ok := m.selected(); ok {
			return m.export(r.id)
		}
	case "ctrl+t":
		if r, ok := m.selected(); ok {
			return m.startPrompt(r.id, r.title)
		}
	default:
		before := m.input.Value()
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(k)
		if m.input.Value() != before {
			return tea.Batch(cmd, m.queryChanged())
		}
		return cmd
	}
	return m.maybeMore()
}

func (m *Model) selected() (row, bool) {
	rs := m.rows()
	if m.cursor < 0 || m.cursor >= len(rs) {
		return row{}, false
	}
	return rs[m.cursor], true
}

func (m *Model) move(d int) {
	m.cursor += d
	m.clampCursor()
}

func (m *Model) clampCursor() {
	n := len(m.rows())
	if m.cursor >= n {
		m.cursor = n - 1
	}
	if m.cursor < 0 {
		m.cursor = 0
	}
	h := m.listHeight()
	if m.cursor < m.top {
		m.top = m.cursor
	}
	if m.cursor >= m.top+h {
		m.top = m.cursor - h + 1
	}
	if m.top < 0 {
		m.top = 0
	}
}

// maybeMore asks for the next listing page (or page of search hits) when
// the cursor nears the end.
func (m *Model) maybeMore() tea.Cmd {
	if m.query() != "" {
		if !m.hitsMore || m.hitsLoading || m.searching || m.cursor < len(m.hits)-m.listHeight() {
			return nil
		}
		m.hitsLoading = true
		ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
		m.searchCancel = cancel
		return m.searchCmd(ctx, m.searchSeq, m.hitsQuery, m.source(), m.msgHits)
	}
	if !m.listMore || m.listLoading || m.cursor < len(m.sessions)-m.listHeight() {
		return nil
	}
	m.listLoading = true
	return m.listCmd(m.listSeq, len(m.sessions))
}

// queryChanged restarts the debounce timer for the new query.
func (m *Model) queryChanged() tea.Cmd {
	m.searchSeq++
	m.cursor, m.top = 0, 0
	if m.searchCancel != nil {
		m.searchCancel()
		m.searchCancel = nil
	}
	if m.query() == "" {
		m.searching, m.hits, m.hitsQuery, m.searchErr = false, nil, "", nil
		m.hitsMore, m.hitsLoading, m.msgHits = false, false, 0
		return nil
	}
	m.searching = true
	seq := m.searchSeq
	return tea.Tick(m.opt.Debounce, func(time.Time) tea.Msg { return debounceMsg{seq: seq} })
}

func (m *Model) startSearch() tea.Cmd {
	if m.searchCancel != nil {
		m.searchCancel()
	}
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	m.searchCancel = cancel
	m.searching = true
	m.hitsMore, m.hitsLoading = false, false
	return m.searchCmd(ctx, m.searchSeq, m.query(), m.source(), 0)
}

func (m *Model) cycleSource(d int) tea.Cmd {
	m.srcIdx = (m.srcIdx + d + len(m.sources)) % len(m.sources)
	m.listSeq++
	m.listLoading, m.listMore = true, false
	m.cursor, m.top = 0, 0
	cmds := []tea.Cmd{m.listCmd(m.listSeq, 0)}
	if m.query() != "" {
		m.searchSeq++
		cmds = append(cmds, m.startSearch())
	}
	return tea.Batch(cmds...)
}

func (m *Model) copyID(id string) tea.Cmd {
	m.setStatus("copied session id "+clean(id, false)+" (OSC 52 clipboard)", false)
	return tea.SetClipboard(id)
}

func (m *Model) export(id string) tea.Cmd {
	m.setStatus("exporting "+clean(id, false)+"…", false)
	return m.exportCmd(id)
}

func (m *Model) startPrompt(id, title string) tea.Cmd {
	if m.titleBlocked != nil {
		m.setStatus("cannot set titles: "+errText(m.titleBlocked), true)
		return nil
	}
	m.prompting, m.promptFor = true, id
	m.prompt.SetValue(title)
	m.prompt.CursorEnd()
	m.setStatus("enter saves the title (empty clears it), esc cancels", false)
	return m.prompt.Focus()
}

func (m *Model) promptKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.prompting = false
		m.prompt.Blur()
		m.setStatus("title unchanged", false)
		return nil
	case "enter":
		m.prompting = false
		m.prompt.Blur()
		m.setStatus("saving title…", false)
		return m.titleCmd(m.promptFor, strings.TrimSpace(m.prompt.Value()))
	}
	var cmd tea.Cmd
	m.prompt, cmd = m.prompt.Update(k)
	return cmd
}

// open shows a session's conversation (at a hit's message for a hit).
func (m *Model) open(r row) tea.Cmd {
	m.gen++
	m.conv = newConv(m.gen, r, m.opt, m.width)
	m.screen = screenConv
	m.status = ""
	cmds := []tea.Cmd{m.sessionCmd(m.gen, r.id)}
	if r.msgID > 0 {
		cmds = append(cmds, m.jumpCmd(m.gen, r.id, r.msgID))
	} else {
		cmds = append(cmds, m.convFollowUp())
	}
	return tea.Batch(cmds...)
}

// convFollowUp asks for the windows the conversation view now needs.
func (m *Model) convFollowUp() tea.Cmd {
	if m.conv == nil || m.screen != screenConv {
		return nil
	}
	var cmds []tea.Cmd
	for _, req := range m.conv.need(m.bodyHeight()) {
		cmds = append(cmds, m.pageCmd(m.conv.gen, m.conv.id, req))
	}
	return tea.Batch(cmds...)
}

func (m *Model) convKey(k tea.KeyPressMsg) tea.Cmd {
	c := m.conv
	h := m.bodyHeight()
	switch k.String() {
	case "q", "esc", "backspace", "left":
		m.screen = screenList
		m.conv = nil
		m.gen++ // drop whatever is still loading
		m.status = ""
		return nil
	case "down", "j":
		c.scroll(1, h)
	case "up", "k":
		c.scroll(-1, h)
	case "pgdown", "space", "ctrl+f":
		c.scroll(h-1, h)
	case "pgup", "b", "ctrl+b":
		c.scroll(-(h - 1), h)
	case "ctrl+d":
		c.scroll(h/2, h)
	case "ctrl+u":
		c.scroll(-h/2, h)
	case "home", "g":
		c.home()
	case "end", "G":
		c.end(h)
	case "n", "]":
		c.nextMessage(1, h)
	case "p", "[":
		c.nextMessage(-1, h)
	case "f":
		c.toggleFold()
		c.settle(h)
	case "y":
		return m.copyID(c.id)
	case "e":
		return m.export(c.id)
	case "t":
		return m.startPrompt(c.id, c.title)
	}
	return m.convFollowUp()
}

// listHeight is the number of list rows that fit.
func (m *Model) listHeight() int { return max(1, m.height-6) }

// bodyHeight is the number of conversation lines that fit.
func (m *Model) bodyHeight() int { return max(1, m.height-4) }

// View renders the screen.
func (m *Model) View() tea.View {
	var content string
	if m.quitting {
		content = ""
	} else if m.screen == screenConv && m.conv != nil {
		content = m.convView()
	} else {
		content = m.listView()
	}
	v := tea.NewView(content)
	v.AltScreen = true
	v.WindowTitle = "hermes-state browse"
	if !m.painted && m.listLoaded && m.opt.FirstPaint != nil {
		m.painted = true
		m.opt.FirstPaint(time.Now())
	}
	return v
}

// footer is the status line and the keys: long when it fits, else short.
func (m *Model) footer(long, short string) []string {
	help := long
	if lipgloss.Width(long) > m.width {
		help = short
	}
	if m.prompting {
		help = "enter save · esc cancel · an empty title clears it"
	}
	status := m.status
	switch {
	case m.prompting:
		status = m.prompt.View()
	case status == "":
	case m.statusErr:
		status = stError.Render(status)
	default:
		status = stOK.Render(status)
	}
	return []string{fit(status, m.width), fit(stDim.Render(help), m.width)}
}

func (m *Model) listView() string {
	w := m.width
	var out []string
	title := stHeader.Render("hermes-state browse") + stDim.Render("  "+clean(m.opt.Location, false))
	if m.titleBlocked != nil {
		title += "  " + stWarn.Render("note: "+errText(m.titleBlocked))
	}
	out = append(out, fit(title, w))
	var tabs []string
	for i, s := range m.sources {
		name := s
		if name == "" {
			name = "all sources"
		}
		if i == m.srcIdx {
			tabs = append(tabs, stTabActive.Render(clean(name, false)))
		} else {
			tabs = append(tabs, stTab.Render(clean(name, false)))
		}
	}
	rs := m.rows()
	searching := m.query() != ""
	var state string
	switch {
	case searching && m.searchErr != nil:
		state = stError.Render("search failed: " + errText(m.searchErr))
	case searching && m.searching:
		state = stDim.Render("searching…")
	case searching && m.hitsMore:
		state = stDim.Render(fmt.Sprintf("first %s for %q, more as you scroll", plural(len(rs), "hit"), clean(m.hitsQuery, false)))
	case searching:
		state = stDim.Render(fmt.Sprintf("%s for %q", plural(len(rs), "hit"), clean(m.hitsQuery, false)))
	case m.listErr != nil:
		state = stError.Render("listing failed: " + errText(m.listErr))
	case m.listLoading && len(rs) == 0:
		state = stDim.Render("loading sessions…")
	case len(rs) == 0:
		state = stDim.Render("no sessions")
	case m.listMore:
		state = stDim.Render(fmt.Sprintf("%d+ sessions, newest first", len(rs)))
	default:
		state = stDim.Render(plural(len(rs), "session") + ", newest first")
	}
	out = append(out, fit(strings.Join(tabs, "")+"   "+state, w))
	out = append(out, fit(m.input.View(), w))
	cols := listColumns(w, searching)
	var head string
	if searching {
		head = "  " + fit("TITLE", cols.title) + " " + fit("SOURCE", cols.source) + " " + fit("TIME", cols.when) + " " + fit("ROLE", cols.count) + " MATCH"
	} else {
		head = "  " + fit("TITLE", cols.title) + " " + fit("SOURCE", cols.source) + " " + fit("LAST ACTIVE", cols.when) + " " + fmt.Sprintf("%*s", cols.count, "MSGS") + " PREVIEW"
	}
	out = append(out, fit(stDim.Render(head), w))

	h := m.listHeight()
	for i := m.top; i < len(rs) && i < m.top+h; i++ {
		out = append(out, m.rowLine(rs[i], i == m.cursor, searching, cols))
	}
	for len(out) < 4+h {
		out = append(out, "")
	}
	out = append(out, m.footer(
		"type to search · ↑/↓ move · enter open · tab source · ctrl+y copy id · ctrl+e export · ctrl+t title · esc clear/quit",
		"↑/↓ · enter open · tab source · ^y copy id · ^e export · ^t title · esc quit")...)
	return strings.Join(out, "\n")
}

type columns struct{ title, source, when, count, text int }

func listColumns(w int, hits bool) columns {
	c := columns{title: min(40, max(12, w/4)), source: 9, when: 16, count: 5}
	if hits {
		c.count = 9
	}
	c.text = w - 2 - c.title - c.source - c.when - c.count - 4
	if c.text < 10 {
		c.title = max(10, c.title+c.text-10)
		c.text = 10
	}
	return c
}

func (m *Model) rowLine(r row, sel, hit bool, c columns) string {
	title := r.title
	if title == "" {
		title = "—"
	}
	count := fmt.Sprintf("%*d", c.count, r.count)
	if hit {
		count = clean(r.role, false)
	}
	marker := "  "
	if sel {
		marker = "> "
	}
	cols := marker + fit(clean(title, false), c.title) + " " + fit(clean(r.source, false), c.source) + " " +
		fit(when(r.when, m.opt.TimeZone), c.when) + " " + fit(count, c.count) + " "
	if !hit {
		line := fit(cols+clean(r.text, false), m.width)
		if sel {
			return stSelected.Render(line)
		}
		return line
	}
	base, match := lipgloss.NewStyle(), stMatch
	if sel {
		base, match = stSelected, stMatch.Reverse(true)
	}
	return fitPad(base.Render(cols)+highlight(r.text, c.text, base, match), m.width, base)
}

func (m *Model) convView() string {
	c := m.conv
	w := m.width
	title := c.title
	if title == "" {
		title = "(untitled)"
	}
	head := stHeader.Render(clean(title, false)) + stDim.Render("  "+clean(c.id, false)+" · "+clean(c.source, false))
	if c.session != nil && c.session.Model != nil {
		head += stDim.Render(" · " + clean(*c.session.Model, false))
	}
	var pos string
	switch {
	case c.err != nil:
		pos = stError.Render(errText(c.err))
	case c.total < 0:
		pos = stDim.Render("loading…")
	case c.total == 0:
		pos = stDim.Render("no messages")
	default:
		pos = stDim.Render(fmt.Sprintf("message %d of %d (%d%%)", min(c.top+1, c.total), c.total, (c.top+1)*100/c.total))
	}
	out := []string{fit(head, w), fit(pos, w)}
	out = append(out, c.view(m.bodyHeight())...)
	out = append(out, m.footer(
		"↑/↓ j/k scroll · pgup/pgdn · g/G top/end · n/p next/prev message · f fold tools · y copy id · e export · t title · q back",
		"j/k · pgup/pgdn · g/G · n/p message · f fold · y id · e export · t title · q back")...)
	return strings.Join(out, "\n")
}

// Run runs the browser on the terminal until the user quits. It returns
// Bubble Tea's error when the terminal cannot be set up or the program
// fails; a cancelled ctx (SIGINT/SIGTERM) is a normal exit and returns nil.
func Run(ctx context.Context, opt Options, popts ...tea.ProgramOption) error {
	m := New(ctx, opt)
	m.prefetch()
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx)}, popts...)...)
	_, err := p.Run()
	if m.searchCancel != nil {
		m.searchCancel()
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted: a normal way out
	}
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
