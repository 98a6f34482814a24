package mcpserver

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/repo"
)

// Bounds of the read tools' arguments (also in their input schemas).
const (
	MaxSearchLimit   = 100
	MaxListLimit     = 200
	MaxQueryLength   = 1000
	MaxFilterItems   = 50
	maxFilterItemLen = 200
)

// SearchInput are the arguments of search_sessions.
type SearchInput struct {
	Query          string   `json:"query" jsonschema:"Words to find in message text. Full-text syntax: several words must all occur; \"quoted phrase\"; prefix*; OR; NOT. CJK text and partial words are found too."`
	Sources        []string `json:"sources,omitempty" jsonschema:"Only sessions of these sources (platforms), e.g. cli, telegram, discord, cron, subagent. Omit for all."`
	ExcludeSources []string `json:"exclude_sources,omitempty" jsonschema:"Leave out sessions of these sources."`
	Roles          []string `json:"roles,omitempty" jsonschema:"Only messages of these roles: user, assistant, tool, system. Omit for all."`
	Limit          int      `json:"limit,omitempty" jsonschema:"Maximum number of hits to return."`
	Offset         int      `json:"offset,omitempty" jsonschema:"Hits to skip (pass next_offset of the previous call to get the next page)."`
	Sort           string   `json:"sort,omitempty" jsonschema:"relevance (best match first), newest or oldest."`
	Since          string   `json:"since,omitempty" jsonschema:"Only messages written at or after this time: RFC 3339 (2026-01-05T09:00:00Z), a date (2026-01-05, UTC) or epoch seconds."`
	Until          string   `json:"until,omitempty" jsonschema:"Only messages written before this time (same forms as since)."`
	IncludeContext bool     `json:"include_context,omitempty" jsonschema:"Also return the messages just before and after each hit."`
}

// SearchHit is one message that matched.
type SearchHit struct {
	SessionID string                `json:"session_id" jsonschema:"Id of the session holding the message."`
	Title     string                `json:"title,omitempty" jsonschema:"Title of that session (absent when untitled)."`
	Source    string                `json:"source,omitempty" jsonschema:"Platform of that session."`
	MessageID int64                 `json:"message_id" jsonschema:"Id of the matching message."`
	Role      string                `json:"role"`
	Snippet   string                `json:"snippet" jsonschema:"Excerpt of the message with the matched terms between >>> and <<<."`
	Timestamp float64               `json:"timestamp" jsonschema:"When the message was written, epoch seconds."`
	Time      string                `json:"time,omitempty" jsonschema:"The same instant in RFC 3339, UTC."`
	ToolName  string                `json:"tool_name,omitempty"`
	Context   []repo.ContextMessage `json:"context,omitempty" jsonschema:"Messages around the hit (with include_context)."`
}

// SearchOutput is the result of search_sessions.
type SearchOutput struct {
	Hits       []SearchHit `json:"hits"`
	NextOffset *int        `json:"next_offset,omitempty" jsonschema:"Offset of the next page; absent when there are no more hits."`
}

// ListInput are the arguments of list_sessions.
type ListInput struct {
	Source          string   `json:"source,omitempty" jsonschema:"Only sessions of this source (platform), e.g. cli or telegram."`
	ExcludeSources  []string `json:"exclude_sources,omitempty" jsonschema:"Leave out sessions of these sources."`
	Limit           int      `json:"limit,omitempty" jsonschema:"Number of sessions to return."`
	Offset          int      `json:"offset,omitempty" jsonschema:"Sessions to skip (pass next_offset of the previous call)."`
	IncludeChildren bool     `json:"include_children,omitempty" jsonschema:"Also list delegate (subagent) runs and compression continuations."`
	IncludeArchived bool     `json:"include_archived,omitempty" jsonschema:"Also list archived sessions."`
	Title           string   `json:"title,omitempty" jsonschema:"Only sessions whose title (or id) contains this text, case-insensitively; punctuation and spaces in titles are also ignored (an94 finds AN-94)."`
	Since           string   `json:"since,omitempty" jsonschema:"Only sessions started at or after this time: RFC 3339, a date (UTC) or epoch seconds."`
	Until           string   `json:"until,omitempty" jsonschema:"Only sessions started before this time (same forms as since)."`
}

