package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/web"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestHostileContentRendersInert: every page over a store full of
// payloads (script tags, javascript: links, onerror=, SVG with script,
// iframes, bidi overrides, a 1 MB line, a 1.2 MB message) is inert
// (checkInert), carries the Content-Security-Policy, and still shows the
// payloads as text: nothing stored is hidden.
func TestHostileContentRendersInert(t *testing.T) {
	h := newHostile(t)
	srv := newServer(t, web.Options{Store: readOnly(t, h.path)})
	pages := []string{"/", "/?children=1", "/usage", "/search?q=pwnedword", "/search?q=needle-kubernetes", "/search?q=onerror",
		"/search?q=script&role=tool", "/search?q=%3Cscript%3E", "/search?q=bold&partial=1", "/nope"}
	for _, id := range h.ids {
		pages = append(pages, "/s/"+url.PathEscape(id), "/s/"+url.PathEscape(id)+"?all=1&compacted=1")
	}
	texts := map[string]string{}
	for _, p := range pages {
		res, body := get(t, srv, p)
		if p == "/nope" {
			require.Equal(t, http.StatusNotFound, res.StatusCode)
		} else {
			require.Equal(t, http.StatusOK, res.StatusCode, p)
		}
		require.Equal(t, web.CSP, res.Header.Get("Content-Security-Policy"), p)
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"), p)
		if strings.Contains(p, "partial=1") {
			body = `<script src="/static/app.js"></script>` + body // a fragment: no page head
		}
		texts[p] = checkInert(t, p, body)
	}
	conv := texts["/s/hostile-1"]
	// The payloads are there, as text.
	for _, want := range []string{scriptTag, "onerror=", "javascript:window." + Marker, "<iframe", "[U+202E]", "[U+2066]",
		"<img src=x onerror=alert(1)>", "桂林 <b>bold</b>", "thinking " + scriptTag, "</pre>" + scriptTag} {
		require.Contains(t, conv, want)
	}
	require.Contains(t, conv, hugeLine, "a 1 MB line is shown whole")
	require.Contains(t, conv, strings.Repeat("B", 1<<20), "the first MiB of a longer message")
	require.NotContains(t, conv, strings.Repeat("B", 1<<20+1))
	require.Contains(t, conv, "148 KiB more of this message are not shown")
	require.Contains(t, texts["/"], `<svg><script>window.`+Marker+`=1</script></svg> title`)
	require.Contains(t, texts["/usage"], "<svg onload=alert(1)>")
	require.Contains(t, texts["/search?q=pwnedword"], "pwnedword")
	require.Contains(t, texts["/search?q=needle-kubernetes"], "[U+202E]")
}

