package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIRefusesNonRegularFiles (issue 28, item 1): `--db` naming a loop
// block device, a character device, a FIFO, a socket or a directory is
// refused by every command that opens or creates a store (migrate, import,
// demo, doctor, repair, a read), and such a path as a new file to write
// (backup, recover --to, export -o) too: exit 2, a message naming the
// path, nothing written to the device and nothing beside any of them. Before
// the fix `--db /dev/loopN migrate` wrote "SQLite format 3" over the
// device's first page, left /dev/loopN-shm and exited 0.
func TestCLIRefusesNonRegularFiles(t *testing.T) {
	db, _ := demoStore(t)
	in := writeJSONL(t, 1, 28)
	for _, sp := range fixturetest.NonRegular(t) {
		p := sp.Path
		for _, args := range [][]string{
			{"--db", p, "migrate"},
			{"--db", p, "--journal-mode", "delete", "migrate"},
			{"--db", p, "import", in},
			{"--db", p, "demo"},
			{"--db", p, "doctor"},
			{"--db", p, "repair"},
			{"--db", p, "sessions", "list"},
			{"--db", db, "backup", p},
			{"recover", "--from", db, "--to", p},
			{"recover", "--from", p, "--to", filepath.Join(t.TempDir(), "new.db")},
			{"--db", db, "export", "-o", p},
		} {
			var words []string
			for _, a := range args {
				if !strings.Contains(a, string(filepath.Separator)) {
					words = append(words, a)
				}
			}
			t.Run(sp.Kind+"/"+strings.Join(words, " "), func(t *testing.T) {
				_, stderr, code := runCLI(t, args...)
				require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
				require.Contains(t, stderr, p+" is a "+sp.Kind+", not a regular file")
				sp.Untouched(t)
			})
		}
	}
}
