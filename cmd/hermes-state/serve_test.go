package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// served is a `hermes-state serve` running in this process.
type served struct {
	base   string // http://127.0.0.1:PORT
	stderr *syncBuffer
	stop   func() // cancels the command's context and waits for exit 0 (idempotent)
}

// startServe runs `hermes-state serve` with args in this process, waits
// for the URL it prints and returns it. When the test ends the command's
// context is cancelled (as SIGINT does) and it must exit 0.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- execute(ctx, &app{out: &out, errOut: &errOut}, append(args, "serve")) }()
	re := regexp.MustCompile(`^(http://[^\s]+)/\n`)
	deadline := time.Now().Add(30 * time.Second)
	var base string
	for base == "" {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited %d before listening: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve printed no URL; stderr: %s", errOut.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				require.Equal(t, 0, code, "serve's exit status; stderr: %s", errOut.String())
			case <-time.After(30 * time.Second):
				t.Error("serve did not stop within 30 s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return &served{base: base, stderr: &errOut, stop: stop}
}

// fetch GETs path from the server and returns the status and body.
func (s *served) fetch(t *testing.T, path string) (int, string) {
	t.Helper()
	res, err := http.Get(s.base + path)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// mustPage GETs path and requires a 200 page.
func (s *served) mustPage(t *testing.T, path string) string {
	t.Helper()
	code, body := s.fetch(t, path)
	require.Equal(t, http.StatusOK, code, "%s: %s", path, clipBody(body))
	require.Contains(t, body, "</html>", path)
	return body
}

func clipBody(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

var (
	rowRe = regexp.MustCompile(`<tr id="row-([^"]+)"`)
	hitRe = regexp.MustCompile(`href="/s/([^"#]+)#m(\d+)" data-mid`)
	msgRe = regexp.MustCompile(`<section class="msg [^"]*" id="m(\d+)">`)
)

// pageRows are the session ids of a listing page, in order.
func pageRows(body string) []string {
	var out []string
	for _, m := range rowRe.FindAllStringSubmatch(body, -1) {
		out = append(out, htmlUnescape(m[1]))
	}
	return out
}

// pageHits are "SESSION#MESSAGE" of a search page, in order.
func pageHits(body string) []string {
	var out []string
	for _, m := range hitRe.FindAllStringSubmatch(body, -1) {
		id, _ := url.PathUnescape(m[1])
		out = append(out, id+"#"+m[2])
	}
	return out
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&#34;", `"`, "&#39;", "'", "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

// cliJSON runs the CLI with --json and decodes its output.
func cliJSON[T any](t *testing.T, args ...string) T {
	t.Helper()
	out, err := run(t, append([]string{"--json"}, args...)...)
	require.NoError(t, err, "%v", args)
	var v T
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

type idRow struct {
	ID string `json:"id"`
}

type hitJSON struct {
	ID        int64  `json:"id"`
	SessionID string `json:"session_id"`
}

// checkSameAsCLI compares the page with the CLI on the store db (global
// flags): the listing with `sessions list --by-activity`, the search page
// with `search` for each query, every listed conversation's message ids
// with `messages`, and the usage tables with `stats`.
func checkSameAsCLI(t *testing.T, s *served, db []string, queries ...string) {
	t.Helper()
	rows := cliJSON[[]idRow](t, append(db, "sessions", "list", "--by-activity", "--limit", "50")...)
	var want []string
	for _, r := range rows {
		want = append(want, r.ID)
	}
	require.Equal(t, want, pageRows(s.mustPage(t, "/")), "the listing's rows and order are sessions list --by-activity's")

	for _, q := range queries {
		out, err := run(t, append(db, "--json", "search", "--limit", "20", q)...)
		var hits []hitJSON
		if err == nil {
			require.NoError(t, json.Unmarshal([]byte(out), &hits))
		}
		var wantHits []string
		for _, h := range hits {
			wantHits = append(wantHits, h.SessionID+"#"+fmt.Sprint(h.ID))
		}
		body := s.mustPage(t, "/search?q="+url.QueryEscape(q))
		require.Equal(t, wantHits, pageHits(body), "search %q: the CLI's hits in its order", q)
		if err != nil {
			require.Contains(t, body, "Nothing searched", q)
		}
	}

	all := cliJSON[[]idRow](t, append(db, "sessions", "list", "--children", "--archived", "--hidden", "--limit", "1000")...)
	for _, r := range all {
		ms := cliJSON[[]struct {
			ID int64 `json:"id"`
		}](t, append(db, "messages", r.ID)...)
		var wantIDs []string
		for _, m := range ms {
			wantIDs = append(wantIDs, fmt.Sprint(m.ID))
		}
		var got []string
		for _, m := range msgRe.FindAllStringSubmatch(s.mustPage(t, "/s/"+url.PathEscape(r.ID)), -1) {
			got = append(got, m[1])
		}
		require.Equal(t, wantIDs, got, "session %s: the message ids of 'messages'", r.ID)
	}

	type sourceRow struct {
		Source       string  `json:"source"`
		Sessions     int64   `json:"sessions"`
		Messages     int64   `json:"messages"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		Cost         float64 `json:"estimated_cost_usd"`
	}
	type modelRow struct {
		Model        string  `json:"model"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		Cost         float64 `json:"estimated_cost_usd"`
	}
	stats := cliJSON[struct {
		BySource []sourceRow `json:"by_source"`
		ByModel  []modelRow  `json:"by_model"`
	}](t, append(db, "stats")...)
	usage := s.mustPage(t, "/usage")
	for _, x := range stats.BySource {
		row := fmt.Sprintf(`<tr><td>%s</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%.4f</td></tr>`,
			escapeHTML(x.Source), x.Sessions, x.Messages, x.InputTokens, x.OutputTokens, x.Cost)
		require.Contains(t, usage, row, "usage by source = stats")
	}
	for _, x := range stats.ByModel {
		require.Contains(t, usage, fmt.Sprintf(`<td class="n">%d</td><td class="n">%d</td><td class="n">%.4f</td></tr>`, x.InputTokens, x.OutputTokens, x.Cost), "usage by model = stats")
	}
}

func escapeHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestServeMatchesCLI: on the demo store the page shows the CLI's rows,
// hits, message ids and statistics.
func TestServeMatchesCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	s := startServe(t, "--db", db)
	checkSameAsCLI(t, s, []string{"--db", db}, "kubernetes", "桂林", "kubectl", "AND", "nothingmatchesthis")
	require.Contains(t, s.stderr.String(), "read-only")
}

// TestServeFixturesAsTheyAre: `hermes-state serve` on a copy of every
// Hermes fixture, read as it is, serves the listing, the search page, each
// session's conversation (every kind, children included), a message link
// and the usage page as the CLI reads the same file, and the file is the
// same byte for byte afterwards (sha256), in the same journal mode, with
// nothing left beside it.
func TestServeFixturesAsTheyAre(t *testing.T) {
	names, err := filepath.Glob(filepath.Join(fixturetest.Dir(), "hermes-v*.db"))
	require.NoError(t, err)
	require.NotEmpty(t, names, "no fixtures in %s", fixturetest.Dir())
	for _, p := range names {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			path := fixturetest.Copy(t, name)
			dir := filepath.Dir(path)
			hash, journal, listing := fixturetest.SHA256(t, path), journalByte(t, path), fixturetest.Listing(t, dir)
			{
				s := startServe(t, "--db", path)
				db := []string{"--db", path}
				checkSameAsCLI(t, s, db, "桂林", "docker", "deploy*", `"the weather"`, "kubernetes OR weather")
				s.mustPage(t, "/?children=1")
				s.mustPage(t, "/usage")
				s.mustPage(t, "/search?q=the&sort=newest&role=user")
				for _, h := range pageHits(s.mustPage(t, "/search?q=%E6%A1%82%E6%9E%97")) {
					sid, mid, _ := strings.Cut(h, "#")
					res, err := http.Get(s.base + "/s/" + url.PathEscape(sid) + "/m/" + mid)
					require.NoError(t, err)
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					require.Equal(t, http.StatusOK, res.StatusCode)
					require.Contains(t, string(body), `id="m`+mid+`"`, "the message link lands on the message")
				}
				s.stop()
			}
			require.Equal(t, hash, fixturetest.SHA256(t, path), "serving changed the file")
			require.Equal(t, journal, journalByte(t, path), "serving changed the journal mode")
			require.Equal(t, listing, fixturetest.Listing(t, dir), "serving left files beside the file")
		})
	}
}