// TestMarkdownLinks: the Markdown renderer links only to http(s),
// mailto and this site's own paths; everything else stays text.
func TestMarkdownLinks(t *testing.T) {
	st := hermesstatetest.Fresh(t)
	ctx := context.Background()
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "md", Source: "cli"})
	require.NoError(t, err)
	bad := []string{"javascript:alert(1)", "JaVaScRiPt:alert(1)", "vbscript:x", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd", "//evil.example/x"}
	var b strings.Builder
	for i, u := range bad {
		fmt.Fprintf(&b, "[bad%d](%s) ", i, u)
	}
	b.WriteString("[good](https://example.com/x) [mail](mailto:a@example.com) [own](/s/md) <https://auto.example/> www.linkify.example")
	hermesstatetest.AppendAll(t, st, "md", repo.MessageInput{Role: "assistant", Content: sp(b.String())})
	srv := newServer(t, web.Options{Store: st})
	_, body := get(t, srv, "/s/md")
	checkInert(t, "/s/md", body)
	hrefs := regexp.MustCompile(`<a href="([^"]*)" rel="nofollow noopener noreferrer">`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, m := range hrefs {
		got = append(got, m[1])
	}
	require.Equal(t, []string{"https://example.com/x", "mailto:a@example.com", "/s/md", "https://auto.example/", "http://www.linkify.example"}, got)
	for i := range bad {
		require.Contains(t, body, fmt.Sprintf("bad%d", i))
	}
}

// TestHostAndOriginChecks: a Host that is not a loopback name or an IP
// (DNS rebinding) is refused, and so is a request another site's page
// makes (foreign Origin, cross-site fetch or subresource); following a link
// from elsewhere (a top-level navigation) is served.
func TestHostAndOriginChecks(t *testing.T) {
	st := hermesstatetest.Fresh(t)
	srv := newServer(t, web.Options{Store: st})
	cases := []struct {
		name string
		hdr  []string
		want int
	}{
		{"loopback ip", nil, 200},
		{"localhost", []string{"Host", "localhost:4321"}, 200},
		{"ipv6 loopback", []string{"Host", "[::1]:4321"}, 200},
		{"lan ip", []string{"Host", "192.168.1.20:4321"}, 200},
		{"rebinding name", []string{"Host", "attacker.example:4321"}, http.StatusMisdirectedRequest},
		{"rebinding name no port", []string{"Host", "attacker.example"}, http.StatusMisdirectedRequest},
		{"localhost lookalike", []string{"Host", "localhost.attacker.example"}, http.StatusMisdirectedRequest},
		{"empty host", []string{"Host", ""}, http.StatusMisdirectedRequest},
		{"same origin", []string{"Origin", "http://127.0.0.1:8080"}, 200},
		{"foreign origin", []string{"Origin", "http://attacker.example"}, http.StatusForbidden},
		{"null origin", []string{"Origin", "null"}, http.StatusForbidden},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Dest", "empty"}, http.StatusForbidden},
		{"cross-site script include", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "script"}, http.StatusForbidden},
		{"cross-site iframe", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "iframe"}, http.StatusForbidden},
		{"link from elsewhere", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}, 200},
		{"same-origin fetch", []string{"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"}, 200},
	}
	for _, c := range cases {
		for _, p := range []string{"/", "/search?q=x", "/usage", "/static/app.js"} {
			res, body := get(t, srv, p, c.hdr...)
			require.Equalf(t, c.want, res.StatusCode, "%s %s: %s", c.name, p, body)
			if c.want != 200 {
				require.Contains(t, body, "refused")
				require.NotContains(t, body, "<html")
			}
		}
	}
}

// fakeEdits records nothing: the real edits go through the store.
type storeEdits struct{ st *hs.Store }

func (e storeEdits) SetTitle(ctx context.Context, id, title string) error {
	_, err := e.st.Titles().Set(ctx, id, title)
	return err
}

func (e storeEdits) SetArchived(ctx context.Context, id string, on bool) error {
	_, err := e.st.Lineage().SetArchived(ctx, id, on)
	return err
}

// TestWritesNeedAllowWriteAndToken: without Edits no page offers a form
// and every POST is refused (405) with nothing changed; with Edits a POST
// without the process's token, with a wrong one, or from another origin is
// refused (403) with nothing changed, and only the right token sets the
// title. Other methods are refused.
func TestWritesNeedAllowWriteAndToken(t *testing.T) {
	ctx := context.Background()
	st := hermesstatetest.Fresh(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "w1", Source: "cli"})
	require.NoError(t, err)
	title := func() string {
		v, err := st.Titles().Get(ctx, "w1")
		require.NoError(t, err)
		return v
	}

	ro := newServer(t, web.Options{Store: st})
	_, body := get(t, ro, "/s/w1")
	require.NotContains(t, body, "<form method=\"post\"")
	require.NotContains(t, body, ro.Token())
	for _, p := range []string{"/s/w1/title", "/s/w1/archive", "/", "/s/w1"} {
		res := post(t, ro, p, url.Values{"token": {ro.Token()}, "title": {"x"}, "archived": {"1"}})
		require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, p)
	}
	require.Equal(t, "", title())

	rw := newServer(t, web.Options{Store: st, Edits: storeEdits{st}})
	require.Len(t, rw.Token(), 64)
	require.NotEqual(t, ro.Token(), rw.Token(), "a token per server")
	_, body = get(t, rw, "/s/w1")
	require.Contains(t, body, `name="token" value="`+rw.Token()+`"`)
	for name, form := range map[string]url.Values{
		"no token":         {"title": {"x"}},
		"empty token":      {"title": {"x"}, "token": {""}},
		"wrong token":      {"title": {"x"}, "token": {strings.Repeat("0", 64)}},
		"other's token":    {"title": {"x"}, "token": {ro.Token()}},
		"truncated token":  {"title": {"x"}, "token": {rw.Token()[:32]}},
		"token in a query": nil,
	} {
		target := "/s/w1/title"
		if form == nil {
			target += "?token=" + rw.Token()
			form = url.Values{"title": {"x"}}
		}
		res := post(t, rw, target, form)
		require.Equal(t, http.StatusForbidden, res.StatusCode, name)
	}
	res := post(t, rw, "/s/w1/title", url.Values{"title": {"x"}, "token": {rw.Token()}}, "Origin", "http://attacker.example")
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res = post(t, rw, "/s/w1/title", url.Values{"title": {"x"}, "token": {rw.Token()}}, "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document")
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a form another site posts")
	require.Equal(t, "", title())

	res = post(t, rw, "/s/w1/title", url.Values{"title": {"Deploy notes"}, "token": {rw.Token()}}, "Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/s/w1?edited=title+saved", res.Header.Get("Location"))
	require.Equal(t, "Deploy notes", title())
	res = post(t, rw, "/s/w1/archive", url.Values{"archived": {"1"}, "token": {rw.Token()}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	s, err := st.Sessions().Get(ctx, "w1")
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Archived)
	// A store error is said on the page, not taken for success.
	res = post(t, rw, "/s/w1/title", url.Values{"title": {strings.Repeat("t", 200)}, "token": {rw.Token()}})
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Contains(t, res.Header.Get("Location"), "edit_error=")
	require.Equal(t, "Deploy notes", title())

	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, _ := http.NewRequest(m, "/s/w1/title", nil)
		req.Host = "127.0.0.1:8080"
		rec := &recorder{h: http.Header{}}
		rw.ServeHTTP(rec, req)
		require.Equal(t, http.StatusMethodNotAllowed, rec.code, m)
	}
}

