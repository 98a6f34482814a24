package web

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/present"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// maxShown is the most of one text the page shows; the rest is counted
// and the command that reads it whole is named.
const maxShown = 1 << 20

// msgView is a message as the conversation page lays it out.
type msgView struct {
	present.Message
	Body      template.HTML // the text, rendered
	Plain     bool          // shown as preformatted text (tool output, long text)
	Cut       int           // bytes of the text not shown
	Reasoning template.HTML
	Calls     []callView
}

type callView struct {
	Name, ID, Arguments, Preview string
	ArgsCut                      int
	Result                       *msgView
}

// shown cuts text to maxShown bytes (at a character boundary) and returns
// the bytes left out.
func shown(text string) (string, int) {
	if len(text) <= maxShown {
		return text, 0
	}
	cut := maxShown
	for cut > 0 && (text[cut]&0xC0) == 0x80 {
		cut--
	}
	return text[:cut], len(text) - cut
}

// viewOf lays out one message: tool output and very long text as
// preformatted text, everything else as Markdown.
func viewOf(m present.Message) msgView {
	v := msgView{Message: m}
	text, cut := shown(m.Text)
	v.Cut = cut
	v.Plain = m.Role == "tool" || len(text) > maxMarkdown
	if v.Plain {
		v.Body = template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>") // #nosec: escaped
	} else if strings.TrimSpace(text) != "" {
		v.Body = markdown(text)
	}
	if m.Reasoning != "" {
		r, _ := shown(m.Reasoning)
		if len(r) > maxMarkdown {
			v.Reasoning = template.HTML("<pre>" + template.HTMLEscapeString(r) + "</pre>") // #nosec: escaped
		} else {
			v.Reasoning = markdown(r)
		}
	}
	for _, c := range m.ToolCalls {
		args, argsCut := shown(c.Arguments)
		cv := callView{Name: c.Name, ID: c.ID, Arguments: args, ArgsCut: argsCut, Preview: clip(strings.Join(strings.Fields(args), " "), 120)}
		if c.Name == "" {
			cv.Name = "(unnamed tool)"
		}
		if c.Result != nil {
			r := viewOf(*c.Result)
			cv.Result = &r
		}
		v.Calls = append(v.Calls, cv)
	}
	return v
}

type lineageLink struct {
	ID, Label string
	Current   bool
}

type conversationPage struct {
	page
	S                  *models.Session
	ID, Label          string
	Messages           []msgView
	All, Compacted     bool
	PageN, Pages       int
	Total              int64
	Known              bool // Total is known (not in the compacted view)
	PrevQ, NextQ       string
	ToggleAllQ         string
	ToggleCompactedQ   string
	Ancestors          []lineageLink
	Chain              []lineageLink
	Descendants        []lineageLink
	DescendantsMore    int
	Tip                string
	Archived           bool
	Cost               string
	EditError, EditMsg string
}

// maxLineage caps the descendants the page links.
const maxLineage = 100

func (s *Server) conversation(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	raw := r.PathValue("id")
	id, err := s.opt.Store.Lineage().ResolveID(ctx, raw)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if id != raw { // a prefix: the page's address names the session
		http.Redirect(w, r, "/s/"+url.PathEscape(id)+queryOf(q), http.StatusFound)
		return
	}
	pageN, err := offsetOf(q, "p")
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	sess, err := s.opt.Store.Sessions().Get(ctx, id)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	p := conversationPage{page: s.page(sessionLabel(sess), ""), S: sess, ID: id, Label: sessionLabel(sess),
		All: q.Get("all") == "1", Compacted: q.Get("compacted") == "1", PageN: pageN, Archived: sess.Archived != 0,
		EditError: q.Get("edit_error"), EditMsg: q.Get("edited")}
	n := s.opt.ConversationPage
	var ms []models.Message
	if p.Compacted {
		ms, err = s.opt.Store.Transcript().Get(ctx, id, repo.GetOptions{IncludeCompacted: true, IncludeInactive: p.All, Limit: n + 1, Offset: pageN * n})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		if len(ms) > n {
			ms = ms[:n]
			p.NextQ = with(q, "p", strconv.Itoa(pageN+1))
		}
	} else {
		pg, err := s.opt.Store.Messages().Page(ctx, id, repo.PageOptions{Offset: pageN * n, Limit: n, IncludeInactive: p.All})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		ms, p.Total, p.Known = pg.Messages, pg.Total, true
		p.Pages = int((pg.Total + int64(n) - 1) / int64(n))
		if int64((pageN+1)*n) < pg.Total {
			p.NextQ = with(q, "p", strconv.Itoa(pageN+1))
		}
	}
	if pageN > 0 {
		p.PrevQ = with(q, "p", strconv.Itoa(pageN-1))
	}
	p.ToggleAllQ = with(with2(q, "p", ""), "all", flip(p.All))
	p.ToggleCompactedQ = with(with2(q, "p", ""), "compacted", flip(p.Compacted))
	for _, m := range present.Conversation(ms) {
		if m.Answers {
			continue // shown under its call
		}
		p.Messages = append(p.Messages, viewOf(m))
	}
	if err := s.lineage(r, &p); err != nil {
		s.failErr(w, r, err)
		return
	}
	switch {
	case sess.ActualCostUSD != nil:
		p.Cost = fmt.Sprintf("$%.4f", *sess.ActualCostUSD)
	case sess.EstimatedCostUSD != nil:
		p.Cost = fmt.Sprintf("~$%.4f", *sess.EstimatedCostUSD)
	}
	s.render(w, r, "conversation.html", p)
}

