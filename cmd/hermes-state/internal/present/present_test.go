package present_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/present"
	"github.com/hermesstate/hermesstate/models"
)

func sp(s string) *string { return &s }

func TestPrettyJSONKeepsOrderAndUnescapesText(t *testing.T) {
	got := present.PrettyJSON(`{"z":1,"command":"\u68c0\u67e5 <pods> & \"q\"","a":[true,null,1.50,{}],"e":[]}`)
	require.Equal(t, "{\n  \"z\": 1,\n  \"command\": \"检查 <pods> & \\\"q\\\"\",\n  \"a\": [\n    true,\n    null,\n    1.50,\n    {}\n  ],\n  \"e\": []\n}", got)
	// Not JSON, or two values: returned as stored.
	for _, s := range []string{`{"a":`, `not json`, `{} {}`, ``, `  `} {
		require.Equal(t, s, present.PrettyJSON(s))
	}
	// Control characters stay escaped.
	require.Equal(t, `"a\nb\u0000"`, present.PrettyJSON(`"a\nb\u0000"`))
}

func TestToolCallsShapes(t *testing.T) {
	openai := models.JSON(`[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"\\u68c0 kubectl get pods\"}"}}]`)
	calls := present.ToolCalls(openai)
	require.Len(t, calls, 1)
	require.Equal(t, "call_1", calls[0].ID)
	require.Equal(t, "terminal", calls[0].Name)
	require.Equal(t, "{\n  \"command\": \"检 kubectl get pods\"\n}", calls[0].Arguments)

	flat := present.ToolCalls(models.JSON(`[{"name":"web","arguments":{"q":"x"}}]`))
	require.Equal(t, []present.ToolCall{{Name: "web", Arguments: "{\n  \"q\": \"x\"\n}"}}, flat)

	bad := present.ToolCalls(models.JSON(`{"not":"a list"}`))
	require.Equal(t, "(unreadable tool_calls)", bad[0].Name)
	require.Equal(t, `{"not":"a list"}`, bad[0].Arguments)

	require.Nil(t, present.ToolCalls(nil))
}

func TestConversationPairsResults(t *testing.T) {
	ms := []models.Message{
		{ID: 10, Role: "user", Content: sp("list pods"), Active: 1},
		{ID: 11, Role: "assistant", ToolCalls: models.JSON(`[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{}"}}]`), Active: 1, Reasoning: sp("think")},
		{ID: 12, Role: "tool", ToolCallID: sp("c1"), ToolName: sp("terminal"), Content: sp("pod-a"), Active: 1},
		{ID: 13, Role: "tool", ToolCallID: sp("c-other"), Content: sp("orphan"), Active: 0},
	}
	conv := present.Conversation(ms)
	require.Len(t, conv, 4)
	require.Equal(t, int64(11), conv[1].ID)
	require.Equal(t, "think", conv[1].Reasoning)
	require.NotNil(t, conv[1].ToolCalls[0].Result)
	require.Equal(t, int64(12), conv[1].ToolCalls[0].Result.ID)
	require.True(t, conv[2].Answers)
	require.False(t, conv[3].Answers)
	require.True(t, conv[3].Inactive)
}

func TestMarks(t *testing.T) {
	require.Equal(t, []present.Span{{Text: "a "}, {Text: "kube", Hit: true}, {Text: " b "}, {Text: "x", Hit: true}},
		present.Marks("a >>>kube<<< b >>>x<<<"))
	require.Equal(t, []present.Span{{Text: "tail", Hit: true}}, present.Marks(">>>tail"))
	require.Equal(t, []present.Span{{Text: "a <<< b"}}, present.Marks("a <<< b"))
	require.Nil(t, present.Marks(""))
}

func TestReadableSnippet(t *testing.T) {
	require.Equal(t, `-> terminal {"command":">>>kubectl<<< get"}`,
		present.ReadableSnippet(`[{"id": "c", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \">>>kubectl<<< get\"}"}}]`))
	require.Equal(t, `…-> terminal {"command": ">>>kubectl<<< get pods`,
		present.ReadableSnippet(`…{"id": "c", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \">>>kubectl<<< get pods`))
	require.Equal(t, "plain text >>>hit<<<", present.ReadableSnippet("plain\ntext  >>>hit<<<"))
}

func TestFilters(t *testing.T) {
	require.Equal(t, []string{"cli", "telegram", "cron"}, present.List("cli, telegram", " ", "cron,"))
	require.Nil(t, present.List("", " , "))

	v, err := present.ParseWhen("since", "2026-01-05", time.UTC)
	require.NoError(t, err)
	require.Equal(t, float64(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Unix()), v)
	v, err = present.ParseWhen("since", "1767600000.5", nil)
	require.NoError(t, err)
	require.Equal(t, 1767600000.5, v)
	for _, bad := range []string{"yesterday", "-5", "1e400", "1960-01-01"} {
		_, err := present.ParseWhen("until", bad, nil)
		require.Error(t, err, bad)
		require.True(t, errors.Is(err, hs.ErrInvalid), bad)
		require.Contains(t, err.Error(), "until")
	}

	require.NoError(t, present.Filters{Roles: []string{"user", "tool"}, Sort: "newest"}.Check())
	require.ErrorIs(t, present.Filters{Roles: []string{"robot"}}.Check(), hs.ErrInvalid)
	require.ErrorIs(t, present.Filters{Sort: "random"}.Check(), hs.ErrInvalid)
	require.ErrorIs(t, present.Filters{Since: 10, Until: 5}.Check(), hs.ErrInvalid)

	f := present.Filters{Sources: []string{"cli"}, Roles: []string{"user"}, Since: 1, Until: 2, Sort: "relevance", Title: " t "}
	so := f.Search(20, 40)
	require.Equal(t, "", so.Sort)
	require.Equal(t, []string{"cli"}, so.Sources)
	require.Equal(t, 40, so.Offset)
	lo := f.Listing(50, 0)
	require.True(t, lo.OrderByLastActive)
	require.Equal(t, "t", lo.SearchQuery)
	require.Equal(t, 1.0, lo.StartedSince)
	require.Equal(t, 2.0, lo.StartedBefore)
}