type recorder struct {
	h    http.Header
	code int
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(c int)           { r.code = c }

// TestSearchPage: the hits are Search().Run's with the same options, in
// its order, each linking /s/ID#mMESSAGE; the hit is marked; "N more"
// counts the hits after the page; a query with no word is said to have
// searched nothing, not "no messages match"; bad filters are a 400 that
// names the filter.
func TestSearchPage(t *testing.T) {
	ctx := context.Background()
	st := hermesstatetest.Fresh(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s1", Source: "cli"})
	require.NoError(t, err)
	var ms []repo.MessageInput
	for i := range 30 {
		ms = append(ms, repo.MessageInput{Role: "user", Content: sp(fmt.Sprintf("deploy step %d of the rollout", i))})
	}
	hermesstatetest.AppendAll(t, st, "s1", ms...)
	srv := newServer(t, web.Options{Store: st, SearchLimit: 20})
	want, err := st.Search().Run(ctx, "deploy", repo.SearchOptions{Limit: 20})
	require.NoError(t, err)

	_, body := get(t, srv, "/search?q=deploy")
	checkInert(t, "search", body)
	links := regexp.MustCompile(`href="/s/s1#m(\d+)"`).FindAllStringSubmatch(body, -1)
	require.Len(t, links, 20)
	for i, l := range links {
		require.Equal(t, strconv.FormatInt(want.Hits[i].ID, 10), l[1], "hit %d", i)
	}
	require.Contains(t, body, "<mark>deploy</mark>")
	require.Contains(t, body, `<span id="more" data-count="/search?partial=more&amp;q=deploy">more</span>`)
	res, more := get(t, srv, "/search?partial=more&q=deploy")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "10 more", more)
	_, more = get(t, srv, "/search?partial=more&q=deploy&offset=5")
	require.Equal(t, "5 more", more)
	_, body = get(t, srv, "/search?q=deploy&offset=20")
	require.Len(t, regexp.MustCompile(`href="/s/s1#m`).FindAllString(body, -1), 10)
	require.NotContains(t, body, `id="more"`)
	_, more = get(t, srv, "/search?partial=more&q=deploy&offset=20")
	require.Equal(t, "0 more", more)
	big := newServer(t, web.Options{Store: st, SearchLimit: 1})
	_, more = get(t, big, "/search?partial=more&q=deploy")
	require.Equal(t, "29 more", more)

	_, body = get(t, srv, "/search?q=deploy&role=assistant")
	require.Contains(t, body, "No messages match")
	_, body = get(t, srv, "/search?q=AND")
	require.Contains(t, body, "Nothing searched")
	require.NotContains(t, body, "No messages match")

	res, body = get(t, srv, "/search?q=deploy&role=robot")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, body, "role must be")
	res, body = get(t, srv, "/search?q=deploy&since=yesterday")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, body, "since must be")
	res, _ = get(t, srv, "/search?q=deploy&offset=-1")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
}

