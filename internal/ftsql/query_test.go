package ftsql

import (
	"reflect"
	"testing"
)

// TermGroups is the one grouping of a query's LIKE form, shared by the
// SQLite LIKE fallback and the PostgreSQL substring route.
func TestTermGroups(t *testing.T) {
	cases := []struct {
		q    string
		want [][]Term
	}{
		{`alpha beta`, [][]Term{{{"alpha", false}, {"beta", false}}}},
		{`alpha OR beta`, [][]Term{{{"alpha", false}}, {{"beta", false}}}},
		// Operators in any case (the PostgreSQL route once took only
		// upper-case ones).
		{`alpha or beta`, [][]Term{{{"alpha", false}}, {{"beta", false}}}},
		{`alpha and NEAR beta`, [][]Term{{{"alpha", false}, {"beta", false}}}},
		{`alpha not beta`, [][]Term{{{"alpha", false}, {"beta", true}}}},
		// A group with only negated terms is dropped.
		{`NOT alpha OR beta`, [][]Term{{{"beta", false}}}},
		{`NOT alpha`, nil},
		// Quotes and '*' stripped; an empty term keeps the NOT for the next.
		{`"chat-send" pre* NOT "" gamma`, [][]Term{{{"chat-send", false}, {"pre", false}, {"gamma", true}}}},
		{`OR OR alpha`, [][]Term{{{"alpha", false}}}},
		{``, nil},
	}
	for _, c := range cases {
		got := TermGroups(c.q)
		if len(got) == 0 && len(c.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("TermGroups(%q) = %v, want %v", c.q, got, c.want)
		}
	}
}
