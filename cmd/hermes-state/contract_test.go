package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// cliCase is one command line and what the CLI must answer: the exit
// status and what stderr and stdout say (or must not say).
type cliCase struct {
	name    string
	args    []string
	code    int
	stderr  []string // substrings of stderr
	stdout  []string // substrings of stdout
	notOut  []string // substrings stdout must not hold
	notErr  []string // substrings stderr must not hold
	oneLine bool     // stderr is a single line
}

// opName matches the library's "op: kind" prefix ("lineage.resolve_id: not
// found"), which the CLI never prints.
var opName = regexp.MustCompile(`(^|\s)[a-z_]+\.[a-z_]+: (not found|conflict|invalid input|database busy|store closed|database corrupt|storage error|unsupported)`)

// TestCLIContract is the CLI's contract as a table (issue 12): every exit
// status (0 success, 1 other failure, 2 usage or invalid input, 3 not
// found, 4 conflict, 6 corrupt; 5 busy in TestCLIExitCodes), messages in
// the user's terms (no operation names, no flag the user did not give, the
// path and the cause), cobra's "Did you mean" kept, search output (route
// line only with -v, a header, readable tool-call excerpts, empty and
// operator-only queries explained), --source repeatable, an idempotent
// demo, empty results said, blank fields left out.
func TestCLIContract(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	_, _, code := runCLI(t, "--db", db, "demo")
	require.Zero(t, code)
	_, _, code = runCLI(t, "--db", db, "sessions", "title", "demo-telegram-guilin", "Guilin weather")
	require.Zero(t, code)
	// The demo ran 100 days ago (for prune).
	fixturetest.Exec(t, db, "UPDATE sessions SET started_at = started_at - 8640000, ended_at = ended_at - 8640000",
		"UPDATE messages SET timestamp = timestamp - 8640000")
	existing := filepath.Join(dir, "existing.jsonl")
	require.NoError(t, os.WriteFile(existing, []byte("keep me\n"), 0o600))
	garbage := filepath.Join(dir, "garbage.db")
	require.NoError(t, os.WriteFile(garbage, []byte(strings.Repeat("not a database at all; ", 400)), 0o600))
	newer := fixturetest.Copy(t, "hermes-v30.db")
	fixturetest.MakeNewer(t, newer, 31)
	missing := filepath.Join(dir, "nope", "state.db")
	d := []string{"--db", db}
	with := func(args ...string) []string { return append(append([]string{}, d...), args...) }

	cases := []cliCase{
		// 2: the command line itself is wrong.
		{name: "unknown flag", args: with("sessions", "list", "--bogus"), code: 2,
			stderr: []string{"unknown flag: --bogus", "See 'hermes-state sessions list --help'."}},
		{name: "missing argument", args: with("sessions", "show"), code: 2,
			stderr: []string{"accepts 1 arg(s), received 0", "Usage: hermes-state sessions show ID"}},
		{name: "unknown subcommand", args: with("sessions", "lst"), code: 2,
			stderr: []string{`unknown command "lst" for "hermes-state sessions"`, "Did you mean this?\n\tlist"}},
		{name: "unknown command", args: with("mirgate"), code: 2,
			stderr: []string{`unknown command "mirgate"`, "Did you mean this?\n\tmigrate"}},
		{name: "export format", args: with("export", "--format", "csv"), code: 2,
			stderr: []string{`--format must be jsonl, json, md or markdown, not "csv"`}},
		{name: "negative days", args: with("prune", "--older-than-days", "-1"), code: 2,
			stderr: []string{"--older-than-days must be more than 0"}},
		{name: "days out of range", args: with("prune", "--older-than-days", "99999999999"), code: 2,
			stderr: []string{"--older-than-days must be more than 0 and at most 100000 (got 99999999999)"}},
		{name: "zero days", args: with("prune", "--older-than-days", "0"), code: 2,
			stderr: []string{"--older-than-days must be more than 0"}},
		{name: "negative limit", args: with("sessions", "list", "--limit", "-1"), code: 2,
			stderr: []string{"--limit must be 1 or more (got -1)"}, notErr: []string{"min_message_count", "offset"}},
		{name: "search limit 0", args: with("search", "kubernetes", "--limit", "0"), code: 2,
			stderr: []string{"--limit must be 1 or more"}},
		{name: "search sort", args: with("search", "kubernetes", "--sort", "sideways"), code: 2,
			stderr: []string{`--sort must be relevance, newest or oldest, not "sideways"`}},
		{name: "search role", args: with("search", "kubernetes", "--role", "robot"), code: 2,
			stderr: []string{`--role must be user, assistant, tool or system, not "robot"`}},
		{name: "empty query", args: with("search", "  "), code: 2,
			stderr: []string{"the query is empty"}},
		{name: "operator-only query", args: with("search", "AND"), code: 2, oneLine: true,
			stderr: []string{`the query "AND" cannot be searched: it holds only search operators`}},
		{name: "journal mode", args: with("--journal-mode", "fast", "sessions", "list"), code: 2, oneLine: true,
			stderr: []string{`--journal-mode must be wal or delete, not "fast"`}, notErr: []string{"(invalid input)"}},
		{name: "schema without postgres", args: with("--schema", "x", "sessions", "list"), code: 2, oneLine: true,
			stderr: []string{"--schema applies to a PostgreSQL store"}},
		{name: "archive without ID", args: with("sessions", "archive"), code: 2,
			stderr: []string{"give a session ID, or --older-than DURATION"}},
		{name: "rewind without target", args: with("sessions", "rewind", "demo-cli"), code: 2,
			stderr: []string{"give exactly one of --to MESSAGE and --turn N"}},
		{name: "recover without files", args: []string{"recover"}, code: 2,
			stderr: []string{"recover needs --from BROKEN and --to NEW"}},
		{name: "copy without target", args: []string{"copy", "--from", db}, code: 2,
			stderr: []string{"copy needs --from PATH_OR_DSN and --to DSN"}},
		{name: "stats top", args: with("stats", "--top", "0"), code: 2, stderr: []string{"--top must be 1 or more"}},

		// 3: what was named does not exist.
		{name: "no such session", args: with("sessions", "show", "nope"), code: 3, oneLine: true,
			stderr: []string{`hermes-state: no session id starts with "nope"`}}, // show takes a prefix too
		{name: "no such prefix", args: with("sessions", "title", "nope"), code: 3, oneLine: true,
			stderr: []string{`hermes-state: no session id starts with "nope"`}, notErr: []string{"lineage.resolve_id"}},
		{name: "no store", args: []string{"--db", missing, "sessions", "list"}, code: 3, oneLine: true,
			stderr: []string{"no store at " + missing}},
		{name: "no import file", args: with("import", filepath.Join(dir, "none.jsonl")), code: 3, oneLine: true,
			stderr: []string{"cannot read " + filepath.Join(dir, "none.jsonl") + ": no such file or directory"}},

		// 4: it collides with what exists; backup and export say it alike.
		{name: "backup over a file", args: with("backup", existing), code: 4, oneLine: true,
			stderr: []string{"hermes-state: " + existing + " already exists; choose a new file\n"}},
		{name: "export over a file", args: with("export", "-o", existing), code: 4, oneLine: true,
			stderr: []string{"hermes-state: " + existing + " already exists; choose a new file\n"}},
		{name: "title taken", args: with("sessions", "title", "demo-cli", "Guilin weather"), code: 4, oneLine: true,
			stderr: []string{"Guilin weather"}},
		{name: "ambiguous prefix", args: with("messages", "demo-"), code: 4, oneLine: true,
			stderr: []string{`"demo-" matches several sessions`}},

		// 6: the file is damaged (or not a database); 1: anything else.
		{name: "not a database", args: []string{"--db", garbage, "sessions", "list"}, code: 6, oneLine: true,
			stderr: []string{garbage + " is not a SQLite database or is damaged"}},
		{name: "newer schema", args: []string{"--db", newer, "migrate"}, code: 1,
			stderr: []string{"newer than 30", "nothing was changed"}},

		// 0: output.
		{name: "search quiet", args: with("search", "kubectl"), code: 0,
			stdout: []string{"SESSION", "SNIPPET", `-> terminal {"command": ">>>kubectl<<< get pods"}`}, notErr: []string{"route"},
			notOut: []string{`\"`, `"function"`}},
		{name: "search verbose", args: with("-v", "search", "kubectl"), code: 0,
			stderr: []string{"route fts5: 2 hits"}},
		{name: "search explain", args: with("search", "kubectl", "--explain"), code: 0, stderr: []string{"route", "plan:"}},
		{name: "search nothing", args: with("search", "zebra"), code: 0, stdout: []string{`no messages match "zebra"`}},
		{name: "list nothing", args: with("sessions", "list", "--source", "discord"), code: 0, stdout: []string{"no sessions match"}},
		{name: "stats nothing", args: with("stats", "--source", "discord"), code: 0, stdout: []string{"no sessions match"}},
		{name: "list sources", args: with("sessions", "list", "--source", "cli", "--source", "cron"), code: 0,
			stdout: []string{"demo-cli-kubernetes", "demo-cron-report"}, notOut: []string{"telegram"}},
		{name: "stats sources", args: with("stats", "--source", "cli,telegram"), code: 0,
			stdout: []string{"cli ", "telegram "}, notOut: []string{"cron "}},
		{name: "search sources", args: with("search", "kubectl", "--source", "cron", "--source", "telegram"), code: 0,
			stdout: []string{"no messages match"}},
		{name: "export sources", args: with("export", "--source", "cron", "--source", "telegram"), code: 0,
			stdout: []string{"demo-cron-report", "demo-telegram-guilin"}, notOut: []string{"demo-cli-kubernetes"}},
		{name: "prune sources", args: with("prune", "--dry-run", "--source", "cli", "--source", "cron"), code: 0,
			stdout: []string{"would delete 2 sessions", "demo-cli-kubernetes", "demo-cron-report"}},
		{name: "demo again", args: with("demo"), code: 0, stdout: []string{"nothing added", "1 message ", "1 tool call\n"}},
		{name: "show leaves blanks out", args: with("sessions", "show", "demo-cron-report"), code: 0,
			stdout: []string{"source:", "model:"}, notOut: []string{"title:", "parent:"}},
		{name: "conversation tool calls", args: with("sessions", "show", "demo-cli-kubernetes", "--conversation"), code: 0,
			stdout: []string{`[assistant] -> terminal {"command": "kubectl get pods"}`, "[tool] (terminal) api-"}},
		{name: "lineage blanks", args: with("sessions", "lineage", "demo-cli"), code: 0,
			stdout: []string{"session:", "live tip:"}, notOut: []string{"ancestors:", "descendants:"}},
		{name: "no title", args: with("sessions", "title", "demo-cli"), code: 0, stderr: []string{"has no title"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, c.args...)
			require.Equal(t, c.code, code, "exit status of %v\nstderr: %s", c.args, stderr)
			for _, s := range c.stderr {
				require.Contains(t, stderr, s)
			}
			for _, s := range c.stdout {
				require.Contains(t, stdout, s)
			}
			for _, s := range c.notOut {
				require.NotContains(t, stdout, s)
			}
			for _, s := range c.notErr {
				require.NotContains(t, stderr, s)
			}
			require.NotRegexp(t, opName, stderr, "no operation names")
			require.NotContains(t, stderr, "(invalid input)")
			if code != 0 {
				require.True(t, strings.HasPrefix(stderr, "hermes-state: "), stderr)
			}
			if c.oneLine {
				require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			}
		})
	}
	// The demo run twice holds three sessions, not six.
	out, _, _ := runCLI(t, "--db", db, "--json", "sessions", "list")
	require.Equal(t, 3, strings.Count(out, `"source":`))
}

// TestCLIExitCodes maps every error kind to its exit status, busy (5)
// included, which the table above cannot provoke quickly (a writer waits
// out a 20 s budget before ErrBusy).
func TestCLIExitCodes(t *testing.T) {
	for kind, want := range map[error]int{
		nil: 0, hs.ErrInvalid: 2, hs.ErrNotFound: 3, hs.ErrConflict: 4, hs.ErrBusy: 5, hs.ErrCorrupt: 6,
		hs.ErrStorage: 1, hs.ErrUnsupported: 1, hs.ErrClosed: 1,
	} {
		var err error
		if kind != nil {
			err = &hs.Error{Kind: kind, Op: "x.y", Msg: "m"}
		}
		require.Equal(t, want, exitCode(err), "%v", kind)
	}
	busy := &hs.Error{Kind: hs.ErrBusy, Op: "sessions.create", Msg: "another process held the write lock for 20s (40 attempts)"}
	a := &app{dbPath: "/srv/x/state.db"}
	require.Equal(t, "/srv/x/state.db: another process held the write lock for 20s (40 attempts)", a.errorText(busy),
		"a failure of the store names it, without the operation")
}
