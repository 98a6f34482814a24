package browse

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// v30 is a copy of the current-schema Hermes fixture, adopted once by a
// writable open (as `hermes-state migrate` does) and then opened read-only
// as `browse` opens it.
func v30(t *testing.T) (path string, st *hs.Store) {
	t.Helper()
	path = fixtureCopy(t, "hermes-v30.db")
	w := openStore(t, path, false)
	require.NoError(t, w.Close())
	return path, openStore(t, path, true)
}

func richIDs(t *testing.T, st *hs.Store, opt repo.RichOptions) []string {
	t.Helper()
	rs, err := st.Listing().Rich(context.Background(), opt)
	require.NoError(t, err)
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func rowIDs(rs []row) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.id)
	}
	return ids
}

// TestListSearchOpen: the list shows the store's listing, typing searches
// (debounced, the store's hits, snippet highlighted), Enter opens the hit's
// session at the hit's message, q goes back, esc clears and quits.
func TestListSearchOpen(t *testing.T) {
	_, st := v30(t)
	d := newDriver(t, Options{Store: st, Location: "fixture"})
	want := richIDs(t, st, repo.RichOptions{Limit: 50})
	require.NotEmpty(t, want)
	require.Equal(t, want, rowIDs(d.m.sessions))
	scr := d.screen()
	require.Contains(t, scr, "Docker deployment fix")
	require.Contains(t, scr, "Rust borrow checker notes")
	require.Contains(t, scr, fmt.Sprintf("%d sessions, newest first", len(want)))
	// The sources present became filter tabs.
	require.Contains(t, d.m.sources, "telegram")
	require.Contains(t, d.m.sources, "discord")

	d.typeText("CrashLoopBackOff")
	hits, err := st.Search().Messages(context.Background(), "CrashLoopBackOff", repo.SearchOptions{Limit: searchLimit})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	require.Len(t, d.m.hits, len(hits))
	for i, h := range hits {
		require.Equal(t, h.ID, d.m.hits[i].msgID)
		require.Equal(t, h.SessionID, d.m.hits[i].id)
	}
	require.Equal(t, "Docker deployment fix", d.m.hits[0].title)
	view := d.m.View().Content
	require.Contains(t, view, stMatch.Render("CrashLoopBackOff"), "the match is highlighted")
	scr = d.screen()
	require.Contains(t, scr, fmt.Sprintf(`%s for "CrashLoopBackOff"`, plural(len(hits), "hit")))
	require.Contains(t, scr, "Docker deployment fix")
	require.NotContains(t, scr, "Rust borrow checker notes")

	d.key("enter")
	require.Equal(t, screenConv, d.m.screen)
	c := d.m.conv
	require.Equal(t, hits[0].SessionID, c.id)
	all, err := st.Messages().List(context.Background(), c.id)
	require.NoError(t, err)
	require.EqualValues(t, len(all), c.total)
	idx := -1
	for i, m := range all {
		if m.ID == hits[0].ID {
			idx = i
		}
	}
	// Opened with the hit's message at the top (the rest of the session
	// fills the screen).
	require.EqualValues(t, idx, c.top)
	scr = d.screen()
	require.Contains(t, scr, "The pod is in CrashLoopBackOff")
	require.Contains(t, scr, fmt.Sprintf("#%d  ", idx+1))
	require.Contains(t, scr, fmt.Sprintf("message %d of %d", idx+1, len(all)))
	require.Contains(t, scr, "◀ search hit")
	require.Contains(t, scr, "anthropic/claude-sonnet-4", "session metadata in the header")

	d.key("q")
	require.Equal(t, screenList, d.m.screen)
	require.Contains(t, d.screen(), fmt.Sprintf(`%s for "CrashLoopBackOff"`, plural(len(hits), "hit")), "back to the same search")
	d.key("esc")
	require.Equal(t, "", d.m.input.Value())
	require.Contains(t, d.screen(), "Rust borrow checker notes")
	require.False(t, d.quit)
	d.key("esc")
	require.True(t, d.quit)
}

