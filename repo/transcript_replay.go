package repo

import (
	"regexp"
	"strings"

	"github.com/hermesstate/hermesstate/internal/querytext"
)

// Replay clean-up Hermes applies to every conversation it loads
// (hermes_state._strip_background_review_harness and
// _strip_stale_tool_call_markers): older builds persisted the forked
// background-review curator's turns into real sessions, and an older
// conversation loop stored a bare tool marker ("[memory]") as the final
// answer of a tool-call turn. Replaying either derails the model.

// reviewHarnessPrefixes open the background-review harness prompts.
var reviewHarnessPrefixes = []string{
	"Review the conversation above and update the skill library",
	"Review the conversation above and consider saving to memory",
}

// staleMarkerRE is a bare protocol/tool-name marker such as "[memory]".
var staleMarkerRE = regexp.MustCompile(`^\[[A-Za-z_][A-Za-z0-9_.-]*\]$`)

func nonEmpty(p *string) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

func isReviewHarness(it *ConversationItem) bool {
	if it.Role != "user" && it.Role != "system" {
		return false
	}
	s, ok := it.Content.(string)
	if !ok {
		return false
	}
	s = strings.TrimLeftFunc(s, querytext.IsSpace)
	for _, p := range reviewHarnessPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// stripReviewHarness drops harness prompts and the assistant reply right
// after each; a harness prompt that directly follows another does not arm
// a second skip (it takes the first one's reply slot).
func stripReviewHarness(items []ConversationItem) []ConversationItem {
	out := items[:0]
	skipNext, prevHarness := false, false
	for i := range items {
		it := items[i]
		if isReviewHarness(&it) {
			skipNext = !prevHarness
			prevHarness = true
			continue
		}
		if skipNext {
			skipNext = false
			if it.Role == "assistant" {
				prevHarness = false
				continue
			}
		}
		prevHarness = false
		out = append(out, it)
	}
	return out
}

// blankStaleMarkers empties the content of assistant tool-call turns whose
// content is a bare [marker]; tool_call/result pairing is kept.
func blankStaleMarkers(items []ConversationItem) []ConversationItem {
	for i := range items {
		it := &items[i]
		if it.Role != "assistant" || it.ToolCalls == nil {
			continue
		}
		if s, ok := it.Content.(string); ok && staleMarkerRE.MatchString(querytext.Strip(s)) {
			it.Content = ""
		}
	}
	return items
}
