package fixturetest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCopyMatchesShared: the repository's testdata/fixtures is a byte-for-byte
// copy of ../shared/fixtures (the Hermes-written originals), file for file.
func TestCopyMatchesShared(t *testing.T) {
	root := fixturetest.ModuleRoot()
	require.NotEmpty(t, root, "module root not found from the working directory")
	shared := filepath.Join(root, "..", "shared", "fixtures")
	orig, _ := filepath.Glob(filepath.Join(shared, "*"))
	if len(orig) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("no %s: CI runs with ../shared beside the repository", shared)
		}
		t.Skipf("no %s beside the repository: nothing to compare testdata/fixtures with", shared)
	}
	mine, _ := filepath.Glob(filepath.Join(root, "testdata", "fixtures", "*"))
	require.Equal(t, len(orig), len(mine), "testdata/fixtures and %s hold different files", shared)
	for _, p := range orig {
		mine := filepath.Join(root, "testdata", "fixtures", filepath.Base(p))
		_, err := os.Stat(mine)
		require.NoError(t, err, "testdata/fixtures lacks %s", filepath.Base(p))
		require.Equal(t, fixturetest.SHA256(t, p), fixturetest.SHA256(t, mine), filepath.Base(p))
	}
}
