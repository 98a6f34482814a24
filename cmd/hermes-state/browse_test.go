package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/stretchr/testify/require"
	"golang.org/x/term"
)

// tmuxPane runs one program in a detached tmux session on a private
// server and reads its screen.
type tmuxPane struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T, width, height int, command string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is missing: .ci/run installs it (apt-get install tmux)")
		}
		t.Skip("tmux is not installed: the end-to-end browse test needs it (apt-get install tmux)")
	}
	// A short socket path (sun_path is limited to ~100 bytes).
	dir, err := os.MkdirTemp("", "hstmux")
	require.NoError(t, err)
	p := &tmuxPane{t: t, sock: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", p.sock, "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	p.tmux("new-session", "-d", "-s", "browse", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command)
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	require.NoError(p.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// screen returns the visible pane; with escapes, its styles too.
func (p *tmuxPane) screen(escapes bool) string {
	p.t.Helper()
	args := []string{"capture-pane", "-p", "-t", "browse"}
	if escapes {
		args = append(args, "-e")
	}
	return p.tmux(args...)
}

// waitFor polls the screen until it contains every want.
func (p *tmuxPane) waitFor(want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		scr := p.screen(false)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(scr, w)
		}
		if ok {
			return scr
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %q; last screen:\n%s", want, scr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "browse"}, keys...)...)
}

func (p *tmuxPane) typeText(s string) {
	p.t.Helper()
	p.tmux("send-keys", "-t", "browse", "-l", s)
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestBrowseTmux runs `hermes-state browse` in a real terminal (tmux) on
// a copy of the Hermes v30 fixture: it opens, searches for a word of the
// fixture, opens the session of the hit, goes back and quits; the file is
// byte for byte unchanged.
func TestBrowseTmux(t *testing.T) {
	fx := fixturetest.Path(t, "hermes-v30.db")
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	copyFile(t, fx, db)
	before := sha256File(t, db)
	exe, err := os.Executable()
	require.NoError(t, err)
	// The test binary acts as the CLI (TestMain, runMainEnv).
	command := fmt.Sprintf("env %s=1 TZ=UTC %q --db %q browse --export-dir %q; echo browse-exit=$?; sleep 60",
		runMainEnv, exe, db, dir)
	p := newTmux(t, 120, 30, command)

	scr := p.waitFor("hermes-state browse", "Docker deployment fix", "sessions, newest first")
	require.Contains(t, scr, "Rust borrow checker notes")
	require.Contains(t, scr, "桂林旅行计划")

	p.typeText("CrashLoopBackOff")
	scr = p.waitFor(`hits for "CrashLoopBackOff"`)
	require.NotContains(t, scr, "Rust borrow checker notes", "only hits are listed")
	require.Regexp(t, `(?m)^> Docker deployment fix\s+cli\s+2026-01-05 09:15 tool`, scr)
	require.Regexp(t, `(?m)^  Docker deployment fix\s+cli\s+2026-01-05 09:15 assistant\s+The pod is in CrashLoopBackOff`, scr)
	// The match is styled (capture-pane -e keeps the escapes).
	require.Regexp(t, regexp.MustCompile("(\x1b\\[[0-9;]*m)+CrashLoopBackOff(\x1b\\[[0-9;]*m)+\\. Redeploy"), p.screen(true))

	p.keys("Down", "Enter")
	scr = p.waitFor("◀ search hit", "of 8 (", "The pod is in CrashLoopBackOff. Redeploy")
	require.Contains(t, scr, "Docker deployment fix  20260105_091500_a1b2c3 · cli")
	require.Regexp(t, `(?m)^assistant  ◀ search hit\s+#6  2026-01-05 09:15$`, scr)
	require.Contains(t, scr, "#8  2026-01-05 09:15", "the end of the session fills the screen")
	p.keys("g")
	scr = p.waitFor("message 1 of 8")
	require.Contains(t, scr, "[System note] Conversation started from the CLI on host build-01.")
	require.Contains(t, scr, "▸ 2 tool calls: terminal, search_files")

	p.keys("q")
	p.waitFor(`hits for "CrashLoopBackOff"`)
	p.keys("Escape")
	p.waitFor("Rust borrow checker notes")
	p.keys("Escape")
	p.waitFor("browse-exit=0")

	require.Equal(t, before, sha256File(t, db), "browsing changed the file")
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		require.NoFileExists(t, db+side)
	}
}

// TestBrowseRefusals: browse needs a terminal and a known export format,
// and never creates a store that is not there.
func TestBrowseRefusals(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope", "state.db")
	_, err := run(t, "--db", missing, "browse", "--format", "xml")
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err))
	require.Contains(t, err.Error(), "--format must be md or jsonl")
	if term.IsTerminal(int(os.Stdout.Fd())) || term.IsTerminal(int(os.Stdin.Fd())) {
		t.Log("stdin or stdout is a terminal here: the no-terminal refusal is not checked")
	} else {
		_, err = run(t, "--db", missing, "browse")
		require.Error(t, err)
		require.Equal(t, 2, exitCode(err))
		require.Contains(t, err.Error(), "browse needs a terminal")
	}
	require.NoDirExists(t, filepath.Dir(missing))
}
