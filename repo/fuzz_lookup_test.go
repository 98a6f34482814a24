package repo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// FuzzLookupQueries: free-form id / title searches and state_meta prefixes
// never fail with anything but ErrInvalid, and every row found does match:
// SearchByID rows carry the needle in their id or their lineage root's id;
// ListPrefix keys start with the prefix (ASCII case-insensitively).
func FuzzLookupQueries(f *testing.F) {
	for _, s := range []string{"", "abc", "ABC", "%", "_", `\`, "a_%\\", "an-94", "'; DROP TABLE sessions; --", "\x00", "桂林", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	ctx := context.Background()
	st := hermesstatetest.Fresh(f)
	for _, id := range []string{"abc_1", "xabc", "a%b", "a_b", `a\b`, "桂林_9"} {
		if _, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"}); err != nil {
			f.Fatal(err)
		}
		if err := st.Meta().Set(ctx, "k:"+id, "v"); err != nil {
			f.Fatal(err)
		}
	}
	okErr := func(t *testing.T, err error) bool {
		if err == nil {
			return true
		}
		if !errors.Is(err, hs.ErrInvalid) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		return false
	}
	f.Fuzz(func(t *testing.T, q string) {
		rows, err := st.Lookup().SearchByID(ctx, q, repo.SearchByIDOptions{})
		if okErr(t, err) {
			needle := strings.ToLower(strings.TrimSpace(q))
			for _, r := range rows {
				if !strings.Contains(strings.ToLower(r.ID), needle) && !strings.Contains(strings.ToLower(r.LineageRootID), needle) {
					t.Fatalf("%q matched %s", q, r.ID)
				}
			}
		}
		_, err = st.Listing().Rich(ctx, repo.RichOptions{SearchQuery: q, IDQuery: q, OrderByLastActive: true})
		okErr(t, err)
		kv, err := st.Meta().ListPrefix(ctx, q)
		if okErr(t, err) {
			for _, e := range kv {
				if !strings.HasPrefix(strings.ToLower(e.Key), strings.ToLower(q)) {
					t.Fatalf("prefix %q listed %q", q, e.Key)
				}
			}
		}
	})
}
