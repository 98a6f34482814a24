package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
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
	go func() { done <- execute(ctx, &app{out: &out, errOut: &errOut}, append([]string{"serve"}, args...)) }()
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

// hermesWrite runs Hermes-style statements on path through python3's
// sqlite3 (WAL, as Hermes opens its file), one transaction.
func hermesWrite(t *testing.T, path, sid, text string) {
	t.Helper()
	out, err := exec.Command(python3(t), "-c", `
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("PRAGMA journal_mode=WAL")
c.execute("BEGIN IMMEDIATE")
now = time.time()
c.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'telegram', ?)", (sys.argv[2], now))
c.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)", (sys.argv[2], sys.argv[3], now))
c.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sys.argv[2],))
c.execute("COMMIT")
c.close()
`, path, sid, text).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// TestServeLiveFile: serving a Hermes file while Hermes writes it (Python's
// sqlite3, WAL, as Hermes does): sessions and messages written after the
// server started are listed and found on the next request, and the server
// never writes (its connection is read-only).
func TestServeLiveFile(t *testing.T) {
	path := fixturetest.Copy(t, "hermes-v30.db")
	hermesWrite(t, path, "live-before", "written before serve started")
	s := startServe(t, "--db", path)
	require.Contains(t, pageRows(s.mustPage(t, "/")), "live-before")
	require.Empty(t, pageHits(s.mustPage(t, "/search?q=zebrafinch")))
	for i := range 3 {
		id := fmt.Sprintf("live-%d", i)
		hermesWrite(t, path, id, fmt.Sprintf("zebrafinch sighting number %d", i))
		rows := pageRows(s.mustPage(t, "/"))
		require.Equal(t, id, rows[0], "the newest session Hermes wrote heads the listing")
		require.Len(t, pageHits(s.mustPage(t, "/search?q=zebrafinch")), i+1)
		require.Contains(t, s.mustPage(t, "/s/"+id), fmt.Sprintf("zebrafinch sighting number %d", i))
	}
	checkSameAsCLI(t, s, []string{"--db", path}, "zebrafinch")
}

// TestServePostgres: the page over a PostgreSQL store (--db postgres://
// --schema) shows what the CLI shows on it; with --read-db it reads
// through the replica when one is configured.
func TestServePostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	db := []string{"--db", dsn, "--schema", schema}
	_, err := run(t, append(db, "demo")...)
	require.NoError(t, err)
	s := startServe(t, db...)
	checkSameAsCLI(t, s, db, "kubernetes", "桂林", "AND")
	require.Contains(t, s.mustPage(t, "/usage"), "anthropic/claude-sonnet-4")
	s.stop()

	if os.Getenv(pgtest.EnvReplicaDSN) == "" && os.Getenv("CI") == "" {
		t.Log("no replica configured: --read-db not exercised (" + pgtest.EnvReplicaDSN + ")")
		return
	}
	rdb := append(append([]string{}, db...), "--read-db", pgtest.ReplicaDSN(t))
	r := startServe(t, rdb...)
	waitFor(t, func() bool { return len(pageRows(r.mustPage(t, "/"))) == 3 })
	checkSameAsCLI(t, r, rdb, "kubernetes")
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeListen: loopback by default; --listen with a name, or not
// host:port, is a usage error (exit 2) before anything is opened; a
// non-loopback address is served with a warning on stderr.
func TestServeListen(t *testing.T) {
	for _, c := range []struct {
		in       string
		addr     string
		loopback bool
	}{
		{"", "127.0.0.1:0", true}, {"localhost:8080", "127.0.0.1:8080", true}, {"[::1]:0", "[::1]:0", true},
		{"127.0.0.2:9", "127.0.0.2:9", true}, {"0.0.0.0:8080", "0.0.0.0:8080", false}, {":8080", ":8080", false},
		{"192.168.1.10:80", "192.168.1.10:80", false},
	} {
		addr, lb, err := listenAddr(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.addr, addr, c.in)
		require.Equal(t, c.loopback, lb, c.in)
	}
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	for _, bad := range []string{"example.com:80", "8080", "127.0.0.1"} {
		_, stderr, code := runCLI(t, "--db", db, "serve", "--listen", bad)
		require.Equal(t, 2, code, bad)
		require.Contains(t, stderr, "--listen", bad)
	}
	s := startServe(t, "--db", db, "--listen", "0.0.0.0:0")
	require.Contains(t, s.stderr.String(), "warning: --listen 0.0.0.0:0 is not a loopback address")
	port := s.base[strings.LastIndex(s.base, ":"):]
	res, err := http.Get("http://127.0.0.1" + port + "/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	plain := startServe(t, "--db", db)
	require.NotContains(t, plain.stderr.String(), "warning")
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, plain.base)
}

// TestServeAllowWrite: with --allow-write the page's title form (POST with
// the page's token) sets the title through a writable open; on a Hermes
// file hermes-state has not upgraded, the edit is refused with a message
// naming 'hermes-state migrate' and the file stays byte for byte as it was.
func TestServeAllowWrite(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	s := startServe(t, "--db", db, "--allow-write")
	body := s.mustPage(t, "/s/demo-cli-kubernetes")
	m := regexp.MustCompile(`name="token" value="([0-9a-f]{64})"`).FindStringSubmatch(body)
	require.NotNil(t, m, "the edit form carries the token")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	postTitle := func(s *served, token, title string) *http.Response {
		res, err := noRedirect.PostForm(s.base+"/s/demo-cli-kubernetes/title", url.Values{"token": {token}, "title": {title}})
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	require.Equal(t, http.StatusForbidden, postTitle(s, strings.Repeat("a", 64), "nope").StatusCode)
	res := postTitle(s, m[1], "Kubernetes outage")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	out, err := run(t, "--db", db, "sessions", "title", "demo-cli-kubernetes")
	require.NoError(t, err)
	require.Equal(t, "Kubernetes outage\n", out)
	require.Contains(t, s.mustPage(t, "/"), "Kubernetes outage")

	old := fixturetest.Copy(t, "hermes-v21.db")
	hash := fixturetest.SHA256(t, old)
	o := startServe(t, "--db", old, "--allow-write")
	rows := pageRows(o.mustPage(t, "/"))
	require.NotEmpty(t, rows)
	m = regexp.MustCompile(`name="token" value="([0-9a-f]{64})"`).FindStringSubmatch(o.mustPage(t, "/s/"+url.PathEscape(rows[0])))
	require.NotNil(t, m)
	res, err = noRedirect.PostForm(o.base+"/s/"+url.PathEscape(rows[0])+"/title", url.Values{"token": {m[1]}, "title": {"x"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	loc, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.Contains(t, loc.Query().Get("edit_error"), "hermes-state migrate")
	o.stop()
	require.Equal(t, hash, fixturetest.SHA256(t, old), "a refused edit changed the file")
}
