package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/present"
	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// page is what every page's header and footer show.
type page struct {
	Title    string
	Nav      string // sessions, search or usage
	Location string
	Writable bool
	Token    string
	Q        string // the header's search box
}

func (s *Server) page(title, nav string) page {
	p := page{Title: title, Nav: nav, Location: s.opt.Location, Writable: s.opt.Edits != nil}
	if p.Writable {
		p.Token = s.token
	}
	return p
}

// when is an epoch in the page's time zone, to the minute.
func (s *Server) when(e float64) string {
	if e <= 0 {
		return ""
	}
	return models.Epoch(e).Time().In(s.opt.TimeZone).Format("2006-01-02 15:04")
}

// iso is an epoch in RFC 3339, UTC (the datetime of a <time>).
func iso(e float64) string {
	if e <= 0 {
		return ""
	}
	return models.Epoch(e).Time().UTC().Format(time.RFC3339)
}

func groupDigits(v int64) string { return humanize.Comma(v) }

func humanBytes(n int) string { return humanize.IBytes(uint64(max(n, 0))) }

// marksOf is a snippet as spans, tool-call JSON made readable.
func marksOf(snippet string) []present.Span { return present.Marks(present.ReadableSnippet(snippet)) }

// filters reads the filters shared by every surface from the query.
func (s *Server) filters(q url.Values) (present.Filters, error) {
	f := present.Filters{
		Sources: present.List(q["source"]...), ExcludeSources: present.List(q["exclude_source"]...),
		Roles: present.List(q["role"]...), Title: strings.TrimSpace(q.Get("title")), Sort: q.Get("sort"),
	}
	var err error
	if f.Since, err = present.ParseWhen("since", q.Get("since"), s.opt.TimeZone); err != nil {
		return f, err
	}
	if f.Until, err = present.ParseWhen("until", q.Get("until"), s.opt.TimeZone); err != nil {
		return f, err
	}
	return f, f.Check()
}

// offsetOf reads a non-negative integer parameter (0 when absent).
func offsetOf(q url.Values, name string) (int, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<30 {
		return 0, fmt.Errorf("%s must be a whole number, 0 or more (got %q)", name, clip(v, 40))
	}
	return n, nil
}

// with returns the query q with name set to value (removed when "").
func with(q url.Values, name, value string) string {
	c := url.Values{}
	for k, v := range q {
		if k != "partial" {
			c[k] = v
		}
	}
	if value == "" {
		c.Del(name)
	} else {
		c.Set(name, value)
	}
	return c.Encode()
}

// ---- sessions

type sessionRow struct {
	ID, Label, Preview, Source, Model, EndReason string
	Titled, Unread, Open                         bool
	Started, LastActive                          float64
	Messages                                     int64
	// Lineage: the session this row continues or came from.
	Parent, ParentKind, Root string
}

type listingPage struct {
	page
	F              present.Filters
	Since, Until   string
	Children       bool
	Rows           []sessionRow
	Offset, Limit  int
	PrevQ, NextQ   string
	More           bool
	Sources        []string
	FilterNarrowed bool
}

func rowOf(r repo.RichSession) sessionRow {
	row := sessionRow{ID: r.ID, Label: ptr.Deref(r.Title), Preview: r.Preview, Source: r.Source, Model: ptr.Deref(r.Model),
		EndReason: ptr.Deref(r.EndReason), Unread: r.Unread, Open: r.EndedAt == nil, Started: float64(r.StartedAt),
		LastActive: r.LastActive, Messages: r.MessageCount, Parent: ptr.Deref(r.ParentSessionID), Root: r.LineageRootID}
	row.Titled = row.Label != ""
	if !row.Titled {
		row.Label = r.Preview
	}
	if row.Label == "" {
		row.Label = "(no user message)"
	}
	switch {
	case r.BranchedFrom != "":
		row.ParentKind = "branch of"
	case r.ResetFrom != "":
		row.ParentKind = "reset of"
	case row.Parent != "":
		row.ParentKind = "child of"
	}
	return row
}

func (s *Server) listing(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	f, err := s.filters(q)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	offset, err := offsetOf(q, "offset")
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	lim := s.opt.ListLimit
	opt := f.Listing(lim+1, offset)
	opt.IncludeChildren = q.Get("children") == "1"
	rows, err := s.opt.Store.Listing().Rich(ctx, opt)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	p := listingPage{page: s.page("Sessions", "sessions"), F: f, Since: q.Get("since"), Until: q.Get("until"),
		Children: opt.IncludeChildren, Offset: offset, Limit: lim, More: len(rows) > lim,
		FilterNarrowed: len(f.Sources)+len(f.ExcludeSources) > 0 || f.Title != "" || f.Since > 0 || f.Until > 0 || offset > 0}
	if p.More {
		rows = rows[:lim]
	}
	for _, x := range rows {
		p.Rows = append(p.Rows, rowOf(x))
	}
	if offset > 0 {
		p.PrevQ = with(q, "offset", strconv.Itoa(max(0, offset-lim)))
	}
	if p.More {
		p.NextQ = with(q, "offset", strconv.Itoa(offset+lim))
	}
	if p.Sources, err = s.sources(r); err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, "sessions.html", p)
}

