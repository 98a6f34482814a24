package hermesstate_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// toAny round-trips v through encoding/json with numbers as json.Number.
func toAny(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// jsonDiff reports how got differs from want, where every key of a want
// object must be in got with an equal value (got may have more keys when
// subset is true). Numbers compare by float value. It returns "" when equal.
func jsonDiff(path string, want, got any, subset bool) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %T %v", path, got, short(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var diffs []string
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: missing (want %v)", path, k, short(w[k])))
				continue
			}
			if d := jsonDiff(path+"."+k, w[k], gv, subset); d != "" {
				diffs = append(diffs, d)
			}
		}
		if !subset {
			for k := range g {
				if _, ok := w[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s.%s: unexpected (got %v)", path, k, short(g[k])))
				}
			}
		}
		return strings.Join(diffs, "\n")
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: want list, got %T %v", path, got, short(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("%s: want %d items, got %d: %v", path, len(w), len(g), short(got))
		}
		var diffs []string
		for i := range w {
			if d := jsonDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], subset); d != "" {
				diffs = append(diffs, d)
			}
		}
		return strings.Join(diffs, "\n")
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: want %v, got %v", path, w, short(got))
		}
		wf, _ := w.Float64()
		gf, _ := g.Float64()
		if wf != gf {
			return fmt.Sprintf("%s: want %v, got %v", path, w, g)
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) || fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			return fmt.Sprintf("%s: want %v, got %v", path, short(want), short(got))
		}
		return ""
	}
}

func short(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
