package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool registers a tool whose arguments decode into In and whose result
// is Out. The input schema (advertised to clients) is inferred from In and
// tuned by props; the arguments are checked against the same rules here,
// so a bad argument gets a one-line message naming it ("limit must be
// between 1 and 100 (got 1000000)") rather than a schema validator's
// report. Every failure, a panic included, is a tool error (IsError), never
// a protocol error: the client sees the message and the server goes on.
func addTool[In, Out any](srv *mcp.Server, t *mcp.Tool, props map[string]prop, f func(context.Context, In) (Out, error)) {
	in := inputSchema[In](props)
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: output schema of %s: %v", t.Name, err))
	}
	t.InputSchema, t.OutputSchema = in, out
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		defer func() {
			if r := recover(); r != nil {
				res = errorResult(fmt.Errorf("internal error in %s: %v", t.Name, r))
			}
		}()
		var raw json.RawMessage
		if req.Params != nil {
			raw = req.Params.Arguments
		}
		args, err := decodeArgs[In](raw, in, props)
		if err != nil {
			return errorResult(err), nil
		}
		v, err := f(ctx, args)
		if err != nil {
			return errorResult(toolError(err)), nil
		}
		b, err := marshal(v)
		if err != nil {
			return errorResult(fmt.Errorf("internal error in %s: %v", t.Name, err)), nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	})
}

// marshal encodes v as JSON without HTML escaping: a model reads the text
// content as it is, and ">>>term<<<" must not arrive as \u003e\u003e\u003e.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func errorResult(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}

// decodeArgs checks raw against the schema's properties, required list and
// props, then decodes it into In.
func decodeArgs[In any](raw json.RawMessage, s *jsonschema.Schema, props map[string]prop) (In, error) {
	var in In
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			return in, invalid("the arguments are not JSON")
		}
	}
	if v == nil {
		v = map[string]any{}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return in, invalid("the arguments must be a JSON object")
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := s.Properties[k]; !ok {
			return in, invalid("unknown argument %s (this tool takes %s)", quoteShort(k), strings.Join(names, ", "))
		}
	}
	for _, r := range s.Required {
		if _, ok := m[r]; !ok {
			return in, invalid("%s is required", r)
		}
	}
	for _, k := range keys {
		if err := checkArg(k, m[k], s.Properties[k], props[k]); err != nil {
			return in, err
		}
	}
	b, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err != nil {
		return in, invalid("the arguments do not fit this tool: %v", err)
	}
	return in, nil
}

// checkArg checks one argument's type against its schema and its value
// against the bounds of p.
func checkArg(name string, v any, s *jsonschema.Schema, p prop) error {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if v == nil {
		if slices.Contains(types, "null") {
			return nil
		}
		return invalid("%s must not be null", name)
	}
	switch {
	case slices.Contains(types, "string"):
		str, ok := v.(string)
		if !ok {
			return invalid("%s must be a string", name)
		}
		n := utf8.RuneCountInString(str)
		if p.minLen != nil && n < *p.minLen {
			return invalid("%s must not be empty", name)
		}
		if p.maxLen != nil && n > *p.maxLen {
			return invalid("%s is %d characters; the limit is %d", name, n, *p.maxLen)
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, any(str)) {
			opts := make([]string, len(p.enum))
			for i, e := range p.enum {
				opts[i] = fmt.Sprint(e)
			}
			return invalid("%s must be one of %s (got %s)", name, strings.Join(opts, ", "), quoteShort(str))
		}
	case slices.Contains(types, "integer"):
		f, ok := v.(float64)
		if !ok || f != math.Trunc(f) || math.IsInf(f, 0) {
			return invalid("%s must be an integer", name)
		}
		if (p.min != nil && f < *p.min) || (p.max != nil && f > *p.max) {
			return invalid("%s must be between %s and %s (got %s)", name, num(*p.min), num(*p.max), num(f))
		}
	case slices.Contains(types, "boolean"):
		if _, ok := v.(bool); !ok {
			return invalid("%s must be true or false", name)
		}
	case slices.Contains(types, "array"):
		l, ok := v.([]any)
		if !ok {
			return invalid("%s must be a list of strings", name)
		}
		if p.maxItems != nil && len(l) > *p.maxItems {
			return invalid("%s has %d items; the limit is %d", name, len(l), *p.maxItems)
		}
		for _, it := range l {
			str, ok := it.(string)
			if !ok {
				return invalid("%s must be a list of strings", name)
			}
			if p.itemMaxLen != nil && utf8.RuneCountInString(str) > *p.itemMaxLen {
				return invalid("an item of %s is longer than %d characters", name, *p.itemMaxLen)
			}
		}
	}
	return nil
}

func num(f float64) string {
	if math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quoteShort quotes s, cut to 40 characters, so a message never echoes a
// huge argument.
func quoteShort(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		r := []rune(s)
		return strconv.Quote(string(r[:40])) + "..."
	}
	return strconv.Quote(s)
}
