package ftsql

import (
	"encoding/json"
	"strings"

	"github.com/hermesstate/hermesstate/internal/querytext"
)

// multimodalPrefix marks content stored as a JSON list of parts.
const multimodalPrefix = "\x00json:"

// ContextChars is how many characters of each context message a hit shows.
const ContextChars = 200

// ContextText returns the text a search hit shows for a neighbouring
// message: NULL → "", multimodal parts → their non-empty "text" parts joined
// by spaces (or "[multimodal content]"), cut to ContextChars code points.
func ContextText(content *string) string {
	return cutRunes(flatten(content), ContextChars)
}

func flatten(content *string) string {
	if content == nil {
		return ""
	}
	s := *content
	if !strings.HasPrefix(s, multimodalPrefix) {
		return s
	}
	var decoded any
	if err := json.Unmarshal([]byte(s[len(multimodalPrefix):]), &decoded); err != nil {
		return s
	}
	switch v := decoded.(type) {
	case []any:
		var texts []string
		for _, p := range v {
			m, ok := p.(map[string]any)
			if !ok || m["type"] != "text" {
				continue
			}
			if t, ok := m["text"].(string); ok && t != "" {
				texts = append(texts, t)
			}
		}
		if out := querytext.Strip(strings.Join(texts, " ")); out != "" {
			return out
		}
		return "[multimodal content]"
	case string:
		return v
	}
	return ""
}

func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
