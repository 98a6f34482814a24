package browse

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// fixtureCopy copies a Hermes-made fixture into a temporary directory and
// returns its path (the repository's copy in testdata/fixtures).
func fixtureCopy(t testing.TB, name string) string {
	t.Helper()
	src := fixturetest.Path(t, name)
	dst := filepath.Join(t.TempDir(), "state.db")
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return dst
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func openStore(t testing.TB, path string, readOnly bool) *hs.Store {
	t.Helper()
	st, err := hs.Open(context.Background(), hs.Config{Path: path, ReadOnly: readOnly})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// driver runs a model the way Bubble Tea does, but synchronously: every
// command is executed and its message fed back to Update, so a test sees
// the state after all store calls of a key press have answered.
type driver struct {
	t        testing.TB
	m        *Model
	quit     bool
	other    []tea.Msg // messages of Bubble Tea itself (clipboard, ...)
	observed []tea.Msg // every message of ours fed back
}

func newDriver(t testing.TB, opt Options) *driver {
	t.Helper()
	if opt.Debounce == 0 {
		opt.Debounce = time.Millisecond
	}
	if opt.TimeZone == nil {
		opt.TimeZone = time.UTC
	}
	d := &driver{t: t, m: New(context.Background(), opt)}
	d.run(d.m.Init())
	d.send(tea.WindowSizeMsg{Width: 120, Height: 30})
	return d
}

// send feeds msg and runs what follows from it.
func (d *driver) send(msg tea.Msg) {
	d.t.Helper()
	_, cmd := d.m.Update(msg)
	d.run(cmd)
}

// cmds feeds msg and returns its commands without running them.
func (d *driver) cmds(msg tea.Msg) []tea.Cmd {
	_, cmd := d.m.Update(msg)
	return flatten(cmd)
}

func flatten(cmd tea.Cmd) []tea.Cmd {
	if cmd == nil {
		return nil
	}
	return []tea.Cmd{cmd}
}

// exec runs one command and returns its messages (a batch expanded).
func exec(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, exec(c)...)
		}
		return out
	}
	if msg == nil {
		return nil
	}
	return []tea.Msg{msg}
}

func (d *driver) run(cmd tea.Cmd) {
	d.t.Helper()
	for _, msg := range exec(cmd) {
		d.feed(msg)
	}
}

func (d *driver) feed(msg tea.Msg) {
	d.t.Helper()
	switch msg.(type) {
	case tea.QuitMsg:
		d.quit = true
		return
	case listMsg, sourcesMsg, debounceMsg, searchMsg, titleCheckMsg, sessionMsg, pageMsg, jumpMsg, exportMsg, titleMsg:
		d.observed = append(d.observed, msg)
		d.send(msg)
	default:
		d.other = append(d.other, msg)
	}
}

// key presses one key: a name Bubble Tea uses ("enter", "ctrl+y", "G")
// or a single printable character.
func (d *driver) key(k string) {
	d.t.Helper()
	d.send(keyMsg(k))
}

// typeText types s one key at a time.
func (d *driver) typeText(s string) {
	d.t.Helper()
	for _, r := range s {
		d.key(string(r))
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	if strings.HasPrefix(k, "ctrl+") && len(k) == 6 {
		return tea.KeyPressMsg{Code: rune(k[5]), Mod: tea.ModCtrl}
	}
	r := []rune(k)
	if len(r) != 1 {
		panic("unknown key " + k)
	}
	code := r[0]
	if code >= 'A' && code <= 'Z' {
		return tea.KeyPressMsg{Code: code + 'a' - 'A', ShiftedCode: code, Mod: tea.ModShift, Text: k}
	}
	return tea.KeyPressMsg{Code: code, Text: k}
}

// screen is the current frame without styles.
func (d *driver) screen() string {
	return stripANSI(d.m.View().Content)
}

// fillSession appends n messages to a new session id: user and assistant
// turns, every 10th assistant turn calling a tool whose result follows.
// Message i (0-based) holds "message i" so a test can tell where it is;
// the session starts at start (epoch seconds), message i 5 s later each.
func fillSession(t testing.TB, st *hs.Store, id, source string, n int, start float64, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: source, Model: "test/model", StartedAt: models.Epoch(start)})
	require.NoError(t, err)
	const batch = 500
	for lo := 0; lo < n; lo += batch {
		var ms []repo.MessageInput
		for i := lo; i < min(n, lo+batch); i++ {
			ms = append(ms, genMessage(i, start+5*float64(i+1), rng))
		}
		_, err := st.Messages().AppendBatch(ctx, id, ms)
		require.NoError(t, err)
	}
}

var words = strings.Fields("deploy kubernetes docker rollback pipeline invoice billing proration adapter schema " +
	"migration index query latency cache worker queue retry timeout budget lint borrow checker module refactor " +
	"config service cluster replica tag image release branch commit review test fixture benchmark profile")

func genMessage(i int, at float64, rng *rand.Rand) repo.MessageInput {
	var b strings.Builder
	fmt.Fprintf(&b, "message %d:", i)
	for k := 0; k < 8+rng.Intn(30); k++ {
		b.WriteString(" ")
		b.WriteString(words[rng.Intn(len(words))])
	}
	text := b.String()
	ts := models.Epoch(at)
	switch {
	case i%20 == 19:
		return repo.MessageInput{Role: "tool", ToolName: "terminal", ToolCallID: fmt.Sprintf("call_%d", i-1), Content: models.Text(text + "\nexit 0"), Timestamp: ts}
	case i%20 == 18:
		calls := models.MustJSON([]models.ToolCall{{ID: fmt.Sprintf("call_%d", i), Type: "function",
			Function: models.ToolCallFunction{Name: "terminal", Arguments: fmt.Sprintf(`{"command": "echo %d"}`, i)}}})
		return repo.MessageInput{Role: "assistant", Content: models.Text(text), ToolCalls: calls, Timestamp: ts}
	case i%2 == 0:
		return repo.MessageInput{Role: "user", Content: models.Text(text), Timestamp: ts}
	default:
		return repo.MessageInput{Role: "assistant", Content: models.Text(text), Timestamp: ts}
	}
}

func stripANSI(s string) string { return ansi.Strip(s) }