// TestSearchDebounceAndStale: a tick of an older keystroke starts no
// search, and the result of an older search arriving after a newer one is
// dropped.
func TestSearchDebounceAndStale(t *testing.T) {
	_, st := v30(t)
	d := newDriver(t, Options{Store: st})

	tick1 := d.cmds(keyMsg("d"))
	tick2 := d.cmds(keyMsg("o"))
	require.Len(t, tick1, 1)
	require.Len(t, tick2, 1)
	// The first key's tick fires after the second key: no search.
	for _, msg := range exec(tick1[0]) {
		require.IsType(t, debounceMsg{}, msg)
		require.Empty(t, d.cmds(msg), "a stale tick must not search")
	}
	// The second key's tick starts the search for "do".
	var searchDo []tea.Cmd
	for _, msg := range exec(tick2[0]) {
		searchDo = append(searchDo, d.cmds(msg)...)
	}
	require.Len(t, searchDo, 1)
	require.True(t, d.m.searching)
	require.Contains(t, d.screen(), "searching…")

	// Type on ("docker") and let that search finish first.
	late := exec(searchDo[0]) // the "do" result, held back
	d.typeText("cker")
	require.Equal(t, "docker", d.m.hitsQuery)
	want, err := st.Search().Messages(context.Background(), "docker", repo.SearchOptions{Limit: searchLimit})
	require.NoError(t, err)
	require.Len(t, messageHits(d.m.hits), len(want), "the message hits (sessions titled Docker come first)")

	// Now the "do" result arrives: it is stale and changes nothing.
	require.Len(t, late, 1)
	require.Equal(t, "do", late[0].(searchMsg).query)
	d.send(late[0])
	require.Equal(t, "docker", d.m.hitsQuery)
	require.Len(t, messageHits(d.m.hits), len(want), "the message hits (sessions titled Docker come first)")

	// A query that matches nothing says so; backspacing to empty shows the
	// sessions again.
	d.typeText("zzqqxx")
	require.Contains(t, d.screen(), `0 hits for "dockerzzqqxx"`)
	for range "dockerzzqqxx" {
		d.key("backspace")
	}
	require.Empty(t, d.m.hits)
	require.Contains(t, d.screen(), "Rust borrow checker notes")
}

// TestSourceFilter: tab cycles through the sources; the list (and a
// search) keep only that source; a listing of the previous filter arriving
// late is dropped.
func TestSourceFilter(t *testing.T) {
	_, st := v30(t)
	d := newDriver(t, Options{Store: st})
	require.Equal(t, "", d.m.source())
	var tg int
	for i, s := range d.m.sources {
		if s == "telegram" {
			tg = i
		}
	}
	require.NotZero(t, tg)
	for d.m.source() != "telegram" {
		d.key("tab")
	}
	want := richIDs(t, st, repo.RichOptions{Source: "telegram", Limit: 50})
	require.NotEmpty(t, want)
	require.Equal(t, want, rowIDs(d.m.sessions))
	for _, r := range d.m.sessions {
		require.Equal(t, "telegram", r.source)
	}
	require.Contains(t, d.screen(), "桂林旅行计划")
	require.NotContains(t, d.screen(), "Docker deployment fix")

	// Search within the source.
	d.typeText("deploy")
	require.NotEmpty(t, d.m.hits)
	for _, h := range d.m.hits {
		require.Equal(t, "telegram", h.source)
	}
	d.key("esc")

	// Stale listing: ask for the next source, then for another one; the
	// first answer arrives last and is ignored.
	first := d.cmds(keyMsg("tab"))
	second := d.cmds(keyMsg("tab"))
	src := d.m.source()
	for _, c := range second {
		d.run(c)
	}
	wantNow := richIDs(t, st, repo.RichOptions{Source: src, Limit: 50})
	require.Equal(t, wantNow, rowIDs(d.m.sessions))
	for _, c := range first {
		d.run(c)
	}
	require.Equal(t, wantNow, rowIDs(d.m.sessions), "stale listing dropped")
	// shift+tab goes back.
	d.key("shift+tab")
	require.NotEqual(t, src, d.m.source())
}

