package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/hermesstate/hermesstate/models"
)

// Text output helpers shared by the commands.

// table is the tab-aligned table every listing prints.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 2, 2, ' ', 0) }

// field is one "name: value" line of a record.
type field struct{ name, value string }

// printFields writes the fields that have a value, aligned; blank ones are
// left out.
func printFields(w io.Writer, fields []field) error {
	tw := table(w)
	for _, f := range fields {
		if strings.TrimSpace(f.value) != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", f.name, f.value)
		}
	}
	return tw.Flush()
}

// plural is "1 session" or "2 sessions" (n and the word; pl is the plural
// form, "" adds an s).
func plural(n int64, word, pl string) string {
	if n == 1 {
		return "1 " + word
	}
	if pl == "" {
		pl = word + "s"
	}
	return fmt.Sprintf("%d %s", n, pl)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// localTime is an epoch in local time, to the second.
func localTime(e models.Epoch) string {
	return e.Time().Local().Format(time.DateTime)
}

// humanBytes is a byte count for people ("1.5 MiB").
func humanBytes(n int64) string {
	if n < 0 {
		n = 0
	}
	return humanize.IBytes(uint64(n))
}

// contentLine is message content on one line, cut at 120 characters.
func contentLine(v any) string {
	switch c := v.(type) {
	case nil:
		return ""
	case string:
		return cut(strings.Join(strings.Fields(c), " "), 120)
	default:
		return "[multimodal content]"
	}
}

// cut shortens s to n characters with "...".
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// toolCallsLine says the tool calls of an assistant message:
// `terminal {"command": "kubectl get pods"}`, several separated by "; ".
func toolCallsLine(j models.JSON) string {
	if j.IsNull() {
		return ""
	}
	var calls []models.ToolCall
	if err := json.Unmarshal(j, &calls); err != nil {
		return fmt.Sprintf("[%s]", plural(models.ToolCallCount(j), "tool call", ""))
	}
	parts := make([]string, 0, len(calls))
	for _, c := range calls {
		parts = append(parts, strings.TrimSpace(c.Function.Name+" "+cut(strings.Join(strings.Fields(c.Function.Arguments), " "), 100)))
	}
	return strings.Join(parts, "; ")
}

// messageLine is one message for people: the text, the tool calls it makes
// ("-> terminal {...}") and, for a tool result, the tool's name.
func messageLine(content any, toolCalls models.JSON, toolName string) string {
	line := contentLine(content)
	if calls := toolCallsLine(toolCalls); calls != "" {
		line = strings.TrimSpace(line + " -> " + calls)
	}
	if toolName != "" {
		line = "(" + toolName + ") " + line
	}
	if line == "" {
		line = "(no content)"
	}
	return line
}

var (
	// toolCallHead is the JSON around a tool call's name in a snippet of
	// the tool_calls column.
	toolCallHead = regexp.MustCompile(`\[?\{"id": "[^"]*", "type": "function", "function": \{"name": "([^"]*)"(, "arguments": ")?`)
	toolCallTail = regexp.MustCompile(`"\}\}(, |\])?`)
)

// readableSnippet is a search snippet on one line; a snippet of the
// tool_calls JSON becomes `-> name {"arg": "value"}` instead of escaped
// JSON (the >>> <<< marks stay).
func readableSnippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var calls []models.ToolCall
	if strings.HasPrefix(s, `[{"id": "`) && json.Unmarshal([]byte(s), &calls) == nil && len(calls) > 0 {
		return "-> " + toolCallsLine(models.JSON(s))
	}
	if !strings.Contains(s, `"function": {"name": "`) {
		return s
	}
	// A fragment (FTS5 cut it): drop the JSON frame, unescape the arguments.
	s = toolCallHead.ReplaceAllString(s, "-> $1 ")
	s = toolCallTail.ReplaceAllString(s, " ")
	s = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// sourceFlags declares --source and --exclude-source, repeatable or
// comma-separated, the same on every command.
func sourceFlags(c *cobra.Command, sources, exclude *[]string) {
	c.Flags().StringSliceVar(sources, "source", nil, "only sessions of this source (cli, telegram, cron, ...; repeat or comma-separate)")
	if exclude != nil {
		c.Flags().StringSliceVar(exclude, "exclude-source", nil, "leave out sessions of this source (repeat or comma-separate)")
	}
}

// splitList trims the items of a list flag and drops empty ones.
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// atLeast refuses an integer flag below min, naming the flag as the user
// typed it.
func atLeast(cmd *cobra.Command, name string, v, min int) error {
	if v < min {
		if min == 0 {
			return usagef(cmd, "--%s must not be negative (got %d)", name, v)
		}
		return usagef(cmd, "--%s must be %d or more (got %d)", name, min, v)
	}
	return nil
}

// oneOf refuses a flag value outside the allowed ones.
func oneOf(cmd *cobra.Command, name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return usagef(cmd, "--%s must be %s, not %q", name, orList(allowed), v)
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
