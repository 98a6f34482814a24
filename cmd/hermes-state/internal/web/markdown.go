package web

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// Markdown of stored messages is rendered by goldmark (CommonMark + GFM
// tables, strikethrough, task lists and bare-URL links) in its safe mode:
// raw HTML is never passed through. On top of that, safeRenderer below
// writes raw HTML as visible text (so nothing stored is hidden and nothing
// of it is markup), links only to http, https and mailto URLs and to this
// page's own paths (anything else, javascript: included, is shown as the
// text it is), and images as links (the page loads nothing from elsewhere;
// the Content-Security-Policy would refuse it anyway). Attribute syntax
// and heading ids are off, so stored text cannot set attributes.

// maxMarkdown is the largest text rendered as Markdown; longer text (a log,
// a 1 MB line) is shown as preformatted text, which costs nothing to lay
// out and reads better.
const maxMarkdown = 64 << 10

var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithRendererOptions(
		html.WithHardWraps(),
		renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 100)),
	),
)

// markdown renders text as HTML (see above); bidi controls are neutralised
// by the page's final pass (inert).
func markdown(text string) template.HTML {
	var b bytes.Buffer
	if err := md.Convert([]byte(text), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(text) + "</pre>") // #nosec: escaped
	}
	return template.HTML(b.String()) // #nosec: goldmark safe mode + safeRenderer
}

// safeRenderer overrides goldmark's renderers for the nodes that could
// carry markup or addresses out of stored text.
type safeRenderer struct{}

func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindImage, renderImage)
}

func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	_, _ = w.WriteString(`<code class="raw">`)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(source))))
	}
	_, _ = w.WriteString(`</code>`)
	return ast.WalkSkipChildren, nil
}

func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if !entering {
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString(`<pre class="raw">`)
	for i := range n.Lines().Len() {
		line := n.Lines().At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(line.Value(source))))
	}
	if n.HasClosure() {
		_, _ = w.WriteString(template.HTMLEscapeString(string(n.ClosureLine.Value(source))))
	}
	_, _ = w.WriteString("</pre>\n")
	return ast.WalkSkipChildren, nil
}

// safeURL returns the address a link may point to, "" when it may not:
// http, https and mailto URLs, and paths of this site (no scheme, no
// host). Any other scheme (javascript:, data:, file:, vbscript:, ...)
// is refused.
func safeURL(dest string) string {
	u, err := url.Parse(strings.TrimSpace(dest))
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return ""
		}
	case "mailto":
	case "":
		if u.Host != "" || u.Opaque != "" || strings.HasPrefix(strings.TrimSpace(dest), "//") {
			return ""
		}
	default:
		return ""
	}
	return u.String()
}

func writeAnchor(w util.BufWriter, href string) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.WriteString(template.HTMLEscapeString(href))
	_, _ = w.WriteString(`" rel="nofollow noopener noreferrer">`)
}

func renderLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	href := safeURL(string(n.Destination))
	if href == "" {
		// Shown as text: the label, then the refused address in brackets.
		if !entering {
			_, _ = w.WriteString(` <span class="badlink">[` + template.HTMLEscapeString(string(n.Destination)) + `]</span>`)
		}
		return ast.WalkContinue, nil
	}
	if entering {
		writeAnchor(w, href)
	} else {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	label := string(n.Label(source))
	dest := string(n.URL(source))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(dest), "mailto:") {
		dest = "mailto:" + dest
	}
	href := safeURL(dest)
	if href == "" {
		_, _ = w.WriteString(template.HTMLEscapeString(label))
		return ast.WalkContinue, nil
	}
	writeAnchor(w, href)
	_, _ = w.WriteString(template.HTMLEscapeString(label))
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	alt := string(nodeText(n, source))
	href := safeURL(string(n.Destination))
	label := "[image"
	if alt != "" {
		label += ": " + alt
	}
	label += "]"
	if href == "" {
		_, _ = w.WriteString(`<span class="badlink">` + template.HTMLEscapeString(label+" "+string(n.Destination)) + `</span>`)
		return ast.WalkSkipChildren, nil
	}
	writeAnchor(w, href)
	_, _ = w.WriteString(template.HTMLEscapeString(label))
	_, _ = w.WriteString("</a>")
	return ast.WalkSkipChildren, nil
}

// nodeText is the plain text under n.
func nodeText(n ast.Node, source []byte) []byte {
	var b bytes.Buffer
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			b.Write(t.Segment.Value(source))
		} else {
			b.Write(nodeText(c, source))
		}
	}
	return b.Bytes()
}
