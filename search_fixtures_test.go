package hermesstate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/repo"
)

type searchCase struct {
	Kind      string          `json:"kind"`
	Query     string          `json:"query"`
	Kwargs    map[string]any  `json:"kwargs"`
	Sanitized *string         `json:"sanitized"`
	Results   json.RawMessage `json:"results"`
}

func kwStrings(v any) []string {
	l, ok := v.([]any)
	if !ok {
		return nil
	}
	out := []string{}
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func searchOpts(kw map[string]any) repo.SearchOptions {
	var o repo.SearchOptions
	if v, ok := kw["source_filter"]; ok && v != nil {
		o.Sources = kwStrings(v)
	}
	if v, ok := kw["exclude_sources"]; ok && v != nil {
		o.ExcludeSources = kwStrings(v)
	}
	if v, ok := kw["role_filter"]; ok && v != nil {
		o.Roles = kwStrings(v)
	}
	if v, ok := kw["limit"].(json.Number); ok {
		n, _ := v.Int64()
		o.Limit = int(n)
	}
	if v, ok := kw["offset"].(json.Number); ok {
		n, _ := v.Int64()
		o.Offset = int(n)
	}
	if v, ok := kw["sort"].(string); ok {
		o.Sort = v
	}
	if v, ok := kw["include_inactive"].(bool); ok {
		o.IncludeInactive = v
	}
	return o
}

// searchDiffs runs every search case of f and returns, per case, how our
// answer differs from Hermes' ("" when equal).
func searchDiffs(t *testing.T, f *Fixture) ([]searchCase, []string, []repo.Route) {
	st, _ := f.Open(t)
	var cases []searchCase
	f.Get(t, "search", &cases)
	ctx := context.Background()
	diffs := make([]string, len(cases))
	routes := make([]repo.Route, len(cases))
	for i, c := range cases {
		res, err := st.Search().Run(ctx, c.Query, searchOpts(c.Kwargs))
		require.NoError(t, err, "%s case %d %s", f.Name, i, c.Kind)
		routes[i] = res.Route
		var d []string
		if c.Sanitized != nil && *c.Sanitized != res.Sanitized {
			d = append(d, fmt.Sprintf("sanitized: want %q, got %q", *c.Sanitized, res.Sanitized))
		}
		var want any
		dec := json.NewDecoder(strings.NewReader(string(c.Results)))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&want))
		if _, isErr := want.(map[string]any); isErr {
			d = append(d, fmt.Sprintf("hermes raised %v", want))
		} else if x := jsonDiff("results", want, toAny(res.Hits), false); x != "" {
			d = append(d, x)
		}
		diffs[i] = strings.Join(d, "\n")
	}
	return cases, diffs, routes
}

func TestSearchFixtureV30(t *testing.T) {
	for _, f := range LoadFixtures(t) {
		if os.Getenv("SEARCH_ALL") == "" && f.Version != 30 {
			continue
		}
		cases, diffs, routes := searchDiffs(t, f)
		var bad []string
		for i, d := range diffs {
			if d != "" {
				bad = append(bad, fmt.Sprintf("%s case %d %s %q (route %s):\n%s", f.Name, i, cases[i].Kind, cases[i].Query, routes[i], d))
			}
		}
		sort.Strings(bad)
		for _, b := range bad {
			t.Error(b)
		}
	}
}
