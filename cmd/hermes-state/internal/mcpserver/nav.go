package mcpserver

import (
	"context"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/repo"
)

// What lets an agent find its way without a search: usage statistics,
// recent sessions in resources/list, and completion of the session
// resource's id.

// maxListedResources is how many recent sessions resources/list names.
const maxListedResources = 50

// maxCompletions is how many ids a completion offers (the protocol's cap).
const maxCompletions = 100

// StatsInput are the arguments of get_usage_stats.
type StatsInput struct {
	Sources []string `json:"sources,omitempty" jsonschema:"Only sessions of these sources. Omit for all."`
	Since   string   `json:"since,omitempty" jsonschema:"Only sessions started at or after this time: RFC 3339, a date (UTC) or epoch seconds."`
	Top     int      `json:"top,omitempty" jsonschema:"Number of top sessions by tokens."`
}

// StatsOutput is the result of get_usage_stats, the CLI's stats --json.
type StatsOutput struct {
	BySource    []repo.SourceStats   `json:"by_source"`
	ByModel     []repo.ModelStats    `json:"by_model"`
	TopSessions []repo.SessionTokens `json:"top_sessions"`
}

func (s *server) usageStats(ctx context.Context, in StatsInput) (StatsOutput, error) {
	if in.Top < 0 || in.Top > 100 {
		return StatsOutput{}, invalid("top must be between 1 and 100")
	}
	if in.Top == 0 {
		in.Top = 10
	}
	since, err := parseWhen("since", in.Since)
	if err != nil {
		return StatsOutput{}, err
	}
	f := repo.StatsFilter{Sources: cleanList(in.Sources), Since: since}
	us := s.st.Usage()
	var out StatsOutput
	if out.BySource, err = us.BySource(ctx, f); err != nil {
		return StatsOutput{}, err
	}
	if out.ByModel, err = us.ByModel(ctx, f); err != nil {
		return StatsOutput{}, err
	}
	if out.TopSessions, err = us.TopSessions(ctx, in.Top, f); err != nil {
		return StatsOutput{}, err
	}
	if out.BySource == nil {
		out.BySource = []repo.SourceStats{}
	}
	if out.ByModel == nil {
		out.ByModel = []repo.ModelStats{}
	}
	if out.TopSessions == nil {
		out.TopSessions = []repo.SessionTokens{}
	}
	return out, nil
}

// listResources is the receiving middleware that adds the most recently
// active sessions to resources/list (the SDK lists only static resources).
func (s *server) listResources(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "resources/list" {
			return res, err
		}
		lr, ok := res.(*mcp.ListResourcesResult)
		if !ok {
			return res, nil
		}
		if r, ok := req.(*mcp.ListResourcesRequest); ok && r.Params != nil && r.Params.Cursor != "" {
			return res, nil // the sessions came with the first page
		}
		rows, err := s.st.Listing().Rich(ctx, repo.RichOptions{Limit: maxListedResources, OrderByLastActive: true})
		if err != nil {
			return nil, resourceError(err)
		}
		for _, r := range rows {
			name := ptr.Deref(r.Title)
			if name == "" {
				name = r.ID
			}
			desc := r.Source + ", " + plural(r.MessageCount, "message") + ", last active " + isoTime(r.LastActive)
			if r.Preview != "" {
				desc += ": " + r.Preview
			}
			lr.Resources = append(lr.Resources, &mcp.Resource{URI: SessionURI(r.ID), Name: name, Title: ptr.Deref(r.Title),
				Description: desc, MIMEType: "text/markdown"})
		}
		return lr, nil
	}
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

// complete offers the ids of sessions starting with what the client typed
// for the id of the hermes-session://{id} template, most recently active
// first; any other completion gets no values.
func (s *server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	p := req.Params
	if p == nil || p.Ref == nil || p.Ref.Type != "ref/resource" || p.Ref.URI != URIScheme+"://{id}" || p.Argument.Name != "id" {
		return out, nil
	}
	prefix := strings.TrimSpace(p.Argument.Value)
	opt := repo.RichOptions{Limit: maxCompletions + 1, OrderByLastActive: true, IncludeChildren: true, IDQuery: prefix}
	rows, err := s.st.Listing().Rich(ctx, opt)
	if err != nil {
		return nil, resourceError(err)
	}
	for _, r := range rows {
		if strings.HasPrefix(r.ID, prefix) && len(out.Completion.Values) < maxCompletions {
			out.Completion.Values = append(out.Completion.Values, r.ID)
		}
	}
	out.Completion.Total = len(out.Completion.Values)
	out.Completion.HasMore = len(rows) > maxCompletions
	return out, nil
}
