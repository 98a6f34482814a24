package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/web"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func sp(s string) *string { return &s }

// Marker is the global a payload would set if any stored script ran.
const Marker = "__hermesPwned"

// Payloads: stored content written to run script, load things or reorder
// text. Each must come out of every page as inert text.
var (
	scriptTag  = `<script>window.` + Marker + `=1</script>`
	imgOnerror = `<img src=x onerror="window.` + Marker + `=1">`
	svgScript  = `<svg onload="window.` + Marker + `=1"><script>window.` + Marker + `=1</script></svg>`
	jsLink     = `[click me](javascript:window.` + Marker + `=1)`
	jsLinkHTML = `<a href="javascript:window.` + Marker + `=1">html link</a>`
	jsImage    = `![pic](javascript:window.` + Marker + `=1)`
	bidiText   = "access\u202e level: admin \u2066evil\u2069 done"
	hugeLine   = strings.Repeat("A", 1_000_000)
	tooBig     = strings.Repeat("B", 1_200_000)
)

// hostile is a store whose sessions carry the payloads everywhere stored
// text is shown: titles, sources, previews, messages, Markdown, tool names,
// tool arguments and results, reasoning, model names. It returns the
// writable store and its path, and the ids of the sessions.
type hostile struct {
	st      *hs.Store
	path    string
	ids     []string
	msgID   int64 // the message "needle-kubernetes" is in (session ids[1])
	toolRes int64 // a tool result in ids[0]
}

func newHostile(t testing.TB) *hostile {
	t.Helper()
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	h := &hostile{st: st, path: path}
	base := models.Now() - 3600

	s1, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "hostile-1", Source: "cli", Model: "<script>model</script>", StartedAt: base})
	require.NoError(t, err)
	_, err = st.Titles().Set(ctx, s1.ID, `<svg><script>window.`+Marker+`=1</script></svg> title`)
	require.NoError(t, err)
	calls := models.MustJSON([]map[string]any{{"id": "call_x", "type": "function", "function": map[string]any{
		"name":      `<img src=x onerror=alert(1)>`,
		"arguments": `{"command": "` + strings.ReplaceAll(imgOnerror, `"`, `\"`) + `", "检查": "桂林 <b>bold</b>"}`}}})
	ids := hermesstatetest.AppendAll(t, st, s1.ID,
		repo.MessageInput{Role: "user", Content: sp(scriptTag + " hello " + imgOnerror + " pwnedword"), Timestamp: base + 1},
		repo.MessageInput{Role: "assistant", Content: sp("# Heading\n\n" + jsLink + " and [ok](https://example.com/a?b=1) " + jsImage +
			"\n\n" + svgScript + "\n\n" + jsLinkHTML + "\n\n<iframe src=\"https://evil.example/\"></iframe>\n\n```js\nalert('" + scriptTag + "')\n```\n\n" + bidiText),
			Reasoning: sp("thinking " + scriptTag), ToolCalls: calls, Timestamp: base + 2},
		repo.MessageInput{Role: "tool", ToolCallID: "call_x", ToolName: "<b>tool</b>", Content: sp("</pre>" + scriptTag + imgOnerror), Timestamp: base + 3},
		repo.MessageInput{Role: "assistant", Content: sp(hugeLine), Timestamp: base + 4},
		repo.MessageInput{Role: "assistant", Content: sp(tooBig), Timestamp: base + 5},
	)
	h.toolRes = ids[2]
	require.NoError(t, st.Sessions().UpdateTokenCounts(ctx, s1.ID, repo.TokenUpdate{Model: `<svg onload=alert(1)>`, InputTokens: 100, OutputTokens: 20, EstimatedCostUSD: ptrF(0.01)}))

	src := `x"><img src=x onerror="window.` + Marker + `=1">`
	s2, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "hostile-2", Source: src, StartedAt: base + 10})
	require.NoError(t, err)
	ids = hermesstatetest.AppendAll(t, st, s2.ID,
		repo.MessageInput{Role: "user", Content: sp("needle-kubernetes " + bidiText), Timestamp: base + 11},
		repo.MessageInput{Role: "assistant", Content: sp("**bold** " + imgOnerror), Timestamp: base + 12},
	)
	h.msgID = ids[0]
	h.ids = []string{s1.ID, s2.ID}
	return h
}