// TestConversationPaging: a session longer than a page is shown a page
// at a time; /s/ID/m/MID redirects to the page holding MID with #mMID
// (and to the view with inactive messages when MID was rewound); a prefix
// of the id redirects to the full id.
func TestConversationPaging(t *testing.T) {
	ctx := context.Background()
	st := hermesstatetest.Fresh(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "long-session", Source: "cli"})
	require.NoError(t, err)
	var ms []repo.MessageInput
	for i := range 25 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ms = append(ms, repo.MessageInput{Role: role, Content: sp(fmt.Sprintf("message %d", i))})
	}
	ids := hermesstatetest.AppendAll(t, st, "long-session", ms...)
	srv := newServer(t, web.Options{Store: st, ConversationPage: 10})

	_, body := get(t, srv, "/s/long-session")
	require.Contains(t, body, fmt.Sprintf(`id="m%d"`, ids[9]))
	require.NotContains(t, body, fmt.Sprintf(`id="m%d"`, ids[10]))
	require.Contains(t, body, "page 1 of 3")
	res, _ := get(t, srv, fmt.Sprintf("/s/long-session/m/%d", ids[23]))
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, fmt.Sprintf("/s/long-session?p=2#m%d", ids[23]), res.Header.Get("Location"))
	_, body = get(t, srv, "/s/long-session?p=2")
	require.Contains(t, body, fmt.Sprintf(`id="m%d"`, ids[23]))

	// Rewind the last user turn: its messages become inactive.
	_, err = st.Rewind().ToMessage(ctx, "long-session", ids[24], repo.RewindOptions{})
	require.NoError(t, err)
	res, _ = get(t, srv, fmt.Sprintf("/s/long-session/m/%d", ids[24]))
	require.Equal(t, fmt.Sprintf("/s/long-session?all=1&p=2#m%d", ids[24]), res.Header.Get("Location"))
	_, body = get(t, srv, "/s/long-session?p=2")
	require.NotContains(t, body, fmt.Sprintf(`id="m%d"`, ids[24]), "inactive messages only on request")
	_, body = get(t, srv, "/s/long-session?p=2&all=1")
	require.Regexp(t, fmt.Sprintf(`class="msg role-user inactive" id="m%d"`, ids[24]), body)

	res, _ = get(t, srv, "/s/long-session/m/999999")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = get(t, srv, "/s/long-session/m/abc")
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	res, _ = get(t, srv, "/s/long-ses?all=1")
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, "/s/long-session?all=1", res.Header.Get("Location"))
	res, _ = get(t, srv, "/s/nothing-like-it")
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

// TestToolCallRendering: a tool call shows its name, its arguments as
// indented JSON with CJK as characters, and its result under it (the
// result keeps its own id); reasoning is folded.
func TestToolCallRendering(t *testing.T) {
	ctx := context.Background()
	st := hermesstatetest.Fresh(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "tc", Source: "cli"})
	require.NoError(t, err)
	ids := hermesstatetest.AppendAll(t, st, "tc",
		repo.MessageInput{Role: "user", Content: sp("check pods")},
		repo.MessageInput{Role: "assistant", Reasoning: sp("I should run kubectl"), ToolCalls: []byte(`[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"kubectl get pods\",\"note\":\"\\u68c0\\u67e5\"}"}}]`)},
		repo.MessageInput{Role: "tool", ToolCallID: "c1", ToolName: "terminal", Content: sp("api-0  CrashLoopBackOff")},
	)
	srv := newServer(t, web.Options{Store: st})
	_, body := get(t, srv, "/s/tc")
	require.Contains(t, body, `<span class="tool">terminal</span>`)
	require.Contains(t, body, "{\n  &#34;command&#34;: &#34;kubectl get pods&#34;,\n  &#34;note&#34;: &#34;检查&#34;\n}")
	require.Contains(t, body, fmt.Sprintf(`<details class="call" id="call-%d">`, ids[2]))
	require.Contains(t, body, fmt.Sprintf(`id="m%d"`, ids[2]))
	require.Contains(t, body, "api-0  CrashLoopBackOff")
	require.Contains(t, body, `<details class="reasoning"><summary>reasoning</summary>`)
	require.Equal(t, 1, strings.Count(body, "CrashLoopBackOff"), "the result is shown once, under its call")
}