// TestCopyExportTitle: ctrl+y copies the id with OSC 52, ctrl+e exports
// to a file whose path is shown, ctrl+t sets a title (read back from the
// store) or shows why it cannot.
func TestCopyExportTitle(t *testing.T) {
	path, st := v30(t)
	dir := t.TempDir()
	writable := func(ctx context.Context, id, title string) error {
		w, err := hs.Open(ctx, hs.Config{Path: path})
		if err != nil {
			return err
		}
		defer w.Close()
		_, err = w.Titles().Set(ctx, id, title)
		return err
	}
	d := newDriver(t, Options{Store: st, ExportDir: dir, SetTitle: writable})
	d.typeText("kubernetes")
	require.NotEmpty(t, d.m.hits)
	id := d.m.hits[0].id

	// Copy: Bubble Tea's own clipboard message, carrying the id.
	d.other = nil
	d.key("ctrl+y")
	require.Len(t, d.other, 1)
	require.Equal(t, "tea.setClipboardMsg", reflect.TypeOf(d.other[0]).String())
	require.Equal(t, id, fmt.Sprint(d.other[0]))
	require.Contains(t, d.screen(), "copied session id "+id)

	// Export (Markdown).
	d.key("ctrl+e")
	file := filepath.Join(dir, "hermes-session-"+id+".md")
	require.Contains(t, d.screen(), "exported to "+file)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), "Docker deployment fix")
	require.Contains(t, string(b), "CrashLoopBackOff")
	left, _ := filepath.Glob(filepath.Join(dir, ".hermes-session-*"))
	require.Empty(t, left, "no temporary file left")

	// Title: prompt prefilled, edited, saved through the writable opener,
	// shown as the store keeps it (surrounding spaces removed).
	d.key("ctrl+t")
	require.True(t, d.m.prompting)
	require.Equal(t, "Docker deployment fix", d.m.prompt.Value())
	for range "Docker deployment fix" {
		d.key("backspace")
	}
	d.typeText("  Kubernetes rescue  ")
	d.key("enter")
	require.False(t, d.m.prompting)
	require.Contains(t, d.screen(), `title set to "Kubernetes rescue"`)
	got, err := st.Titles().Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "Kubernetes rescue", got)
	require.Equal(t, "Kubernetes rescue", d.m.hits[0].title)

	// A title another session holds is refused with the store's reason.
	d.key("ctrl+t")
	for range "Kubernetes rescue" {
		d.key("backspace")
	}
	d.typeText("Rust borrow checker notes")
	d.key("enter")
	require.Contains(t, d.screen(), "title not set:")
	got, err = st.Titles().Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, "Kubernetes rescue", got)

	// esc cancels the prompt.
	d.key("ctrl+t")
	d.typeText("never saved")
	d.key("esc")
	require.False(t, d.m.prompting)
	require.Contains(t, d.screen(), "title unchanged")

	// The same keys inside a conversation (y, e, t), JSONL export.
	d.m.opt.ExportFormat = "jsonl"
	d.key("enter")
	require.Equal(t, screenConv, d.m.screen)
	d.other = nil
	d.key("y")
	require.Len(t, d.other, 1)
	d.key("e")
	jsonl := filepath.Join(dir, "hermes-session-"+id+".jsonl")
	require.Contains(t, d.screen(), "exported to "+jsonl)
	b, err = os.ReadFile(jsonl)
	require.NoError(t, err)
	require.Contains(t, string(b), `"id":"`+id+`"`)
	d.key("t")
	require.True(t, d.m.prompting)
	d.key("esc")
}

// TestTitleBlocked: when the title check fails (a store hermes-state has
// not upgraded), the title key says why and opens no prompt; a read-only
// store without a writable opener fails to save with a message.
func TestTitleBlocked(t *testing.T) {
	path := fixtureCopy(t, "hermes-v30.db")
	st := openStore(t, path, true) // never adopted
	d := newDriver(t, Options{Store: st, TitleCheck: func(ctx context.Context) error {
		pending, err := st.MigrationsPending(ctx)
		require.NoError(t, err)
		if len(pending) > 0 {
			return errors.New("run 'hermes-state migrate' first")
		}
		return nil
	}})
	require.Contains(t, d.screen(), "Docker deployment fix", "a Hermes file reads without adoption")
	d.key("ctrl+t")
	require.False(t, d.m.prompting)
	require.Contains(t, d.screen(), "cannot set titles: run 'hermes-state migrate' first")

	d2 := newDriver(t, Options{Store: st}) // Store's own Titles().Set on a read-only store
	d2.key("ctrl+t")
	require.True(t, d2.m.prompting)
	d2.typeText("x")
	d2.key("enter")
	require.Contains(t, d2.screen(), "title not set:")
}