// SessionSummary is one row of list_sessions.
type SessionSummary struct {
	ID              string  `json:"id"`
	Title           string  `json:"title,omitempty"`
	Source          string  `json:"source"`
	Preview         string  `json:"preview,omitempty" jsonschema:"Head of the first user message."`
	Model           string  `json:"model,omitempty"`
	MessageCount    int64   `json:"message_count"`
	StartedAt       float64 `json:"started_at" jsonschema:"Epoch seconds."`
	LastActive      float64 `json:"last_active" jsonschema:"Last activity of the conversation, epoch seconds."`
	LastActiveTime  string  `json:"last_active_time,omitempty" jsonschema:"last_active in RFC 3339, UTC."`
	Ended           bool    `json:"ended"`
	EndReason       string  `json:"end_reason,omitempty"`
	ParentSessionID string  `json:"parent_session_id,omitempty"`
	LineageRootID   string  `json:"lineage_root_id,omitempty" jsonschema:"Set when a compressed conversation is shown as its live continuation: the id of its first session."`
}

// ListOutput is the result of list_sessions.
type ListOutput struct {
	Sessions   []SessionSummary `json:"sessions"`
	NextOffset *int             `json:"next_offset,omitempty" jsonschema:"Offset of the next page; absent when this page was the last."`
}

func (s *server) addReadTools(srv *mcp.Server) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	addTool(srv, &mcp.Tool{
		Name:  ToolSearchSessions,
		Title: "Search past sessions",
		Description: "Full-text search over the messages of every past session (Hermes' session search). " +
			"Returns matching messages with their session id and title, a snippet and a timestamp. " +
			"Read a whole session with get_conversation.",
		Annotations: ro,
	}, map[string]prop{
		"query":           str(1, MaxQueryLength),
		"sources":         strList(MaxFilterItems, maxFilterItemLen),
		"exclude_sources": strList(MaxFilterItems, maxFilterItemLen),
		"roles":           strList(4, 20),
		"limit":           intRange(1, MaxSearchLimit, 10),
		"offset":          intRange(0, 100000, 0),
		"sort":            {enum: []any{"relevance", "newest", "oldest"}, def: "relevance"},
		"since":           str(0, 64),
		"until":           str(0, 64),
	}, s.search)

	addTool(srv, &mcp.Tool{
		Name:  ToolListSessions,
		Title: "List recent sessions",
		Description: "Sessions ordered by last activity, newest first, with title, source, message count and a preview of the first user message. " +
			"Delegate runs, compression continuations and archived sessions are left out unless asked for.",
		Annotations: ro,
	}, map[string]prop{
		"source":          str(0, maxFilterItemLen),
		"exclude_sources": strList(MaxFilterItems, maxFilterItemLen),
		"limit":           intRange(1, MaxListLimit, 20),
		"offset":          intRange(0, 1000000, 0),
		"title":           str(0, maxFilterItemLen),
		"since":           str(0, 64),
		"until":           str(0, 64),
	}, s.list)

	addTool(srv, &mcp.Tool{
		Name:  ToolGetConversation,
		Title: "Read a session's conversation",
		Description: "The messages of one session in order, in the OpenAI-style format Hermes replays (role, content, tool_calls, tool_call_id, tool_name, timestamp, ...), " +
			"one page at a time: at most limit messages and about max_bytes of JSON. " +
			"Call again with offset = next_offset until next_offset is absent. A single message larger than max_bytes comes cut, with truncated = true.",
		Annotations: ro,
	}, map[string]prop{
		"session_id": str(1, 256),
		"offset":     intRange(0, 100000000, 0),
		"limit":      intRange(1, MaxConversationLimit, DefaultConversationLimit),
		"max_bytes":  intRange(MinConversationBytes, MaxConversationBytes, DefaultConversationBytes),
		"around":     intBounds(1, 1<<53), // no default: absent means no anchor

		"window":            intRange(0, MaxAroundWindow, DefaultAroundWindow),
		"tool_output_chars": intRange(0, MaxConversationBytes, DefaultToolOutputChars),
	}, s.conversation)

	addTool(srv, &mcp.Tool{
		Name:  ToolGetMessage,
		Title: "Read a long message",
		Description: "The text of one message of a session, from a byte offset: for a message get_conversation returned cut (truncated = true), " +
			"call with its index and offset = its content_next_offset, then follow next_offset. The text is the message's content with its tool calls and reasoning folded in, as the cut message showed it.",
		Annotations: ro,
	}, map[string]prop{
		"session_id": str(1, 256),
		"index":      intBounds(0, 100000000), // required: no default
		"offset":     intRange(0, math.MaxInt32, 0),
		"max_bytes":  intRange(MinConversationBytes, MaxConversationBytes, DefaultConversationBytes),
	}, s.message)

	addTool(srv, &mcp.Tool{
		Name:        ToolUsageStats,
		Title:       "Usage statistics",
		Description: "Usage of the store as `hermes-state stats` prints it: sessions, messages, tokens and estimated cost by source, by model, and the sessions that used the most tokens.",
		Annotations: ro,
	}, map[string]prop{
		"sources": strList(MaxFilterItems, maxFilterItemLen),
		"since":   str(0, 64),
		"top":     intRange(1, 100, 10),
	}, s.usageStats)

	addTool(srv, &mcp.Tool{
		Name:  ToolGetSession,
		Title: "Session details",
		Description: "Metadata of one session (source, title, model, start/end, counts, working directory), its lineage " +
			"(parent chain, children, compression chain and live tip) and its token usage and cost, in total and per model.",
		Annotations: ro,
	}, map[string]prop{
		"session_id": str(1, 256),
	}, s.session)
}