// with2 is with, as url.Values.
func with2(q url.Values, name, value string) url.Values {
	v, _ := url.ParseQuery(with(q, name, value))
	return v
}

func flip(on bool) string {
	if on {
		return ""
	}
	return "1"
}

func queryOf(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func sessionLabel(s *models.Session) string {
	if t := ptr.Deref(s.Title); t != "" {
		return t
	}
	return "Session " + s.ID
}

// lineage fills the page's links to the session's relatives.
func (s *Server) lineage(r *http.Request, p *conversationPage) error {
	ctx, lin := r.Context(), s.opt.Store.Lineage()
	anc, err := lin.Ancestors(ctx, p.ID)
	if err != nil {
		return err
	}
	des, err := lin.Descendants(ctx, p.ID)
	if err != nil {
		return err
	}
	chain, err := lin.CompressionChain(ctx, p.ID)
	if err != nil {
		return err
	}
	if p.Tip, err = lin.CompressionTip(ctx, p.ID); err != nil {
		return err
	}
	if p.Tip == p.ID {
		p.Tip = ""
	}
	label := func(id string) lineageLink {
		t, err := s.opt.Store.Titles().Get(ctx, id)
		if err != nil || t == "" {
			t = id
		}
		return lineageLink{ID: id, Label: t, Current: id == p.ID}
	}
	for _, a := range anc {
		p.Ancestors = append(p.Ancestors, label(a))
	}
	if len(chain) > 1 {
		for _, c := range chain {
			p.Chain = append(p.Chain, label(c))
		}
	}
	if len(des) > maxLineage {
		p.DescendantsMore = len(des) - maxLineage
		des = des[:maxLineage]
	}
	for _, d := range des {
		p.Descendants = append(p.Descendants, lineageLink{ID: d, Label: d})
	}
	return nil
}

// messageLink sends /s/ID/m/MID to the page of the conversation holding
// message MID, scrolled to it: the live view when the message is live,
// else the view with inactive messages.
func (s *Server) messageLink(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := s.opt.Store.Lineage().ResolveID(ctx, r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	mid, err := strconv.ParseInt(strings.TrimPrefix(r.PathValue("mid"), "m"), 10, 64)
	if err != nil || mid <= 0 {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q is not a message id (a positive number, as #m123)", clip(r.PathValue("mid"), 40)))
		return
	}
	for _, all := range []bool{false, true} {
		pg, err := s.opt.Store.Messages().Page(ctx, id, repo.PageOptions{BeforeID: mid + 1, Limit: 1, IncludeInactive: all})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		if len(pg.Messages) == 1 && pg.Messages[0].ID == mid {
			q := url.Values{}
			if n := int(pg.Start) / s.opt.ConversationPage; n > 0 {
				q.Set("p", strconv.Itoa(n))
			}
			if all {
				q.Set("all", "1")
			}
			http.Redirect(w, r, "/s/"+url.PathEscape(id)+queryOf(q)+"#m"+strconv.FormatInt(mid, 10), http.StatusSeeOther)
			return
		}
	}
	s.failErr(w, r, fmt.Errorf("message %d is not in session %s: %w", mid, id, hs.ErrNotFound))
}

// ---- edits (only with Options.Edits)

func (s *Server) editTitle(w http.ResponseWriter, r *http.Request) {
	s.edit(w, r, func(id string) (string, error) {
		title := r.PostFormValue("title")
		return "title saved", s.opt.Edits.SetTitle(r.Context(), id, title)
	})
}

func (s *Server) editArchive(w http.ResponseWriter, r *http.Request) {
	s.edit(w, r, func(id string) (string, error) {
		on := r.PostFormValue("archived") == "1"
		msg := "unarchived"
		if on {
			msg = "archived"
		}
		return msg, s.opt.Edits.SetArchived(r.Context(), id, on)
	})
}

// edit checks the token, resolves the session and runs fn, then sends the
// browser back to the conversation with what happened.
func (s *Server) edit(w http.ResponseWriter, r *http.Request, fn func(id string) (string, error)) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	if !s.checkToken(r) {
		s.fail(w, r, http.StatusForbidden, "refused: the form's token is not this server's (reload the page: the token changes each time serve starts)")
		return
	}
	id, err := s.opt.Store.Lineage().ResolveID(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := url.Values{}
	msg, err := fn(id)
	if err != nil {
		if errors.Is(err, hs.ErrNotFound) {
			s.failErr(w, r, err)
			return
		}
		q.Set("edit_error", err.Error())
	} else {
		q.Set("edited", msg)
	}
	http.Redirect(w, r, "/s/"+url.PathEscape(id)+"?"+q.Encode(), http.StatusSeeOther)
}
