package browse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestExportKeepsAnEditedFile (issue 23 §4): exporting a session again
// never replaces a file the user edited: the new export gets the next free
// name and says so; an export equal to a file already there writes nothing.
func TestExportKeepsAnEditedFile(t *testing.T) {
	_, st := v30(t)
	dir := t.TempDir()
	d := newDriver(t, Options{Store: st, ExportDir: dir})
	d.send(tea.WindowSizeMsg{Width: 250, Height: 30}) // room for the whole status line
	d.typeText("kubernetes")
	require.NotEmpty(t, d.m.hits)
	id := d.m.hits[0].id
	d.key("ctrl+e")
	file := filepath.Join(dir, "hermes-session-"+id+".md")
	require.Contains(t, d.screen(), "exported to "+file)
	orig, err := os.ReadFile(file)
	require.NoError(t, err)

	// The same export again: nothing new is written.
	d.key("ctrl+e")
	require.Contains(t, d.screen(), "already exported: "+file)
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1)

	// The user edits the file; the next export keeps it.
	edited := append([]byte("my notes\n"), orig...)
	require.NoError(t, os.WriteFile(file, edited, 0o600))
	d.key("ctrl+e")
	second := filepath.Join(dir, "hermes-session-"+id+"-2.md")
	require.Contains(t, d.screen(), "exported to "+second)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, edited, got, "the edited file is untouched")
	got, err = os.ReadFile(second)
	require.NoError(t, err)
	require.Equal(t, orig, got)
	d.key("ctrl+e")
	require.Contains(t, d.screen(), "already exported: "+second)
}

// TestExportErrorNamesNoTemporaryFile (issue 23 §3): a failed export
// says which file could not be written and why, never the private
// temporary name it was writing under.
func TestExportErrorNamesNoTemporaryFile(t *testing.T) {
	_, st := v30(t)
	dir := fixturetest.SmallDisk(t, 64<<10)
	fill, err := os.Create(filepath.Join(dir, "fill"))
	require.NoError(t, err)
	_, _ = fill.Write(make([]byte, 1<<20)) // fills the disk; the error is expected
	require.NoError(t, fill.Close())
	d := newDriver(t, Options{Store: st, ExportDir: dir})
	d.send(tea.WindowSizeMsg{Width: 250, Height: 30}) // room for the whole status line
	d.typeText("kubernetes")
	require.NotEmpty(t, d.m.hits)
	id := d.m.hits[0].id
	d.key("ctrl+e")
	screen := d.screen()
	require.Contains(t, screen, "export failed: cannot write "+filepath.Join(dir, "hermes-session-"+id+".md")+": no space left on device")
	require.NotContains(t, screen, ".hermes-session")
	require.NotContains(t, screen, ".tmp")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		require.False(t, strings.HasPrefix(e.Name(), ".hermes"), "temporary file left: %s", e.Name())
	}
}
