package hermesstate_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeFirstExampleOpensItsOwnPath (issue 28, item 10): the README's
// first Go example must not open the user's real Hermes store for writing
// (Config{} is $HERMES_HOME/state.db, else ~/.hermes/state.db, adopted and
// upgraded by a writable open): it opens a path of its own or reads, and
// the README says in one sentence what opening a Hermes file for writing
// does.
func TestReadmeFirstExampleOpensItsOwnPath(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)
	start := strings.Index(readme, "```go\n")
	require.GreaterOrEqual(t, start, 0, "the README has a Go example")
	end := strings.Index(readme[start+6:], "```")
	first := readme[start+6 : start+6+end]
	open := ""
	for _, line := range strings.Split(first, "\n") {
		if strings.Contains(line, "hermesstate.Open(") {
			open = line
			break
		}
	}
	require.NotEmpty(t, open, "the first example opens a store:\n%s", first)
	require.NotContains(t, open, "Config{}", "the first example opens the user's real store for writing")
	require.True(t, strings.Contains(open, "Path:") || strings.Contains(open, "ReadOnly: true"), "the first example opens a path of its own or read-only: %s", open)
	flat := strings.Join(strings.Fields(readme), " ")
	require.Contains(t, flat, "Opening an existing Hermes file for writing")
	require.Contains(t, flat, "keeping its journal mode and its file mode")
}
