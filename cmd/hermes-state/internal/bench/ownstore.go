package bench

import (
	"context"
	"fmt"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// checkOwnStore refuses an existing store (Options.Store) that holds a
// session the corpus does not have: the search and listing phases open it
// writable (as every store of the bench is opened), which would adopt and
// stamp a store people or agents use. The store is looked at read-only.
func checkOwnStore(ctx context.Context, store, corpus string) error {
	ids := map[string]bool{}
	err := ReadCorpus(corpus, map[string]bool{"store": true, "long": true, "append": true}, func(s *CorpusSession, _ []CorpusMessage) error {
		ids[s.ID] = true
		return nil
	})
	if err != nil {
		return err
	}
	st, err := hs.Open(ctx, hs.Config{Path: store, ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	const page = 1000
	for off := 0; ; off += page {
		ss, err := st.Sessions().List(ctx, repo.ListOptions{Limit: page, Offset: off})
		if err != nil {
			return err
		}
		for _, s := range ss {
			if !ids[s.ID] {
				return &hs.Error{Kind: hs.ErrConflict, Op: "bench", Msg: fmt.Sprintf(
					"%s holds session %s, which is not in the corpus %s: --store must be a store the build phase made from the same corpus (bench --keep keeps it); bench does not open another store for writing",
					store, s.ID, corpus)}
			}
		}
		if len(ss) < page {
			return nil
		}
	}
}
