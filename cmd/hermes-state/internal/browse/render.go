package browse

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/hermesstate/hermesstate/internal/termtext"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Styles of the browser. Basic ANSI colours, so they follow the terminal's
// palette (light or dark) and degrade on 16-colour terminals.
var (
	stHeader    = lipgloss.NewStyle().Bold(true)
	stDim       = lipgloss.NewStyle().Faint(true)
	stSelected  = lipgloss.NewStyle().Reverse(true)
	stTab       = lipgloss.NewStyle().Padding(0, 1)
	stTabActive = lipgloss.NewStyle().Padding(0, 1).Reverse(true).Bold(true)
	stMatch     = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("3")).Underline(true)
	stError     = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
	stWarn      = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	stOK        = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	stFold      = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))

	roleStyles = map[string]lipgloss.Style{
		"user":      lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6")),
		"assistant": lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("2")),
		"system":    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("5")),
		"tool":      lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("3")),
	}
)

func roleStyle(role string) lipgloss.Style {
	if s, ok := roleStyles[role]; ok {
		return s
	}
	return lipgloss.NewStyle().Bold(true)
}

// clean makes stored text safe to print: control characters (escape
// sequences a message could carry, NUL) and bidi controls are replaced as
// every terminal surface replaces them (termtext.Neutralised), carriage
// returns dropped, tabs become spaces, invalid UTF-8 is replaced. Newlines
// are kept when keepNewlines, else folded to spaces.
func clean(s string, keepNewlines bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteRune('\uFFFD')
		case r == '\n':
			if keepNewlines {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		case r == '\t':
			b.WriteString("    ")
		case r == '\r':
		case termtext.Neutralised(r):
			b.WriteRune(termtext.Replacement)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine is clean text on one line, spaces collapsed.
func oneLine(s string) string {
	return strings.Join(strings.Fields(clean(s, false)), " ")
}

// fit truncates s (which may hold styles) to width cells with an ellipsis
// and pads it with spaces to exactly width.
func fit(s string, width int) string { return fitPad(s, width, lipgloss.NewStyle()) }

// fitPad is fit with the padding drawn in pad's style.
func fitPad(s string, width int, pad lipgloss.Style) string {
	if width <= 0 {
		return ""
	}
	if lipgloss.Width(s) > width {
		s = ansi.Truncate(s, width, "…")
	}
	if w := lipgloss.Width(s); w < width {
		s += pad.Render(strings.Repeat(" ", width-w))
	}
	return s
}

// when formats an epoch time for a column.
func when(epoch float64, loc *time.Location) string {
	if epoch <= 0 {
		return ""
	}
	sec := int64(epoch)
	t := time.Unix(sec, int64((epoch-float64(sec))*1e9)).In(loc)
	return t.Format("2006-01-02 15:04")
}

// highlight renders a search snippet with its >>>match<<< markers (Hermes'
// snippet() delimiters) as styled text on one line. When the first match
// starts past a third of width, the head is cut so the match shows. Text
// outside matches gets base, matches get match (styles do not nest in a
// terminal: a reset ends both).
func highlight(snippet string, width int, base, match lipgloss.Style) string {
	s := oneLine(snippet)
	if i := strings.Index(s, ">>>"); i > 0 && lipgloss.Width(s[:i]) > width/3 {
		head := []rune(s[:i])
		keep := width / 3
		if keep > len(head) {
			keep = len(head)
		}
		tail := string(head[len(head)-keep:])
		if sp := strings.IndexByte(tail, ' '); sp >= 0 && sp < len(tail)-1 {
			tail = tail[sp+1:] // start at a word
		}
		s = "…" + tail + s[i:]
	}
	var b strings.Builder
	for s != "" {
		i := strings.Index(s, ">>>")
		if i < 0 {
			b.WriteString(base.Render(s))
			break
		}
		if i > 0 {
			b.WriteString(base.Render(s[:i]))
		}
		s = s[i+3:]
		j := strings.Index(s, "<<<")
		if j < 0 {
			b.WriteString(match.Render(s))
			break
		}
		b.WriteString(match.Render(s[:j]))
		s = s[j+3:]
	}
	return b.String()
}

// toolCalls returns the name and arguments of each tool call a message
// holds (the OpenAI list Hermes stores; anything else as raw JSON).
func toolCalls(m *models.Message) (names []string, args []string) {
	if m.ToolCalls.IsNull() {
		return nil, nil
	}
	var list []models.ToolCall
	if err := json.Unmarshal(m.ToolCalls, &list); err != nil {
		return []string{"tool call"}, []string{string(m.ToolCalls)}
	}
	for _, c := range list {
		name := c.Function.Name
		if name == "" {
			name = "tool call"
		}
		names = append(names, name)
		args = append(args, c.Function.Arguments)
	}
	return names, args
}

// maxMessageLines caps how many lines one message renders to (a 1 MB tool
// output is not laid out whole); export shows everything.
const maxMessageLines = 400

// renderMessage lays out message number idx (0-based) for the
// conversation view: a role line, then the text wrapped to width and
// indented. Tool calls, tool results and reasoning are folded to one line
// unless expanded. hit marks the message a search opened.
func renderMessage(m *models.Message, idx int64, width int, expanded, hit bool, loc *time.Location) []string {
	if width < 20 {
		width = 20
	}
	role := clean(m.Role, false)
	head := roleStyle(m.Role).Render(role)
	if m.ToolName != nil && *m.ToolName != "" {
		head += " " + roleStyle(m.Role).Render(clean(*m.ToolName, false))
	}
	if hit {
		head += "  " + stMatch.Render("◀ search hit")
	}
	meta := stDim.Render(fmt.Sprintf("#%d  %s", idx+1, when(float64(m.Timestamp), loc)))
	gap := width - lipgloss.Width(head) - lipgloss.Width(meta)
	if gap < 1 {
		gap = 1
	}
	lines := []string{head + strings.Repeat(" ", gap) + meta}
	body := width - 2
	add := func(text string) {
		for _, l := range strings.Split(wrap(text, body), "\n") {
			lines = append(lines, "  "+l)
		}
	}
	text := m.ContentText()
	if m.Role == "user" || m.Role == "assistant" {
		text = repo.ScrubMemoryContext(text)
	}
	text = strings.TrimRight(clean(text, true), "\n ")
	if m.Role == "tool" && !expanded {
		n := strings.Count(text, "\n") + 1
		if text == "" {
			n = 0
		}
		lines = append(lines, "  "+stFold.Render(fmt.Sprintf("▸ tool result: %s, %s (f unfolds)", plural(n, "line"), plural(utf8.RuneCountInString(text), "character"))))
	} else if text != "" {
		add(text)
	}
	if m.Reasoning != nil && *m.Reasoning != "" {
		r := clean(*m.Reasoning, true)
		if expanded {
			lines = append(lines, "  "+stFold.Render("▾ reasoning"))
			add(stFold.Render(r))
		} else {
			lines = append(lines, "  "+stFold.Render(fmt.Sprintf("▸ reasoning: %s (f unfolds)", plural(utf8.RuneCountInString(r), "character"))))
		}
	}
	if names, args := toolCalls(m); len(names) > 0 {
		if expanded {
			for i, n := range names {
				lines = append(lines, "  "+roleStyle("tool").Render("▾ "+clean(n, false)))
				add(clean(args[i], true))
			}
		} else {
			lines = append(lines, "  "+stFold.Render(fmt.Sprintf("▸ %s: %s (f unfolds)", plural(len(names), "tool call"), clean(strings.Join(names, ", "), false))))
		}
	}
	if len(lines) > maxMessageLines {
		more := len(lines) - maxMessageLines
		lines = append(lines[:maxMessageLines], "  "+stDim.Render(fmt.Sprintf("… %d more lines (export the session to read them)", more)))
	}
	return append(lines, "")
}

// wrap wraps text to width cells, breaking long words.
func wrap(text string, width int) string {
	// Cap the work on huge texts: only the head can be shown anyway.
	if len(text) > 64<<10 {
		text = text[:64<<10]
		for !utf8.ValidString(text) {
			text = text[:len(text)-1]
		}
	}
	return ansi.Wrap(text, width, "")
}
