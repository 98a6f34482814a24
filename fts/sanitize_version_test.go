package fts_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestSanitizeVersionFixtures: for every Hermes fixture, SanitizeVersion at
// the file's schema version gives the "sanitized" string that version of
// Hermes reported for each of the 48 search cases (v1 had no sanitizer:
// null, and the query goes to FTS5 as typed).
func TestSanitizeVersionFixtures(t *testing.T) {
	for _, f := range fixturetest.LoadFixtures(t) {
		var cases []struct {
			Query     string  `json:"query"`
			Sanitized *string `json:"sanitized"`
		}
		f.Get(t, "search", &cases)
		require.Len(t, cases, 48, f.Name)
		for i, c := range cases {
			got, ok := fts.SanitizeVersion(c.Query, f.Version)
			if c.Sanitized == nil {
				require.False(t, ok, "%s case %d: v%d had no sanitizer", f.Name, i, f.Version)
				require.Equal(t, c.Query, got)
				continue
			}
			require.True(t, ok, "%s case %d", f.Name, i)
			require.Equal(t, *c.Sanitized, got, "%s case %d %q", f.Name, i, c.Query)
		}
	}
}
