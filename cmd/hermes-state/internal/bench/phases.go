package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func openStore(ctx context.Context, db, sync string) (*hs.Store, error) {
	if pgTarget.dsn != "" {
		return openPG(ctx, db)
	}
	return hs.Open(ctx, hs.Config{Path: db, Synchronous: sync, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// rawDB opens the store file with plain database/sql on the same engine
// as the store (HERMES_STATE_ENGINE, which bench --engine sets for its
// phase processes) and the writer's settings.
func rawDB(db, sync string) (*sql.DB, error) {
	if pgTarget.dsn != "" {
		return rawPG(db)
	}
	if sync == "" {
		sync = "NORMAL"
	}
	c := sqlitex.ConnConfig{Path: db, BusyTimeout: 5 * time.Second, Synchronous: sqlitex.Synchronous(sync), ForeignKeys: true, Immediate: true}
	d, err := sqlitex.OpenEnvConfig(c)
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(1)
	return d, nil
}

// engineName is the engine of the phase processes' stores and raw
// baselines ("" when HERMES_STATE_ENGINE names none compiled in).
func engineName() string {
	e, err := sqlitex.Resolve("")
	if err != nil {
		return ""
	}
	return e.Name()
}

func sqliteVersion() string {
	d, err := sqlitex.OpenEnv(":memory:")
	if err != nil {
		return ""
	}
	defer d.Close()
	var v string
	_ = d.QueryRow("SELECT sqlite_version()").Scan(&v)
	return v
}

func syncValue(s string) int {
	if strings.EqualFold(s, "FULL") {
		return 2
	}
	return 1
}

// newMessage is Hermes' append_kwargs: content, tool name, tool calls,
// tool call id, token count, finish reason (and the timestamp for the
// build's batches).
func newMessage(m *CorpusMessage, withTS bool) repo.MessageInput {
	nm := repo.MessageInput{Role: m.Role, Content: m.Content, TokenCount: m.TokenCount, FinishReason: m.FinishReason}
	if m.HasToolCalls() {
		nm.ToolCalls = models.JSON(m.ToolCalls)
	}
	if m.ToolName != nil {
		nm.ToolName = *m.ToolName
	}
	if m.ToolCallID != nil {
		nm.ToolCallID = *m.ToolCallID
	}
	if withTS {
		nm.Timestamp = models.Epoch(m.Timestamp)
	}
	return nm
}

func createSession(ctx context.Context, st *hs.Store, s *CorpusSession) error {
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: s.ID, Source: s.Source, Model: s.Model, SystemPrompt: s.SystemPrompt})
	return err
}

type appendSet struct {
	sessions []*CorpusSession
	order    []*CorpusMessage // round robin over the sessions, as bench_hermes.py
}

func loadAppendSet(corpus string) (*appendSet, error) {
	a := &appendSet{}
	var per [][]CorpusMessage
	err := ReadCorpus(corpus, map[string]bool{"append": true}, func(s *CorpusSession, ms []CorpusMessage) error {
		a.sessions = append(a.sessions, s)
		per = append(per, ms)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(a.sessions) == 0 {
		return nil, errors.New("the corpus has no append set")
	}
	for i := 0; ; i++ {
		more := false
		for k := range per {
			if i < len(per[k]) {
				a.order = append(a.order, &per[k][i])
				more = true
			}
		}
		if !more {
			break
		}
	}
	return a, nil
}

// ── append ──

// AppendResult is the append phase: one Messages().Append per message (one
// transaction each) into the append set's sessions.
type AppendResult struct {
	Messages          int      `json:"messages"`
	Sessions          int      `json:"sessions"`
	Seconds           float64  `json:"seconds"`
	MessagesPerS      float64  `json:"messages_per_s"`
	CPUUSPerMessage   float64  `json:"cpu_us_per_message"`
	Latency           MSStats  `json:"latency"`
	CallsOver20ms     int      `json:"calls_over_20ms"`
	RatePer1000Chunk  []int    `json:"rate_per_1000_chunk"`
	Synchronous       int      `json:"synchronous"`
	SynchronousName   string   `json:"synchronous_name"`
	JournalMode       string   `json:"journal_mode"`
	SchemaVersion     int      `json:"schema_version"`
	AllocsPerMessage  float64  `json:"go_allocs_per_message"`
	BytesPerMessage   float64  `json:"go_bytes_per_message"`
	RawSQL            *RawRate `json:"raw_sql,omitempty"`
	RawSQLDescription string   `json:"raw_sql_description,omitempty"`
	PhaseInfo
}

// RawRate is a raw-SQL write baseline.
type RawRate struct {
	Messages        int     `json:"messages"`
	MessagesPerS    float64 `json:"messages_per_s"`
	USPerMessage    float64 `json:"us_per_message"`
	CPUUSPerMessage float64 `json:"cpu_us_per_message"`
	Latency         MSStats `json:"latency"`
	JournalMode     string  `json:"journal_mode"`
	// RemainingTriggers lists the triggers left on messages (variants
	// without the search-index triggers).
	RemainingTriggers []string `json:"remaining_triggers_on_messages,omitempty"`
}

func phaseAppend(ctx context.Context, p *params) (*AppendResult, error) {
	set, err := loadAppendSet(p.Corpus)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, p.DB, p.Sync)
	if err != nil {
		return nil, err
	}
	for _, s := range set.sessions {
		if err := createSession(ctx, st, s); err != nil {
			st.Close()
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, len(set.order))
	ms := memStats()
	c0 := cpuTime()
	t0 := time.Now()
	msgs := st.Messages()
	for i, m := range set.order {
		t := time.Now()
		if _, err := msgs.Append(ctx, m.SessionID, newMessage(m, false)); err != nil {
			st.Close()
			return nil, fmt.Errorf("append %d: %w", i, err)
		}
		lat = append(lat, time.Since(t))
		if p.report != nil {
			p.report(int64(i+1), int64(len(set.order)))
		}
	}
	total := time.Since(t0)
	cpu := cpuTime() - c0
	allocs, bytes := ms.since()
	n := len(set.order)
	res := &AppendResult{Messages: n, Sessions: len(set.sessions), Seconds: round3(total.Seconds()),
		MessagesPerS: round1(float64(n) / total.Seconds()), CPUUSPerMessage: round1(float64(cpu.Microseconds()) / float64(n)),
		Latency: msStats(lat), Synchronous: syncValue(p.Sync), SynchronousName: strings.ToUpper(p.Sync),
		JournalMode: st.JournalMode(), AllocsPerMessage: round1(float64(allocs) / float64(n)), BytesPerMessage: round1(float64(bytes) / float64(n))}
	for _, d := range lat {
		if d > 20*time.Millisecond {
			res.CallsOver20ms++
		}
	}
	for i := 0; i+1000 <= n; i += 1000 {
		var sum time.Duration
		for _, d := range lat[i : i+1000] {
			sum += d
		}
		res.RatePer1000Chunk = append(res.RatePer1000Chunk, int(1000/sum.Seconds()+0.5))
	}
	if v, err := st.SchemaVersion(ctx); err == nil {
		res.SchemaVersion = v
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	if p.Raw {
		// The same messages into a fresh file made by Open (same schema,
		// indexes and triggers), by hand: the floor of one message per
		// transaction on this engine.
		db := filepath.Join(filepath.Dir(p.DB), "raw", "state.db")
		rr, err := rawAppend(ctx, db, p.Sync, set, set.order, true)
		if err != nil {
			return nil, fmt.Errorf("raw append: %w", err)
		}
		res.RawSQL = rr
		res.RawSQLDescription = "database/sql on the same driver and settings, file made by Open (every trigger): BEGIN IMMEDIATE; INSERT (the columns the message has); UPDATE sessions counters; COMMIT"
	}
	res.PeakRSSMiB = peakRSSMiB()
	return res, nil
}

// rawAppend appends msgs to a fresh store file by hand, one transaction
// each: Hermes-like minimal statements. With triggers false the search
// triggers (FTS word, trigram, CJK queue) are dropped first.
func rawAppend(ctx context.Context, db, sync string, set *appendSet, msgs []*CorpusMessage, triggers bool) (*RawRate, error) {
	st, err := openStore(ctx, db, sync)
	if err != nil {
		return nil, err
	}
	for _, s := range set.sessions {
		if err := createSession(ctx, st, s); err != nil {
			st.Close()
			return nil, err
		}
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	d, err := rawDB(db, sync)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	rr := &RawRate{Messages: len(msgs)}
	if !triggers {
		if rr.RemainingTriggers, err = dropSearchTriggers(ctx, d); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, len(msgs))
	c0 := cpuTime()
	t0 := time.Now()
	for _, m := range msgs {
		t := time.Now()
		if err := rawAppendOne(ctx, d, m); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	total := time.Since(t0)
	cpu := cpuTime() - c0
	rr.MessagesPerS = round1(float64(len(msgs)) / total.Seconds())
	rr.USPerMessage = round1(float64(total.Microseconds()) / float64(len(msgs)))
	rr.CPUUSPerMessage = round1(float64(cpu.Microseconds()) / float64(len(msgs)))
	rr.Latency = msStats(lat)
	_ = d.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&rr.JournalMode)
	return rr, nil
}

func rawAppendOne(ctx context.Context, d *sql.DB, m *CorpusMessage) error {
	tx, err := d.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock=immediate)
	if err != nil {
		return err
	}
	cols := []string{"session_id", "role", "content", "timestamp"}
	args := []any{m.SessionID, m.Role, m.Content, float64(time.Now().UnixMicro()) / 1e6}
	calls := 0
	if m.HasToolCalls() {
		cols, args = append(cols, "tool_calls"), append(args, string(m.ToolCalls))
		var v []json.RawMessage
		if json.Unmarshal(m.ToolCalls, &v) == nil {
			calls = len(v)
		}
	}
	if m.ToolName != nil {
		cols, args = append(cols, "tool_name"), append(args, *m.ToolName)
	}
	if m.ToolCallID != nil {
		cols, args = append(cols, "tool_call_id"), append(args, *m.ToolCallID)
	}
	if m.TokenCount != nil {
		cols, args = append(cols, "token_count"), append(args, *m.TokenCount)
	}
	if m.FinishReason != nil {
		cols, args = append(cols, "finish_reason"), append(args, *m.FinishReason)
	}
	q := "INSERT INTO messages (" + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(cols)-1) + ")"
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		tx.Rollback()
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?", calls, m.SessionID); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// dropSearchTriggers drops the FTS (word, trigram) and CJK-queue triggers
// on messages and returns the names of the triggers left.
func dropSearchTriggers(ctx context.Context, d *sql.DB) ([]string, error) {
	names, err := triggerNames(ctx, d)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, n := range names {
		if strings.HasPrefix(n, "messages_fts") || strings.HasPrefix(n, "hermesstate_cjk") {
			if _, err := d.ExecContext(ctx, `DROP TRIGGER "`+n+`"`); err != nil {
				return nil, err
			}
			continue
		}
		left = append(left, n)
	}
	return left, nil
}

func triggerNames(ctx context.Context, d *sql.DB) ([]string, error) {
	rows, err := d.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// ── append_diag ──

// DiagResult is where the append time goes: the same messages, several
// variants, each on a fresh file (bench_hermes.py's four, plus the raw
// statements with every trigger).
type DiagResult struct {
	APISyncFull                    *RawRate `json:"api_sync_full"`
	APISyncNormal                  *RawRate `json:"api_sync_normal"`
	APISyncNormalNoFTSTriggers     *RawRate `json:"api_sync_normal_no_fts_triggers"`
	BareInsertSyncNormalNoFTS      *RawRate `json:"bare_insert_sync_normal_no_fts_triggers"`
	RawInsertSyncNormalAllTriggers *RawRate `json:"raw_insert_sync_normal_all_triggers,omitempty"`
	PhaseInfo
}

func phaseDiag(ctx context.Context, p *params) (*DiagResult, error) {
	set, err := loadAppendSet(p.Corpus)
	if err != nil {
		return nil, err
	}
	msgs := set.order
	if len(msgs) > p.DiagN {
		msgs = msgs[:p.DiagN]
	}
	home := filepath.Dir(p.DB)
	out := &DiagResult{}
	step := 0
	steps := int64(4 * len(msgs))
	if p.Raw {
		steps += int64(len(msgs))
	}
	api := func(name, sync string, dropFTS bool) (*RawRate, error) {
		db := filepath.Join(home, name, "state.db")
		st, err := openStore(ctx, db, sync)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		for _, s := range set.sessions {
			if err := createSession(ctx, st, s); err != nil {
				return nil, err
			}
		}
		rr := &RawRate{Messages: len(msgs), JournalMode: st.JournalMode()}
		if dropFTS {
			d, err := rawDB(db, sync)
			if err != nil {
				return nil, err
			}
			rr.RemainingTriggers, err = dropSearchTriggers(ctx, d)
			d.Close()
			if err != nil {
				return nil, err
			}
		}
		lat := make([]time.Duration, 0, len(msgs))
		c0 := cpuTime()
		t0 := time.Now()
		for _, m := range msgs {
			t := time.Now()
			if _, err := st.Messages().Append(ctx, m.SessionID, newMessage(m, false)); err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t))
			step++
			if p.report != nil {
				p.report(int64(step), steps)
			}
		}
		total := time.Since(t0)
		cpu := cpuTime() - c0
		rr.MessagesPerS = round1(float64(len(msgs)) / total.Seconds())
		rr.USPerMessage = round1(float64(total.Microseconds()) / float64(len(msgs)))
		rr.CPUUSPerMessage = round1(float64(cpu.Microseconds()) / float64(len(msgs)))
		rr.Latency = msStats(lat)
		return rr, nil
	}
	if out.APISyncFull, err = api("api_sync_full", "FULL", false); err != nil {
		return nil, err
	}
	if out.APISyncNormal, err = api("api_sync_normal", "NORMAL", false); err != nil {
		return nil, err
	}
	if out.APISyncNormalNoFTSTriggers, err = api("api_sync_normal_no_fts_triggers", "NORMAL", true); err != nil {
		return nil, err
	}
	if out.BareInsertSyncNormalNoFTS, err = rawAppend(ctx, filepath.Join(home, "bare", "state.db"), "NORMAL", set, msgs, false); err != nil {
		return nil, err
	}
	step += len(msgs)
	if p.Raw {
		if out.RawInsertSyncNormalAllTriggers, err = rawAppend(ctx, filepath.Join(home, "raw", "state.db"), "NORMAL", set, msgs, true); err != nil {
			return nil, err
		}
	}
	out.PeakRSSMiB = peakRSSMiB()
	return out, nil
}

// ── build ──

// BuildResult is the large store: per session Create + AppendBatch (one
// transaction, the corpus timestamps) + Titles().Set.
type BuildResult struct {
	Method                 string             `json:"method"`
	Sessions               int                `json:"sessions"`
	Messages               int                `json:"messages"`
	Seconds                float64            `json:"seconds"`
	MessagesPerS           float64            `json:"messages_per_s"`
	SessionsPerS           float64            `json:"sessions_per_s"`
	SecondsCreateSession   float64            `json:"seconds_create_session"`
	SecondsReplaceMessages float64            `json:"seconds_replace_messages"`
	SecondsSetSessionTitle float64            `json:"seconds_set_session_title"`
	CPUSeconds             float64            `json:"cpu_seconds"`
	Progress               []map[string]int   `json:"progress_per_1000_sessions"`
	Counts                 map[string]int64   `json:"counts"`
	JournalMode            string             `json:"journal_mode"`
	FileBytesAfterClose    map[string]int64   `json:"file_bytes_after_close"`
	BytesByTable           map[string]int64   `json:"bytes_by_table"`
	LongSessionID          string             `json:"long_session_id"`
	Extra                  map[string]float64 `json:"extra,omitempty"`
	PhaseInfo
}

func phaseBuild(ctx context.Context, p *params) (*BuildResult, error) {
	total := int64(0)
	if sets, err := corpusMeta(p.Corpus); err == nil {
		total = int64(sets["store"][0] + sets["long"][0])
	}
	st, err := openStore(ctx, p.DB, "")
	if err != nil {
		return nil, err
	}
	res := &BuildResult{Method: "per session: Sessions().Create + Messages().AppendBatch (one BEGIN IMMEDIATE transaction, the corpus timestamps, every trigger fires) + Titles().Set",
		Counts: map[string]int64{}}
	var tCreate, tBatch, tTitle time.Duration
	c0 := cpuTime()
	t0 := time.Now()
	lastT, lastN := t0, 0
	err = ReadCorpus(p.Corpus, map[string]bool{"long": true, "store": true}, func(s *CorpusSession, ms []CorpusMessage) error {
		if s.Set == "long" {
			res.LongSessionID = s.ID
		}
		a := time.Now()
		if err := createSession(ctx, st, s); err != nil {
			return err
		}
		b := time.Now()
		batch := make([]repo.MessageInput, len(ms))
		for i := range ms {
			batch[i] = newMessage(&ms[i], true)
		}
		if _, err := st.Messages().AppendBatch(ctx, s.ID, batch); err != nil {
			return err
		}
		c := time.Now()
		if _, err := st.Titles().Set(ctx, s.ID, s.Title); err != nil {
			return err
		}
		d := time.Now()
		tCreate += b.Sub(a)
		tBatch += c.Sub(b)
		tTitle += d.Sub(c)
		res.Messages += len(ms)
		res.Sessions++
		if res.Sessions%1000 == 0 {
			now := time.Now()
			res.Progress = append(res.Progress, map[string]int{"sessions": res.Sessions,
				"messages_per_s": int(float64(res.Messages-lastN)/now.Sub(lastT).Seconds() + 0.5)})
			lastT, lastN = now, res.Messages
		}
		if p.report != nil {
			p.report(int64(res.Sessions), max(total, int64(res.Sessions)))
		}
		return nil
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	el := time.Since(t0)
	res.CPUSeconds = round2((cpuTime() - c0).Seconds())
	res.Seconds = round2(el.Seconds())
	res.MessagesPerS = round1(float64(res.Messages) / el.Seconds())
	res.SessionsPerS = round1(float64(res.Sessions) / el.Seconds())
	res.SecondsCreateSession, res.SecondsReplaceMessages, res.SecondsSetSessionTitle = round2(tCreate.Seconds()), round2(tBatch.Seconds()), round2(tTitle.Seconds())
	res.JournalMode = st.JournalMode()
	if err := st.Close(); err != nil {
		return nil, err
	}
	res.FileBytesAfterClose = fileSizes(p.DB)
	if pgTarget.dsn != "" {
		res.FileBytesAfterClose = pgSchemaBytes(ctx, p.DB)
		if err := pgAnalyze(ctx, p.DB); err != nil {
			return nil, fmt.Errorf("analyze: %w", err)
		}
	}
	d, err := rawDB(p.DB, "")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	for key, q := range map[string]string{"sessions": "SELECT count(*) FROM sessions", "messages": "SELECT count(*) FROM messages",
		"fts_rows": "SELECT count(*) FROM messages_fts", "trigram_rows": "SELECT count(*) FROM messages_fts_trigram",
		"messages_fts_docsize_rows": "SELECT count(*) FROM messages_fts_docsize", "messages_fts_trigram_docsize_rows": "SELECT count(*) FROM messages_fts_trigram_docsize"} {
		var n int64
		if err := d.QueryRowContext(ctx, q).Scan(&n); err == nil {
			res.Counts[key] = n
		}
	}
	res.BytesByTable = bytesByTable(ctx, d)
	if pgTarget.dsn != "" {
		res.BytesByTable = pgBytesByTable(ctx, d)
	}
	res.PeakRSSMiB = peakRSSMiB()
	return res, nil
}

// bytesByTable is bench_hermes.py's dbstat grouping (top 10), nil when
// dbstat is not compiled in.
func bytesByTable(ctx context.Context, d *sql.DB) map[string]int64 {
	rows, err := d.QueryContext(ctx, "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
	if err != nil {
		return nil
	}
	defer rows.Close()
	groups := map[string]int64{}
	for rows.Next() {
		var name string
		var size int64
		if rows.Scan(&name, &size) != nil {
			return nil
		}
		switch {
		case strings.HasPrefix(name, "messages_fts_trigram"):
			name = "messages_fts_trigram*"
		case strings.HasPrefix(name, "messages_fts"):
			name = "messages_fts*"
		case strings.HasPrefix(name, "hermesstate_cjk"):
			name = "hermesstate_cjk*"
		}
		groups[name] += size
	}
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range groups {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	out := map[string]int64{}
	for i, e := range all {
		if i == 10 {
			break
		}
		out[e.k] = e.v
	}
	return out
}

// ── search ──

// Query is one of bench_hermes.py's 11 queries.
type Query struct{ Name, Q, What string }

// Queries are bench_hermes.py's QUERIES.
var Queries = []Query{
	{"common_word", "docker", "common English word"},
	{"rare_word", "kubeconfig", "rare English word"},
	{"two_words", "docker deployment", "implicit AND of two words"},
	{"phrase", `"connection refused"`, "quoted phrase"},
	{"prefix", "deplo*", "prefix query"},
	{"trigram_substring", "youer服务端", "Latin+CJK substring inside '修改youer服务端的配置文件' (3 CJK chars)"},
	{"cjk_2char", "桂林", "2-character Chinese"},
	{"cjk_3plus", "服务端配置", "5-character Chinese"},
	{"japanese", "データベース", "6-character katakana"},
	{"japanese_2char", "検索", "extra: 2-character Japanese"},
	{"latin_substring", "ployment", "extra: Latin substring of 'deployment' (word index only)"},
}

// SearchResult is the search phase.
type SearchResult struct {
	OpenStoreMS     float64                 `json:"open_store_ms"`
	MessagesInStore int64                   `json:"messages_in_store"`
	Reps            int                     `json:"reps"`
	JournalMode     string                  `json:"journal_mode"`
	Queries         map[string]*QueryResult `json:"queries"`
	PhaseInfo
}

// QueryResult is one query's figures.
type QueryResult struct {
	Query           string  `json:"query"`
	What            string  `json:"what"`
	MedianMS        float64 `json:"median_ms"`
	P95MS           float64 `json:"p95_ms"`
	MinMS           float64 `json:"min_ms"`
	MaxMS           float64 `json:"max_ms"`
	CPUMSPerCall    float64 `json:"cpu_ms_per_call"`
	ResultsReturned int     `json:"results_returned"`
	Path            string  `json:"path"`
	// MatchingRows: every hit of the query, paging through it 500 at a
	// time (bench_hermes.py counts the rows of Hermes' main statement
	// without LIMIT).
	MatchingRows int     `json:"matching_rows"`
	MatchingPct  float64 `json:"matching_pct"`
	// IDs of the hits returned (limit 20), in order.
	Top20IDs []int64 `json:"top20_ids"`
	// Raw SQL on the same engine: one statement on the index the route
	// used (see RawSQLStatement), no context rows.
	RawSQLMedianMS  *float64 `json:"raw_sql_median_ms,omitempty"`
	RawSQLP95MS     *float64 `json:"raw_sql_p95_ms,omitempty"`
	RawSQLStatement string   `json:"raw_sql_statement,omitempty"`
	RawSQLRows      *int     `json:"raw_sql_rows,omitempty"`
}

func phaseSearch(ctx context.Context, p *params) (*SearchResult, error) {
	t := time.Now()
	st, err := openStore(ctx, p.DB, "")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	res := &SearchResult{OpenStoreMS: round1(float64(time.Since(t).Microseconds()) / 1000), Reps: p.Reps, JournalMode: st.JournalMode(),
		Queries: map[string]*QueryResult{}}
	if res.MessagesInStore, err = st.Messages().Count(ctx, ""); err != nil {
		return nil, err
	}
	var raw *sql.DB
	if p.Raw {
		if raw, err = rawReadDB(p.DB); err != nil {
			return nil, err
		}
		defer raw.Close()
	}
	srch := st.Search()
	for qi, q := range Queries {
		opt := repo.SearchOptions{Limit: 20}
		var hits []repo.SearchHit
		tm, err := timeCalls(p.Warmup, p.Reps, func() error {
			var err error
			hits, err = srch.Messages(ctx, q.Q, opt)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("search %q: %w", q.Q, err)
		}
		run, err := srch.Run(ctx, q.Q, opt)
		if err != nil {
			return nil, err
		}
		qr := &QueryResult{Query: q.Q, What: q.What, MedianMS: tm.MedianMS, P95MS: tm.P95MS, MinMS: tm.minMS, MaxMS: tm.maxMS,
			CPUMSPerCall: tm.CPUMSPerCall, ResultsReturned: len(hits), Path: string(run.Route)}
		for _, h := range hits {
			qr.Top20IDs = append(qr.Top20IDs, h.ID)
		}
		for off := 0; ; off += 500 {
			page, err := srch.Messages(ctx, q.Q, repo.SearchOptions{Limit: 500, Offset: off})
			if err != nil {
				return nil, err
			}
			qr.MatchingRows += len(page)
			if len(page) < 500 || off > 1_000_000 {
				break
			}
		}
		if res.MessagesInStore > 0 {
			qr.MatchingPct = round3(100 * float64(qr.MatchingRows) / float64(res.MessagesInStore))
		}
		if raw != nil {
			if err := rawSearch(ctx, raw, p, run, qr); err != nil {
				return nil, fmt.Errorf("raw search %q: %w", q.Q, err)
			}
		}
		res.Queries[q.Name] = qr
		if p.report != nil {
			p.report(int64(qi+1), int64(len(Queries)))
		}
	}
	res.PeakRSSMiB = peakRSSMiB()
	return res, nil
}

// rawReadDB opens a read connection on the file (same engine).
func rawReadDB(db string) (*sql.DB, error) {
	c := sqlitex.ConnConfig{Path: db, BusyTimeout: 5 * time.Second, QueryOnly: true}
	d, err := sqlitex.OpenEnvConfig(c)
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(1)
	return d, nil
}

// ── listing ──

// ListingResult is the listing phase.
type ListingResult struct {
	LongSessionMessages int64             `json:"long_session_messages"`
	JournalMode         string            `json:"journal_mode"`
	ListStarted         *ListTiming       `json:"list_sessions_rich_limit20"`
	ListLastActive      *ListTiming       `json:"list_sessions_rich_limit20_order_by_last_active"`
	Conversation        *ListTiming       `json:"get_messages_as_conversation_200"`
	Export              *ListTiming       `json:"export_session_200"`
	RawSQL              map[string]any    `json:"raw_sql,omitempty"`
	RawSQLStatements    map[string]string `json:"raw_sql_statements,omitempty"`
	PhaseInfo
}

// ListTiming is one listing figure.
type ListTiming struct {
	Timing
	Rows       *int  `json:"rows,omitempty"`
	HasPreview *bool `json:"has_preview,omitempty"`
	Messages   *int  `json:"messages,omitempty"`
	JSONBytes  *int  `json:"json_bytes,omitempty"`
}

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

func phaseListing(ctx context.Context, p *params) (*ListingResult, error) {
	st, err := openStore(ctx, p.DB, "")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	res := &ListingResult{JournalMode: st.JournalMode()}
	if res.LongSessionMessages, err = st.Messages().Count(ctx, p.LongID); err != nil {
		return nil, err
	}
	step := func(i int) {
		if p.report != nil {
			p.report(int64(i), 4)
		}
	}
	var rows []repo.RichSession
	tm, err := timeCalls(p.Warmup, p.Reps, func() error {
		var err error
		rows, err = st.Listing().Rich(ctx, repo.RichOptions{Limit: 20})
		return err
	})
	if err != nil {
		return nil, err
	}
	res.ListStarted = &ListTiming{Timing: tm, Rows: intp(len(rows)), HasPreview: boolp(len(rows) > 0 && rows[0].Preview != "")}
	step(1)
	tm, err = timeCalls(p.Warmup, p.Reps, func() error {
		var err error
		rows, err = st.Listing().Rich(ctx, repo.RichOptions{Limit: 20, OrderByLastActive: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	res.ListLastActive = &ListTiming{Timing: tm, Rows: intp(len(rows))}
	step(2)
	var conv []repo.ConversationItem
	tm, err = timeCalls(p.Warmup, p.Reps, func() error {
		var err error
		conv, err = st.Messages().Conversation(ctx, p.LongID, repo.ConversationOptions{})
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Conversation = &ListTiming{Timing: tm, Messages: intp(len(conv))}
	step(3)
	var ex *repo.ExportedSession
	tm, err = timeCalls(p.Warmup, p.Reps, func() error {
		var err error
		ex, err = st.Portability().Session(ctx, p.LongID)
		return err
	})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(ex)
	res.Export = &ListTiming{Timing: tm, Messages: intp(len(ex.Messages)), JSONBytes: intp(len(b))}
	step(4)
	if p.Raw {
		if err := rawListing(ctx, p, res); err != nil {
			return nil, fmt.Errorf("raw listing: %w", err)
		}
	}
	res.PeakRSSMiB = peakRSSMiB()
	return res, nil
}

// ── conc ──

// ConcResult is the conc phase: Procs OS processes x N appends into one
// file, each process into its own session.
type ConcResult struct {
	Procs                   int               `json:"procs"`
	AppendsPerProc          int               `json:"appends_per_proc"`
	Attempted               int               `json:"attempted"`
	JournalMode             string            `json:"journal_mode"`
	Acknowledged            int               `json:"acknowledged"`
	Found                   int               `json:"found"`
	Lost                    int               `json:"lost"`
	Duplicates              int               `json:"duplicates"`
	Errors                  int               `json:"errors"`
	ErrorsByMessage         map[string]int    `json:"errors_by_message"`
	FailedButPresent        int               `json:"failed_but_present"`
	MessageCountMismatch    int               `json:"message_count_mismatch_sessions"`
	IntegrityCheck          string            `json:"integrity_check"`
	FTSIntegrity            map[string]string `json:"fts_integrity"`
	Latency                 *MSStats          `json:"latency"`
	WallFirstStartToLastEnd float64           `json:"wall_s_first_start_to_last_end"`
	WallGoToAllExited       float64           `json:"wall_s_go_to_all_exited"`
	ThroughputAppendsPerS   float64           `json:"throughput_appends_per_s"`
	WorkerPeakRSSMiB        []float64         `json:"worker_peak_rss_mib"`
	WorkerCPUUSPerAppend    []float64         `json:"worker_cpu_us_per_append"`
	PhaseInfo
}

type workerResult struct {
	Acked   []string `json:"acked"`
	Failed  []string `json:"failed"`
	Errors  []string `json:"errors"`
	LatNS   []int64  `json:"lat_ns"`
	TStart  float64  `json:"t_start"`
	TEnd    float64  `json:"t_end"`
	PeakRSS float64  `json:"peak_rss_mib"`
	CPUUS   float64  `json:"cpu_us_per_append"`
}

func epochNow() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func phaseConc(ctx context.Context, p *params) (*ConcResult, error) {
	if p.spawn == nil {
		return nil, errors.New("the conc phase needs worker processes")
	}
	home := filepath.Dir(p.DB)
	jmode, err := concPrepare(ctx, p)
	if err != nil {
		return nil, err
	}
	goFile := filepath.Join(home, "go")
	procs, err := concStart(ctx, p, home, goFile)
	if err != nil {
		return nil, err
	}
	if err := concAwaitReady(procs); err != nil {
		return nil, err
	}
	tGo := time.Now()
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		return nil, err
	}
	ws, err := concCollect(p, procs)
	if err != nil {
		return nil, err
	}
	tDone := time.Since(tGo)
	d, err := rawDB(p.DB, "")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	found, err := concFound(ctx, d)
	if err != nil {
		return nil, err
	}
	res := &ConcResult{Procs: p.Procs, AppendsPerProc: p.N, Attempted: p.Procs * p.N, JournalMode: jmode, Found: len(found),
		ErrorsByMessage: map[string]int{}, FTSIntegrity: map[string]string{}}
	lat, first, last := concTally(res, ws, found)
	concCheck(ctx, d, res)
	if len(lat) > 0 {
		s := msStats(lat)
		res.Latency = &s
	}
	res.WallFirstStartToLastEnd = round3(last - first)
	res.WallGoToAllExited = round3(tDone.Seconds())
	if last > first {
		res.ThroughputAppendsPerS = round1(float64(res.Acknowledged) / (last - first))
	}
	res.PeakRSSMiB = peakRSSMiB()
	return res, nil
}

// concPrepare creates one session per worker and returns the store's
// journal mode.
func concPrepare(ctx context.Context, p *params) (string, error) {
	st, err := openStore(ctx, p.DB, "")
	if err != nil {
		return "", err
	}
	for k := 0; k < p.Procs; k++ {
		if _, err := st.Sessions().Create(ctx, repo.SessionInput{ID: fmt.Sprintf("conc-%d", k), Source: "cli", Model: "bench"}); err != nil {
			st.Close()
			return "", err
		}
	}
	jmode := st.JournalMode()
	if err := st.Close(); err != nil {
		return "", err
	}
	return jmode, nil
}

// concProc is one started conc worker: done receives its exit, result and
// ready are the files it writes.
type concProc struct {
	done   chan error
	result string
	ready  string
}

// concStart starts the worker processes; they wait for goFile.
func concStart(ctx context.Context, p *params, home, goFile string) ([]*concProc, error) {
	procs := make([]*concProc, p.Procs)
	for k := range procs {
		wp := *p
		wp.Phase, wp.K, wp.Go = "conc_worker", k, goFile
		wp.Result = filepath.Join(home, fmt.Sprintf("worker%d.json", k))
		wp.Ready = filepath.Join(home, fmt.Sprintf("ready%d", k))
		raw, _ := json.Marshal(&wp)
		cmd := p.spawn(ctx, []string{"--phase", "conc_worker", "--params", string(raw)})
		var stderr strings.Builder
		cmd.Stderr, cmd.Stdout = &stderr, io.Discard
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start worker %d: %w", k, err)
		}
		pr := &concProc{done: make(chan error, 1), result: wp.Result, ready: wp.Ready}
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, lastLines(stderr.String(), 5))
			}
			pr.done <- err
		}()
		procs[k] = pr
	}
	return procs, nil
}

// concAwaitReady waits (up to two minutes) until every worker has written
// its ready file.
func concAwaitReady(procs []*concProc) error {
	deadline := time.Now().Add(120 * time.Second)
	for _, pr := range procs {
		for {
			if _, err := os.Stat(pr.ready); err == nil {
				break
			}
			select {
			case err := <-pr.done:
				return fmt.Errorf("worker exited before it was ready: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				return errors.New("workers not ready")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// concCollect waits for every worker and reads its result file.
func concCollect(p *params, procs []*concProc) ([]workerResult, error) {
	var ws []workerResult
	for k, pr := range procs {
		if err := <-pr.done; err != nil {
			return nil, fmt.Errorf("worker %d: %w", k, err)
		}
		var w workerResult
		b, err := os.ReadFile(pr.result)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, err
		}
		ws = append(ws, w)
		if p.report != nil {
			p.report(int64(k+1), int64(len(procs)))
		}
	}
	return ws, nil
}

// concFound counts the stored rows of each conc platform_message_id.
func concFound(ctx context.Context, d *sql.DB) (map[string]int, error) {
	found := map[string]int{}
	rows, err := d.QueryContext(ctx, "SELECT platform_message_id, count(*) FROM messages WHERE platform_message_id LIKE 'conc-%' GROUP BY platform_message_id")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return nil, err
		}
		found[id] = n
	}
	rows.Close()
	return found, nil
}

// concTally adds the workers' acknowledgements, failures and errors
// against what was found into res and returns the latencies and the first
// start and last end of the workers.
func concTally(res *ConcResult, ws []workerResult, found map[string]int) (lat []time.Duration, first, last float64) {
	for i, w := range ws {
		res.Acknowledged += len(w.Acked)
		for _, a := range w.Acked {
			if found[a] == 0 {
				res.Lost++
			}
		}
		res.Errors += len(w.Failed)
		for _, f := range w.Failed {
			if found[f] > 0 {
				res.FailedButPresent++
			}
		}
		for _, e := range w.Errors {
			res.ErrorsByMessage[e]++
		}
		for _, ns := range w.LatNS {
			lat = append(lat, time.Duration(ns))
		}
		if i == 0 || w.TStart < first {
			first = w.TStart
		}
		if w.TEnd > last {
			last = w.TEnd
		}
		res.WorkerPeakRSSMiB = append(res.WorkerPeakRSSMiB, w.PeakRSS)
		res.WorkerCPUUSPerAppend = append(res.WorkerCPUUSPerAppend, w.CPUUS)
	}
	for _, n := range found {
		if n > 1 {
			res.Duplicates++
		}
	}
	return lat, first, last
}

// concCheck records the counter mismatches, integrity_check and the FTS
// integrity checks of the file after the run.
func concCheck(ctx context.Context, d *sql.DB, res *ConcResult) {
	_ = d.QueryRowContext(ctx, "SELECT count(*) FROM sessions s WHERE s.id LIKE 'conc-%' AND s.message_count != (SELECT count(*) FROM messages m WHERE m.session_id = s.id)").Scan(&res.MessageCountMismatch)
	if pgTarget.dsn != "" {
		res.IntegrityCheck = "n/a (PostgreSQL)"
		return
	}
	if err := d.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res.IntegrityCheck); err != nil {
		res.IntegrityCheck = err.Error()
	}
	for _, tbl := range []string{"messages_fts", "messages_fts_trigram"} {
		if _, err := d.ExecContext(ctx, "INSERT INTO "+tbl+"("+tbl+") VALUES('integrity-check')"); err != nil {
			res.FTSIntegrity[tbl] = err.Error()
		} else {
			res.FTSIntegrity[tbl] = "ok"
		}
	}
}

// concWorker is one conc process: it opens the store, says it is ready,
// waits for the go file, then appends N messages one call each into
// conc-K with platform_message_id conc-K-i.
func concWorker(ctx context.Context, p *params) (any, error) {
	set, err := loadAppendSet(p.Corpus)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, p.DB, "")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := os.WriteFile(p.Ready, nil, 0o644); err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(p.Go); err == nil {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		time.Sleep(time.Millisecond)
	}
	sid := fmt.Sprintf("conc-%d", p.K)
	w := &workerResult{TStart: epochNow()}
	c0 := cpuTime()
	for i := 0; i < p.N; i++ {
		m := set.order[(p.K*p.N+i)%len(set.order)]
		nm := newMessage(m, false)
		nm.PlatformMessageID = fmt.Sprintf("conc-%d-%d", p.K, i)
		t := time.Now()
		_, err := st.Messages().Append(ctx, sid, nm)
		d := time.Since(t)
		if err != nil {
			w.Failed = append(w.Failed, nm.PlatformMessageID)
			w.Errors = append(w.Errors, errKind(err)+": "+err.Error())
			continue
		}
		w.LatNS = append(w.LatNS, d.Nanoseconds())
		w.Acked = append(w.Acked, nm.PlatformMessageID)
	}
	w.TEnd = epochNow()
	w.CPUUS = round1(float64((cpuTime() - c0).Microseconds()) / float64(max(1, p.N)))
	w.PeakRSS = peakRSSMiB()
	return w, nil
}

func errKind(err error) string {
	for _, k := range []struct {
		e    error
		name string
	}{{hs.ErrBusy, "busy"}, {hs.ErrConflict, "conflict"}, {hs.ErrNotFound, "not_found"}, {hs.ErrInvalid, "invalid"},
		{hs.ErrCorrupt, "corrupt"}, {hs.ErrClosed, "closed"}, {hs.ErrStorage, "storage"}} {
		if errors.Is(err, k.e) {
			return k.name
		}
	}
	return "other"
}
