package repo_test

import (
	"context"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

var (
	propWords = []string{"alpha", "bravo", "charlie", "delta", "foxtrot", "golf", "hotel", "juliet"}
	propCJK   = []string{"桂林", "漓江", "検索", "東京", "服务", "天気"}
)

func propText(r *rand.Rand) string {
	n := 1 + r.Intn(6)
	parts := make([]string, n)
	for i := range parts {
		if r.Intn(3) == 0 {
			parts[i] = propCJK[r.Intn(len(propCJK))]
		} else {
			parts[i] = propWords[r.Intn(len(propWords))]
		}
	}
	return strings.Join(parts, " ")
}

// After a random mix of appends (API and plain SQL), edits and deletes
// (plain SQL), every FTS table passes 'integrity-check', the CJK index
// matches the rows, and a search for each term finds exactly the rows a
// LIKE scan over content, tool_name and tool_calls finds.
func TestSearchPropertyRandomWrites(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewSource(seed))
		st, path := openSearchStore(t)
		db := fixturetest.Raw(t, path)
		var sessions []string
		for i := 0; i < 3; i++ {
			s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: []string{"cli", "telegram", "cron"}[i]})
			require.NoError(t, err)
			sessions = append(sessions, s.ID)
		}
		var ids []int64
		for op := 0; op < 200; op++ {
			sid := sessions[r.Intn(len(sessions))]
			switch k := r.Intn(10); {
			case k < 4 || len(ids) == 0:
				m := repo.MessageInput{Role: "user", Content: models.Text(propText(r))}
				if r.Intn(4) == 0 {
					m.Role, m.ToolName, m.ToolCallID = "tool", propWords[r.Intn(len(propWords))], "c1"
				}
				id, err := st.Messages().Append(ctx, sid, m)
				require.NoError(t, err)
				ids = append(ids, id)
			case k < 6:
				res, err := db.Exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', ?, ?)", sid, propText(r), float64(op))
				require.NoError(t, err)
				id, _ := res.LastInsertId()
				ids = append(ids, id)
			case k < 8:
				id := ids[r.Intn(len(ids))]
				var content any = propText(r)
				if r.Intn(5) == 0 {
					content = nil
				}
				_, err := db.Exec("UPDATE messages SET content = ? WHERE id = ?", content, id)
				require.NoError(t, err)
			default:
				i := r.Intn(len(ids))
				_, err := db.Exec("DELETE FROM messages WHERE id = ?", ids[i])
				require.NoError(t, err)
				ids = append(ids[:i], ids[i+1:]...)
			}
		}
		checks, err := st.Search().Check(ctx)
		require.NoError(t, err)
		require.Len(t, checks, 3)
		for _, c := range checks {
			require.True(t, c.OK, "seed %d %s: %s", seed, c.Table, c.Detail)
		}
		for _, term := range append(append([]string{}, propWords...), propCJK...) {
			hits, err := st.Search().Messages(ctx, term, repo.SearchOptions{Limit: 10000})
			require.NoError(t, err)
			got := hitIDs(hits)
			sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
			var want []int64
			rows, err := db.Query("SELECT id FROM messages WHERE content LIKE ? OR tool_name LIKE ? OR tool_calls LIKE ? ORDER BY id", "%"+term+"%", "%"+term+"%", "%"+term+"%")
			require.NoError(t, err)
			for rows.Next() {
				var id int64
				require.NoError(t, rows.Scan(&id))
				want = append(want, id)
			}
			require.NoError(t, rows.Close())
			if want == nil {
				want = []int64{}
			}
			require.Equal(t, want, got, "seed %d term %q", seed, term)
		}
	}
}