func ptrF(f float64) *float64 { return &f }

// readOnly opens path read-only, as serve does.
func readOnly(t testing.TB, path string) *hs.Store {
	t.Helper()
	st, err := hs.Open(context.Background(), hs.Config{Path: path, ReadOnly: true, MustExist: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func newServer(t testing.TB, opt web.Options) *web.Server {
	t.Helper()
	if opt.Location == "" {
		opt.Location = "test store"
	}
	srv, err := web.New(opt)
	require.NoError(t, err)
	return srv
}

// get requests target from srv with the headers a same-origin browser
// sends and returns the response and its body.
func get(t testing.TB, srv http.Handler, target string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "127.0.0.1:8080"
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// post sends a form to srv.
func post(t testing.TB, srv http.Handler, target string, form url.Values, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec.Result()
}

// allowedURL reports whether an address in a page is one the page may
// carry: its own paths, fragments, queries, http(s) and mailto.
func allowedURL(v string) bool {
	v = strings.TrimSpace(v)
	for _, p := range []string{"/", "?", "#", "http://", "https://", "mailto:"} {
		if strings.HasPrefix(v, p) {
			return !strings.HasPrefix(v, "//")
		}
	}
	return false
}

// checkInert fails t when the page could run, load or reorder anything
// stored content put in it: the only script is the page's own file (empty
// element), no element has an event-handler attribute, no element that
// loads or embeds (img, iframe, object, embed, foreignObject, ...), SVG only
// as the server draws it, every address is allowed (allowedURL), and no
// bidi override character is left. It returns the page's text.
func checkInert(t testing.TB, what, page string) string {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	scripts := 0
	var text strings.Builder
	inScript := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.TextToken:
			if inScript {
				require.Failf(t, "inline script", "%s: script element with content %q", what, clipS(tok.Data))
			}
			text.WriteString(tok.Data)
		case html.StartTagToken, html.SelfClosingTagToken:
			name := strings.ToLower(tok.Data)
			switch name {
			case "script":
				scripts++
				inScript = tt == html.StartTagToken
				src := attr(tok, "src")
				require.Equalf(t, "/static/app.js", src, "%s: a script element that is not the page's own", what)
			case "img", "iframe", "object", "embed", "foreignobject", "audio", "video", "source", "frame", "frameset", "base", "meta", "style", "template", "math", "use", "image", "animate", "set", "applet", "portal":
				if name == "meta" && (attr(tok, "charset") != "" || attr(tok, "name") == "viewport" || attr(tok, "name") == "referrer") {
					break
				}
				require.Failf(t, "element that loads or acts", "%s: <%s %v>", what, name, tok.Attr)
			}
			for _, a := range tok.Attr {
				k := strings.ToLower(a.Key)
				require.Falsef(t, strings.HasPrefix(k, "on"), "%s: event handler %s=%q on <%s>", what, k, a.Val, name)
				require.NotEqualf(t, "style", k, "%s: inline style on <%s>", what, name)
				if k == "href" || k == "src" || k == "action" || k == "formaction" || k == "xlink:href" || k == "srcdoc" || k == "data" {
					require.Truef(t, allowedURL(a.Val), "%s: <%s %s=%q>", what, name, k, clipS(a.Val))
				}
			}
		case html.EndTagToken:
			if tok.Data == "script" {
				inScript = false
			}
		}
	}
	require.Equalf(t, 1, scripts, "%s: script elements", what)
	for _, r := range []string{"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"} {
		require.NotContainsf(t, page, r, "%s: bidi control U+%04X left acting", what, []rune(r)[0])
	}
	return text.String()
}

func attr(tok html.Token, key string) string {
	for _, a := range tok.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

func clipS(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