// TestExportFailure: an export directory that cannot be written shows the
// error, and no file is left.
func TestExportFailure(t *testing.T) {
	_, st := v30(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	d := newDriver(t, Options{Store: st, ExportDir: missing})
	d.key("ctrl+e")
	require.Contains(t, d.screen(), "export failed:")
	_, err := os.Stat(missing)
	require.True(t, os.IsNotExist(err))
}

var msgNum = regexp.MustCompile(`#(\d+)  `)

// shownMessages returns the message numbers (1-based) whose header lines
// are on screen.
func shownMessages(scr string) []int {
	var out []int
	for _, m := range msgNum.FindAllStringSubmatch(scr, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// TestConversation20k: a session of 20,000 messages opens, scrolls line by
// line and page by page across windows, jumps to the end and back, and is
// never read whole: only a few windows are ever held, windows next to a
// held one are read by id, and every message shown is the store's.
func TestConversation20k(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	w := openStore(t, path, false)
	const n = 20000
	fillSession(t, w, "big", "cli", n, 1767225600, rand.New(rand.NewSource(1)))
	fillSession(t, w, "small", "telegram", 3, 1767225700, rand.New(rand.NewSource(2)))
	require.NoError(t, w.Close())
	st := openStore(t, path, true)

	d := newDriver(t, Options{Store: st, PageSize: 200, MaxWindows: 4})
	require.Equal(t, []string{"small", "big"}, rowIDs(d.m.sessions))
	require.Contains(t, d.screen(), fmt.Sprintf("%5d", n), "message count column")
	d.key("down")
	d.key("enter")
	c := d.m.conv
	require.EqualValues(t, n, c.total)
	require.LessOrEqual(t, len(c.pages), 2)
	scr := d.screen()
	require.Contains(t, scr, "message 1 of 20000")
	require.Contains(t, scr, "message 0:")
	require.Equal(t, 1, shownMessages(scr)[0])

	// Line by line through the first window boundary: the messages shown
	// are consecutive, and the next window came by id.
	seen := map[int]bool{}
	for _, k := range shownMessages(scr) {
		seen[k] = true
	}
	for i := 0; i < 1200; i++ {
		d.key("j")
		for _, k := range shownMessages(d.screen()) {
			seen[k] = true
		}
	}
	top := int(c.top)
	require.Greater(t, top, 200, "scrolled past the first window")
	for k := 1; k <= top; k++ {
		require.True(t, seen[k], "message #%d was shown", k)
	}
	byID := false
	for _, msg := range d.observed {
		if p, ok := msg.(pageMsg); ok && p.req.afterID > 0 {
			byID = true
		}
	}
	require.True(t, byID, "sequential scrolling reads the next window by id")
	require.LessOrEqual(t, len(c.pages), 4)

	// The messages on screen are the store's.
	pg, err := st.Messages().Page(context.Background(), "big", repo.PageOptions{Offset: top, Limit: 1})
	require.NoError(t, err)
	require.Contains(t, d.screen(), fmt.Sprintf("message %d:", top))
	require.Contains(t, d.screen(), strings.Fields(*pg.Messages[0].Content)[2])

	// End: the last message is on screen, the view filled to the bottom.
	d.key("G")
	scr = d.screen()
	require.Contains(t, scr, "#20000")
	require.Contains(t, scr, fmt.Sprintf("message %d:", n-2)) // the last one is a folded tool result
	require.LessOrEqual(t, len(c.pages), 4)
	lines := strings.Split(scr, "\n")
	require.Len(t, lines, 30)
	// Scrolling down at the end does nothing; a page up moves.
	before := c.top
	d.key("j")
	require.Equal(t, before, c.top)
	d.key("pgup")
	require.Less(t, c.top, before)
	// Page down back to the end, then home.
	for i := 0; i < 5; i++ {
		d.key("pgdown")
	}
	require.Contains(t, d.screen(), "#20000")
	d.key("g")
	require.EqualValues(t, 0, c.top)
	require.Contains(t, d.screen(), "message 0:")

	// Next / previous message.
	d.key("n")
	d.key("n")
	require.EqualValues(t, 2, c.top)
	d.key("p")
	require.EqualValues(t, 1, c.top)

	// Tool calls fold and unfold (message 19 calls a tool, 20 is its result).
	for c.top < 18 {
		d.key("n")
	}
	scr = d.screen()
	require.Contains(t, scr, "▸ 1 tool call: terminal")
	require.Contains(t, scr, "▸ tool result:")
	require.NotContains(t, scr, `{"command": "echo 18"}`)
	d.key("f")
	scr = d.screen()
	require.Contains(t, scr, `{"command": "echo 18"}`)
	require.Contains(t, scr, "exit 0")
	d.key("f")
	require.NotContains(t, d.screen(), `{"command": "echo 18"}`)

	// Never read whole: windows read in all, at most a few held.
	require.Less(t, c.loads*200, n/4, "windows read: %d", c.loads)
	require.LessOrEqual(t, len(c.pages), 4)

	// Roles are coloured.
	require.Contains(t, d.m.View().Content, roleStyle("user").Render("user"))
	require.Contains(t, d.m.View().Content, roleStyle("assistant").Render("assistant"))
}

// TestConversationStaleWindows: answers for a conversation that was left
// (or replaced by another) are dropped.
func TestConversationStaleWindows(t *testing.T) {
	_, st := v30(t)
	d := newDriver(t, Options{Store: st})
	// Open the first session without running its store calls.
	open1 := d.cmds(keyMsg("enter"))
	require.Equal(t, screenConv, d.m.screen)
	first := d.m.conv.id
	d.key("q")
	d.key("down")
	d.key("enter")
	second := d.m.conv.id
	require.NotEqual(t, first, second)
	total := d.m.conv.total
	top := d.screen()
	for _, c := range open1 {
		d.run(c) // the first session's answers, late
	}
	require.Equal(t, second, d.m.conv.id)
	require.Equal(t, total, d.m.conv.total)
	require.Equal(t, top, d.screen())
}

// TestCleanText: stored text cannot drive the terminal.
func TestCleanText(t *testing.T) {
	require.Equal(t, "a\uFFFD]52;c;eA==\uFFFDb", clean("a\x1b]52;c;eA==\x07b", false))
	require.Equal(t, "x\uFFFD[2Jy", clean("x\x9b[2Jy", false)) // C1 CSI, raw byte
	require.Equal(t, "x\uFFFD[2Jy", clean("x\u009b[2Jy", false))
	require.Equal(t, "tab    here line", clean("tab\there\r\nline", false))
	require.Equal(t, "keep\nnew", clean("keep\r\nnew", true))
	require.Equal(t, "a b c", oneLine("  a\n\nb   c "))
	require.Equal(t, "ok_id_x", fileSafe("ok/id x"))
	require.Equal(t, "session", fileSafe("..."))
}

// TestSmallWindows: windows much smaller than the screen are all kept
// while in view (never evicted and read again in a loop), and walking the
// whole session still reads each window about once.
func TestSmallWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	w := openStore(t, path, false)
	fillSession(t, w, "s", "cli", 600, 1767225600, rand.New(rand.NewSource(3)))
	require.NoError(t, w.Close())
	st := openStore(t, path, true)
	d := newDriver(t, Options{Store: st, PageSize: 10, MaxWindows: 3})
	d.key("enter")
	c := d.m.conv
	require.Contains(t, d.screen(), "message 0:")
	d.key("G")
	require.Contains(t, d.screen(), "#600")
	d.key("g")
	require.Contains(t, d.screen(), "message 0:")
	// A resize lays the messages out again at the new width.
	d.send(tea.WindowSizeMsg{Width: 60, Height: 20})
	for _, l := range strings.Split(d.screen(), "\n") {
		require.LessOrEqual(t, len([]rune(l)), 60, l)
	}
	require.Len(t, strings.Split(d.screen(), "\n"), 20)
	for i := 0; i < 300; i++ {
		d.key("pgdown")
	}
	require.Contains(t, d.screen(), "#600")
	require.Less(t, c.loads, 150, "windows read: %d of 60", c.loads)
}

// TestBrowsePostgres: the same model on a PostgreSQL store: list, search,
// open, end, export.
func TestBrowsePostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	fillSession(t, st, "pg-long", "cli", 1000, 1767225600, rand.New(rand.NewSource(4)))
	fillSession(t, st, "pg-short", "telegram", 4, 1767229600, rand.New(rand.NewSource(5)))
	_, err = st.Titles().Set(ctx, "pg-long", "Long one")
	require.NoError(t, err)
	dir := t.TempDir()
	d := newDriver(t, Options{Store: st, ExportDir: dir})
	require.Equal(t, []string{"pg-short", "pg-long"}, rowIDs(d.m.sessions))
	require.Contains(t, d.screen(), "Long one")
	d.typeText("message 999")
	require.NotEmpty(t, d.m.hits)
	found := false
	for i, h := range d.m.hits {
		if h.id == "pg-long" {
			for d.m.cursor < i {
				d.key("down")
			}
			found = true
			break
		}
	}
	require.True(t, found)
	d.key("enter")
	require.Equal(t, "pg-long", d.m.conv.id)
	require.EqualValues(t, 1000, d.m.conv.total)
	require.Contains(t, d.screen(), "◀ search hit")
	d.key("G")
	require.Contains(t, d.screen(), "#1000")
	d.key("e")
	require.Contains(t, d.screen(), "exported to "+filepath.Join(dir, "hermes-session-pg-long.md"))
}

// messageHits is the rows of hits that are messages (not title matches).
func messageHits(rs []row) []row {
	var out []row
	for _, r := range rs {
		if r.role != "title" {
			out = append(out, r)
		}
	}
	return out
}
