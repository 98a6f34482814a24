package hermesstate_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsFlowDown checks the layout rule of docs/DESIGN.md: nothing
// under internal/ imports the root package, repo, migrations, doctor or the
// test kit (internal/ is the ground the rest stands on), and migrations never
// imports repo (a shipped migration must not run whatever today's
// repository code does). Test files count too, but for migrations' own.
func TestImportsFlowDown(t *testing.T) {
	const mod = "github.com/hermesstate/hermesstate"
	above := map[string]bool{mod: true, mod + "/repo": true, mod + "/migrations": true, mod + "/doctor": true,
		mod + "/hermesstatetest": true}
	rules := []struct {
		dir       string
		withTests bool
		banned    func(string) bool
	}{
		{"internal", true, func(p string) bool { return above[p] || strings.HasPrefix(p, mod+"/cmd/") }},
		// migrations' own tests may open stores through the root.
		{"migrations", false, func(p string) bool { return p == mod+"/repo" || p == mod+"/doctor" || p == mod }},
	}
	seen := 0
	for _, r := range rules {
		err := filepath.WalkDir(r.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") ||
				(!r.withTests && strings.HasSuffix(path, "_test.go")) {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			seen++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if r.banned(p) {
					t.Errorf("%s imports %s: it would run back up the layout (docs/DESIGN.md, Packages)", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking %s: %v", r.dir, err)
		}
	}
	if seen < 20 {
		t.Fatalf("only %d Go files read under internal/ and migrations/: is the test running from the module root?", seen)
	}
}
