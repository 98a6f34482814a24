package web

import (
	"html/template"
	"math"
	"net/http"
	"time"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/present"
	"github.com/hermesstate/hermesstate/repo"
)

// The usage page shows the numbers `hermes-state stats` prints (by source,
// by model, top sessions: the same repository calls with the same filter)
// and, as charts, tokens and cost by day and by week. A period's figures
// are differences of the same statistics: the usage of sessions started
// in [a, b) is BySource(since a) minus BySource(since b), so the periods
// add up to what stats says for the whole span.

// Days and weeks the charts cover.
const (
	usageDays  = 30
	usageWeeks = 26
)

// totals are summed source rows.
type totals struct {
	Sessions, Input, Output int64
	Cost                    float64
}

type periodRow struct {
	Label string
	totals
}

type usagePage struct {
	page
	Sources        []string
	F              present.Filters
	BySource       []repo.SourceStats
	ByModel        []repo.ModelStats
	Top            []repo.SessionTokens
	All            totals
	Days, Weeks    []periodRow
	DayTokens      template.HTML
	DayCost        template.HTML
	WeekTokens     template.HTML
	WeekCost       template.HTML
	ModelTokens    template.HTML
	ModelCost      template.HTML
	SourceSessions template.HTML
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	f := repo.StatsFilter{Sources: present.List(q["source"]...)}
	us := s.opt.Store.Usage()
	p := usagePage{page: s.page("Usage", "usage"), F: present.Filters{Sources: f.Sources}}
	var err error
	if p.BySource, err = us.BySource(ctx, f); err != nil {
		s.failErr(w, r, err)
		return
	}
	if p.ByModel, err = us.ByModel(ctx, f); err != nil {
		s.failErr(w, r, err)
		return
	}
	if p.Top, err = us.TopSessions(ctx, 10, f); err != nil {
		s.failErr(w, r, err)
		return
	}
	if p.Sources, err = s.sources(r); err != nil {
		s.failErr(w, r, err)
		return
	}
	p.All = sum(p.BySource)

	// Cumulative totals since each boundary, memoised (days and weeks
	// share boundaries).
	memo := map[int64]totals{}
	since := func(t time.Time) (totals, error) {
		if v, ok := memo[t.Unix()]; ok {
			return v, nil
		}
		g := f
		g.Since = float64(t.Unix())
		rows, err := us.BySource(ctx, g)
		if err != nil {
			return totals{}, err
		}
		memo[t.Unix()] = sum(rows)
		return memo[t.Unix()], nil
	}
	now := time.Now().In(s.opt.TimeZone)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, s.opt.TimeZone)
	week := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7)) // Monday
	if p.Days, err = periods(since, today.AddDate(0, 0, 1), usageDays, func(t time.Time) time.Time { return t.AddDate(0, 0, -1) }, "01-02"); err != nil {
		s.failErr(w, r, err)
		return
	}
	if p.Weeks, err = periods(since, week.AddDate(0, 0, 7), usageWeeks, func(t time.Time) time.Time { return t.AddDate(0, 0, -7) }, "01-02"); err != nil {
		s.failErr(w, r, err)
		return
	}
	p.DayTokens, p.DayCost = periodCharts("day", p.Days)
	p.WeekTokens, p.WeekCost = periodCharts("week (from Monday)", p.Weeks)

	labels, tok, cost := []string{}, []float64{}, []float64{}
	for i, m := range p.ByModel {
		if i == 15 {
			break
		}
		labels = append(labels, m.Model)
		tok = append(tok, float64(m.InputTokens+m.OutputTokens))
		cost = append(cost, m.EstimatedCostUSD)
	}
	p.ModelTokens = barChart("Tokens (in + out) by model", labels, tok, "b1", false)
	p.ModelCost = barChart("Estimated cost by model", labels, cost, "b3", true)
	labels, n := []string{}, []float64{}
	for _, x := range p.BySource {
		labels = append(labels, x.Source)
		n = append(n, float64(x.Sessions))
	}
	p.SourceSessions = barChart("Sessions per source", labels, n, "b2", false)
	s.render(w, r, "usage.html", p)
}

func sum(rows []repo.SourceStats) totals {
	var t totals
	for _, x := range rows {
		t.Sessions += x.Sessions
		t.Input += x.InputTokens
		t.Output += x.OutputTokens
		t.Cost += x.EstimatedCostUSD
	}
	return t
}

// periods returns n periods ending at end (exclusive), oldest first, each
// the difference of the cumulative totals at its two boundaries.
func periods(since func(time.Time) (totals, error), end time.Time, n int, prev func(time.Time) time.Time, layout string) ([]periodRow, error) {
	out := make([]periodRow, n)
	hi, err := since(end)
	if err != nil {
		return nil, err
	}
	for i := n - 1; i >= 0; i-- {
		start := prev(end)
		lo, err := since(start)
		if err != nil {
			return nil, err
		}
		out[i] = periodRow{Label: start.Format(layout), totals: totals{Sessions: lo.Sessions - hi.Sessions,
			Input: lo.Input - hi.Input, Output: lo.Output - hi.Output, Cost: math.Max(0, roundCents(lo.Cost-hi.Cost))}}
		end, hi = start, lo
	}
	return out, nil
}

// roundCents rounds a difference of float sums to 1e-6 dollars, so
// 0.30000000000000004 - 0.3 reads 0.
func roundCents(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func periodCharts(unit string, rows []periodRow) (template.HTML, template.HTML) {
	labels := make([]string, len(rows))
	in, out, cost := make([]float64, len(rows)), make([]float64, len(rows)), make([]float64, len(rows))
	for i, r := range rows {
		labels[i], in[i], out[i], cost[i] = r.Label, float64(r.Input), float64(r.Output), r.Cost
	}
	return columnChart("Tokens by "+unit, labels, []series{{Name: "input", Class: "b1", Values: in}, {Name: "output", Class: "b2", Values: out}}, false),
		columnChart("Estimated cost by "+unit, labels, []series{{Name: "cost", Class: "b3", Values: cost}}, true)
}
