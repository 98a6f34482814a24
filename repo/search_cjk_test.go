package repo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// CJK queries of 1, 2 and 3+ characters, Chinese and Japanese, find
// exactly the rows containing them, served by an index: hermesstate's CJK
// postings for the substring route, FTS5 trigram for 3+ characters. The
// query plans show no scan of messages.
func TestSearchCJKServedByIndex(t *testing.T) {
	ctx := context.Background()
	st, _ := openSearchStore(t)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "telegram"})
	require.NoError(t, err)
	texts := []string{
		"我想去广西桂林旅游，推荐一下路线",           // 1
		"桂林到阳朔可以坐船游漓江，大约四个小时。",       // 2
		"日本語のテキスト検索はトライグラムで動きます",     // 3
		"検索エンジンの設定を確認してください",         // 4
		"修改youer服务端的配置文件",            // 5
		"plain english about docker", // 6
		"桂花很香",                       // 7
	}
	for i, c := range texts {
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(c), Timestamp: models.Epoch(1000 + i)})
		require.NoError(t, err)
	}
	for _, c := range []struct {
		q     string
		opt   repo.SearchOptions
		route repo.Route
		want  []int64
	}{
		{"桂", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{7, 2, 1}},
		{"桂林", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{2, 1}},
		{"広", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{}},
		{"検索", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{4, 3}},
		{"の", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{4, 3}},
		{"广西 OR 桂林", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{2, 1}},
		{"修改youer", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{5}},
		{"youer服务端", repo.SearchOptions{}, repo.RouteTrigram, []int64{5}},
		{"广西桂林", repo.SearchOptions{}, repo.RouteTrigram, []int64{1}},
		{"トライグラム", repo.SearchOptions{}, repo.RouteTrigram, []int64{3}},
		// 3+ characters with filters the trigram index cannot serve: the
		// substring route, from the CJK index.
		{"广西桂林", repo.SearchOptions{Sources: []string{"telegram", "cron"}}, repo.RouteCJKIndex, []int64{1}},
		{"検索エンジン", repo.SearchOptions{Sources: []string{"telegram", "subagent"}}, repo.RouteCJKIndex, []int64{4}},
	} {
		res, err := st.Search().Explain(ctx, c.q, c.opt)
		require.NoError(t, err, c.q)
		require.Equal(t, c.route, res.Route, c.q)
		require.Equal(t, c.want, hitIDs(res.Hits), c.q)
		plan := strings.Join(res.Plan, "\n")
		t.Logf("%s (%s):\n%s", c.q, res.Route, plan)
		require.NotContains(t, plan, "SCAN m\n", c.q)
		require.NotRegexp(t, `(?m)^SCAN m$`, plan, c.q)
		switch res.Route {
		case repo.RouteCJKIndex:
			// The candidates read from the postings come in as one
			// json_each argument (the queue is empty: nothing else).
			require.Contains(t, plan, "SCAN json_each VIRTUAL TABLE", c.q)
			require.NotContains(t, plan, "hermesstate_cjk_pending", c.q)
		case repo.RouteTrigram:
			require.Contains(t, plan, "VIRTUAL TABLE INDEX", c.q)
		}
		// The same rows as Hermes' LIKE scan (or trigram) would give.
		if res.Route == repo.RouteCJKIndex {
			var like []int64
			for i := len(texts) - 1; i >= 0; i-- {
				hit := false
				for _, tok := range strings.Fields(strings.ReplaceAll(c.q, " OR ", " ")) {
					if strings.Contains(texts[i], tok) {
						hit = true
					}
				}
				if hit {
					like = append(like, int64(i+1))
				}
			}
			if like == nil {
				like = []int64{}
			}
			require.Equal(t, like, hitIDs(res.Hits), c.q)
		}
	}
}