// sourcesTTL is how long the list of sources the filters offer is kept:
// it is an aggregate over every session, too slow to repeat on each
// keystroke of a search, and a source new since then can still be typed
// into the address.
const sourcesTTL = 30 * time.Second

// sources are the sources the store holds, for the filters' choices.
func (s *Server) sources(r *http.Request) ([]string, error) {
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	if s.srcList != nil && time.Since(s.srcAt) < sourcesTTL {
		return s.srcList, nil
	}
	bs, err := s.opt.Store.Usage().BySource(r.Context(), repo.StatsFilter{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Source)
	}
	s.srcList, s.srcAt = out, time.Now()
	return out, nil
}

// ---- search

type hitRow struct {
	SessionID, Title, Source, Role, ToolName string
	MessageID                                int64
	Time                                     float64
	Spans                                    []present.Span
	Link                                     string
}

type searchPage struct {
	page
	F            present.Filters
	Since, Until string
	Ran          bool   // a search ran (Hits is its answer)
	NotRun       string // why nothing was searched
	Route        string
	Hits         []hitRow
	Offset       int
	More         bool   // hits follow this page
	MoreURL      string // counts them (?partial=more), fetched by the page's script
	PrevQ, NextQ string
	Sources      []string
	Roles, Sorts []string
}

// moreProbe is how many hits past the page a search counts for "N more".
// The page itself asks for one hit more than it shows (is there more?);
// its script then fetches the count (?partial=more), so counting never
// delays the hits.
const moreProbe = 200

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	f, err := s.filters(q)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	offset, err := offsetOf(q, "offset")
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	text := strings.TrimSpace(q.Get("q"))
	if utf8.RuneCountInString(text) > 1000 {
		s.fail(w, r, http.StatusBadRequest, "the query is longer than 1000 characters")
		return
	}
	p := searchPage{page: s.page("Search", "search"), F: f, Since: q.Get("since"), Until: q.Get("until"), Offset: offset,
		Roles: present.Roles, Sorts: present.Sorts}
	p.Q = text
	lim := s.opt.SearchLimit
	if q.Get("partial") == "more" {
		s.countMore(w, r, text, f, offset+lim)
		return
	}
	if text != "" {
		res, err := s.opt.Store.Search().Run(ctx, text, f.Search(lim+1, offset))
		unsearchable := errors.Is(err, fts.ErrNothingToSearch)
		if err != nil && !unsearchable {
			s.failErr(w, r, err)
			return
		}
		p.Route = string(res.Route)
		switch {
		case unsearchable, res.Route == repo.RouteEmpty:
			p.NotRun = fmt.Sprintf("Nothing searched: %q holds no word to search for once search operators and punctuation (AND, OR, NOT, quotes, parentheses, *, ...) are set aside.", text)
		case res.Route == repo.RouteSyntaxError:
			p.NotRun = fmt.Sprintf("Nothing searched: the full-text index refused %q as a query (unbalanced quotes or operators?).", text)
		default:
			p.Ran = true
		}
		hits := res.Hits
		if len(hits) > lim {
			p.More = true
			p.MoreURL = "/search?" + with(q, "partial", "more")
			hits = hits[:lim]
		}
		titles := map[string]string{}
		for _, h := range hits {
			title, ok := titles[h.SessionID]
			if !ok {
				if title, err = s.opt.Store.Titles().Get(ctx, h.SessionID); err != nil {
					s.failErr(w, r, err)
					return
				}
				titles[h.SessionID] = title
			}
			p.Hits = append(p.Hits, hitRow{SessionID: h.SessionID, Title: title, Source: ptr.Deref(h.Source), Role: h.Role,
				ToolName: ptr.Deref(h.ToolName), MessageID: h.ID, Time: h.Timestamp, Spans: marksOf(ptr.Deref(h.Snippet)),
				Link: "/s/" + url.PathEscape(h.SessionID) + "#m" + strconv.FormatInt(h.ID, 10)})
		}
		if offset > 0 {
			p.PrevQ = with(q, "offset", strconv.Itoa(max(0, offset-lim)))
		}
		if p.More {
			p.NextQ = with(q, "offset", strconv.Itoa(offset+lim))
		}
	}
	if p.Sources, err = s.sources(r); err != nil {
		s.failErr(w, r, err)
		return
	}
	name := "search.html"
	if q.Get("partial") == "1" {
		name = "results"
	}
	s.render(w, r, name, p)
}

// countMore answers ?partial=more: the number of hits after the first
// from, counted up to moreProbe ("200+ more" beyond), as plain text.
func (s *Server) countMore(w http.ResponseWriter, r *http.Request, text string, f present.Filters, from int) {
	if text == "" {
		s.fail(w, r, http.StatusBadRequest, "no query to count hits of")
		return
	}
	res, err := s.opt.Store.Search().Run(r.Context(), text, f.Search(moreProbe, from))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	n := len(res.Hits)
	msg := strconv.Itoa(n) + " more"
	if n == moreProbe {
		msg = strconv.Itoa(n) + "+ more"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(msg))
}