// cleanList trims the items of a filter list and drops empty ones; nil when
// nothing is left (no filter).
func cleanList(in []string) []string {
	var out []string
	for _, v := range in {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (s *server) search(ctx context.Context, in SearchInput) (SearchOutput, error) {
	q := strings.TrimSpace(in.Query)
	switch {
	case q == "":
		return SearchOutput{}, invalid("query is empty")
	case len([]rune(q)) > MaxQueryLength:
		return SearchOutput{}, invalid("query is longer than %d characters", MaxQueryLength)
	case in.Limit < 0 || in.Limit > MaxSearchLimit:
		return SearchOutput{}, invalid("limit must be between 1 and %d", MaxSearchLimit)
	case in.Offset < 0:
		return SearchOutput{}, invalid("offset must not be negative")
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	opt := repo.SearchOptions{Sources: cleanList(in.Sources), ExcludeSources: cleanList(in.ExcludeSources),
		Roles: cleanList(in.Roles), Limit: in.Limit, Offset: in.Offset}
	var err error
	if opt.Since, opt.Until, err = timeWindow(in.Since, in.Until); err != nil {
		return SearchOutput{}, err
	}
	switch in.Sort {
	case "", "relevance":
	case "newest", "oldest":
		opt.Sort = in.Sort
	default:
		return SearchOutput{}, invalid("sort must be relevance, newest or oldest, not %q", in.Sort)
	}
	for _, r := range opt.Roles {
		switch r {
		case "user", "assistant", "tool", "system":
		default:
			return SearchOutput{}, invalid("unknown role %q (user, assistant, tool or system)", r)
		}
	}
	res, err := s.st.Search().Run(ctx, q, opt)
	if err != nil {
		return SearchOutput{}, err
	}
	titles := map[string]string{}
	out := SearchOutput{Hits: make([]SearchHit, 0, len(res.Hits))}
	for _, h := range res.Hits {
		title, ok := titles[h.SessionID]
		if !ok {
			if title, err = s.st.Titles().Get(ctx, h.SessionID); err != nil {
				return SearchOutput{}, err
			}
			titles[h.SessionID] = title
		}
		hit := SearchHit{SessionID: h.SessionID, Title: title, MessageID: h.ID, Role: h.Role,
			Timestamp: h.Timestamp, Time: isoTime(h.Timestamp)}
		if h.Source != nil {
			hit.Source = *h.Source
		}
		if h.Snippet != nil {
			hit.Snippet = *h.Snippet
		}
		if h.ToolName != nil {
			hit.ToolName = *h.ToolName
		}
		if in.IncludeContext {
			hit.Context = h.Context
		}
		out.Hits = append(out.Hits, hit)
	}
	if len(res.Hits) == in.Limit {
		next := in.Offset + in.Limit
		out.NextOffset = &next
	}
	return out, nil
}

func (s *server) list(ctx context.Context, in ListInput) (ListOutput, error) {
	switch {
	case in.Limit < 0 || in.Limit > MaxListLimit:
		return ListOutput{}, invalid("limit must be between 1 and %d", MaxListLimit)
	case in.Offset < 0:
		return ListOutput{}, invalid("offset must not be negative")
	}
	if in.Limit == 0 {
		in.Limit = 20
	}
	since, until, err := timeWindow(in.Since, in.Until)
	if err != nil {
		return ListOutput{}, err
	}
	rows, err := s.st.Listing().Rich(ctx, repo.RichOptions{Source: strings.TrimSpace(in.Source), ExcludeSources: cleanList(in.ExcludeSources),
		Limit: in.Limit, Offset: in.Offset, IncludeChildren: in.IncludeChildren, IncludeArchived: in.IncludeArchived,
		OrderByLastActive: true, SearchQuery: strings.TrimSpace(in.Title), StartedSince: since, StartedBefore: until})
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Sessions: make([]SessionSummary, 0, len(rows))}
	for _, r := range rows {
		out.Sessions = append(out.Sessions, SessionSummary{ID: r.ID, Title: ptr.Deref(r.Title), Source: r.Source,
			Preview: r.Preview, Model: ptr.Deref(r.Model), MessageCount: r.MessageCount, StartedAt: float64(r.StartedAt),
			LastActive: r.LastActive, LastActiveTime: isoTime(r.LastActive), Ended: r.EndedAt != nil,
			EndReason: ptr.Deref(r.EndReason), ParentSessionID: ptr.Deref(r.ParentSessionID), LineageRootID: r.LineageRootID})
	}
	if len(rows) >= in.Limit {
		next := in.Offset + in.Limit
		out.NextOffset = &next
	}
	return out, nil
}

// parseWhen reads a time argument: RFC 3339, a date-time without zone or
// a date (both UTC), or epoch seconds. Empty is 0 (no bound).
func parseWhen(name, v string) (float64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 253402300799 {
			return 0, invalid("%s must be a time after 1970 and before year 10000 (got %s)", name, quoteShort(v))
		}
		return f, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			if t.Unix() <= 0 {
				return 0, invalid("%s must be after 1970 (got %s)", name, quoteShort(v))
			}
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, invalid("%s must be RFC 3339 (2026-01-05T09:00:00Z), a date (2026-01-05) or epoch seconds (got %s)", name, quoteShort(v))
}

// timeWindow reads since and until; until must come after since.
func timeWindow(sinceArg, untilArg string) (since, until float64, err error) {
	if since, err = parseWhen("since", sinceArg); err != nil {
		return 0, 0, err
	}
	if until, err = parseWhen("until", untilArg); err != nil {
		return 0, 0, err
	}
	if since > 0 && until > 0 && until <= since {
		return 0, 0, invalid("until must be later than since")
	}
	return since, until, nil
}
