package mcpserver

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputSchema returns the JSON schema inferred from T (property
// descriptions from the jsonschema struct tags; fields without omitempty
// are required), with the bounds and defaults given per property. It
// panics only when T cannot have a schema, which the package's tests rule
// out for every input type.
func inputSchema[T any](props map[string]prop) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	for name, p := range props {
		ps, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcpserver: schema of %T has no property %q", *new(T), name))
		}
		p.apply(ps)
		if p.def != nil && slices.Contains(s.Required, name) {
			panic(fmt.Sprintf("mcpserver: schema of %T: property %q is required and has a default", *new(T), name))
		}
	}
	return s
}

// prop tunes one property of an input schema.
type prop struct {
	min, max   *float64
	def        any
	enum       []any
	maxLen     *int
	minLen     *int
	maxItems   *int
	itemMaxLen *int
}

func (p prop) apply(s *jsonschema.Schema) {
	s.Minimum, s.Maximum = p.min, p.max
	if p.def != nil {
		b, _ := json.Marshal(p.def)
		s.Default = b
	}
	s.Enum = p.enum
	s.MaxLength, s.MinLength, s.MaxItems = p.maxLen, p.minLen, p.maxItems
	if p.itemMaxLen != nil && s.Items != nil {
		s.Items.MaxLength = p.itemMaxLen
	}
}

// intRange is an integer property between lo and hi with default def:
// the value the tool uses when the argument is absent, which a client
// that fills in defaults sends instead (both must mean the same).
func intRange(lo, hi, def int) prop {
	p := intBounds(lo, hi)
	p.def = def
	return p
}

// intBounds is an integer property between lo and hi without a default:
// a required one, or one whose absence means something no value means
// (get_conversation's around: no anchor).
func intBounds(lo, hi int) prop {
	l, h := float64(lo), float64(hi)
	return prop{min: &l, max: &h}
}

// strList is a list of at most n strings of at most m bytes each.
func strList(n, m int) prop { return prop{maxItems: &n, itemMaxLen: &m} }

// str is a string of minLen..maxLen characters.
func str(minLen, maxLen int) prop { return prop{minLen: &minLen, maxLen: &maxLen} }

// isoTime formats epoch seconds as RFC 3339 in UTC ("" for 0 or a value
// outside the representable range).
func isoTime(sec float64) string {
	if sec <= 0 || math.IsNaN(sec) || math.IsInf(sec, 0) || sec > 1e11 {
		return ""
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9)).UTC().Format(time.RFC3339)
}
