package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// dsFixtureDir is the repository's copy of the Hermes fixtures.
var dsFixtureDir = fixturetest.Dir()

// dsFixture is the part of a Hermes *.expected.json these tests read.
type dsFixture struct {
	SchemaVersion int `json:"hermes_schema_version"`
	SQLiteMaster  []struct {
		Type string  `json:"type"`
		Name string  `json:"name"`
		SQL  *string `json:"sql"`
	} `json:"sqlite_master"`
	TableInfo map[string][]struct {
		Name    string  `json:"name"`
		Type    string  `json:"type"`
		NotNull int     `json:"notnull"`
		Default *string `json:"dflt_value"`
	} `json:"table_info"`
	Rows struct {
		Sessions      []dsSessionRow `json:"sessions"`
		Usage         []dsUsageRow   `json:"session_model_usage"`
		SystemPrompts []dsPromptRow  `json:"system_prompts"`
	} `json:"rows"`
}

type dsSessionRow struct {
	ID               string   `json:"id" gorm:"column:id"`
	ModelConfig      *string  `json:"model_config" gorm:"column:model_config"`
	Model            *string  `json:"model" gorm:"column:model"`
	BillingProvider  *string  `json:"billing_provider" gorm:"column:billing_provider"`
	BillingBaseURL   *string  `json:"billing_base_url" gorm:"column:billing_base_url"`
	BillingMode      *string  `json:"billing_mode" gorm:"column:billing_mode"`
	StartedAt        float64  `json:"started_at" gorm:"column:started_at"`
	EndedAt          *float64 `json:"ended_at" gorm:"column:ended_at"`
	InputTokens      int64    `json:"input_tokens" gorm:"column:input_tokens"`
	OutputTokens     int64    `json:"output_tokens" gorm:"column:output_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens" gorm:"column:cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens" gorm:"column:cache_write_tokens"`
	ReasoningTokens  int64    `json:"reasoning_tokens" gorm:"column:reasoning_tokens"`
	APICallCount     int64    `json:"api_call_count" gorm:"column:api_call_count"`
	EstimatedCost    *float64 `json:"estimated_cost_usd" gorm:"column:estimated_cost_usd"`
	ActualCost       *float64 `json:"actual_cost_usd" gorm:"column:actual_cost_usd"`
	CostStatus       *string  `json:"cost_status" gorm:"column:cost_status"`
	CostSource       *string  `json:"cost_source" gorm:"column:cost_source"`
	SystemPrompt     *string  `json:"system_prompt" gorm:"column:system_prompt"`
	SystemPromptHash *string  `json:"system_prompt_hash" gorm:"column:system_prompt_hash"`
}

type dsUsageRow struct {
	SessionID        string   `json:"session_id" gorm:"column:session_id"`
	Model            string   `json:"model" gorm:"column:model"`
	BillingProvider  string   `json:"billing_provider" gorm:"column:billing_provider"`
	BillingBaseURL   string   `json:"billing_base_url" gorm:"column:billing_base_url"`
	BillingMode      string   `json:"billing_mode" gorm:"column:billing_mode"`
	Task             string   `json:"task" gorm:"column:task"`
	APICallCount     int64    `json:"api_call_count" gorm:"column:api_call_count"`
	InputTokens      int64    `json:"input_tokens" gorm:"column:input_tokens"`
	OutputTokens     int64    `json:"output_tokens" gorm:"column:output_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens" gorm:"column:cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens" gorm:"column:cache_write_tokens"`
	ReasoningTokens  int64    `json:"reasoning_tokens" gorm:"column:reasoning_tokens"`
	EstimatedCost    float64  `json:"estimated_cost_usd" gorm:"column:estimated_cost_usd"`
	ActualCost       float64  `json:"actual_cost_usd" gorm:"column:actual_cost_usd"`
	CostStatus       *string  `json:"cost_status" gorm:"column:cost_status"`
	CostSource       *string  `json:"cost_source" gorm:"column:cost_source"`
	FirstSeen        *float64 `json:"first_seen" gorm:"column:first_seen"`
	LastSeen         *float64 `json:"last_seen" gorm:"column:last_seen"`
}

type dsPromptRow struct {
	Hash   string `json:"hash" gorm:"column:hash"`
	Prompt string `json:"prompt" gorm:"column:prompt"`
}

func dsLoadFixture(t *testing.T, name string) *dsFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dsFixtureDir, name+".expected.json"))
	if err != nil {
		t.Fatalf("read fixture %s: %v", name, err)
	}
	var f dsFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("decode fixture %s: %v", name, err)
	}
	return &f
}

// dsOpenCopy copies a fixture .db into a temp dir and opens the copy with
// one connection (so TEMP objects are visible to every statement), then
// brings it to the v30 shape the way the baseline does before data steps:
// missing ordinary tables created from the v30 DDL, missing columns added.
func dsOpenCopy(t *testing.T, name string) *gorm.DB {
	t.Helper()
	src, err := os.Open(filepath.Join(dsFixtureDir, name+".db"))
	if err != nil {
		t.Fatalf("open fixture db: %v", err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "state.db")
	dst, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := gorm.Open(sqlitex.EnvDialector(path+"?_pragma=foreign_keys(1)"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatalf("gorm open: %v", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1)
	t.Cleanup(func() { sqlDB.Close() })
	dsAddV30Shape(t, db, dsLoadFixture(t, "hermes-v30"))
	return db
}

func dsAddV30Shape(t *testing.T, db *gorm.DB, v30 *dsFixture) {
	t.Helper()
	ordinary := map[string]bool{}
	for _, o := range v30.SQLiteMaster {
		if o.Type != "table" || o.SQL == nil || strings.HasPrefix(o.Name, "sqlite_") ||
			!strings.HasPrefix(*o.SQL, "CREATE TABLE "+o.Name+" ") {
			continue // FTS and shadow tables are not what these steps need
		}
		ordinary[o.Name] = true
		var n int64
		db.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", o.Name).Scan(&n)
		if n == 0 {
			if err := db.Exec(*o.SQL).Error; err != nil {
				t.Fatalf("create %s: %v", o.Name, err)
			}
		}
	}
	for table, cols := range v30.TableInfo {
		if !ordinary[table] {
			continue
		}
		have := dsColumns(t, db, table)
		if len(have) == 0 {
			continue
		}
		for _, c := range cols {
			if have[c.Name] {
				continue
			}
			decl := c.Type
			if c.Default != nil {
				if c.NotNull == 1 {
					decl += " NOT NULL"
				}
				decl += " DEFAULT " + *c.Default
			}
			stmt := fmt.Sprintf(`ALTER TABLE %q ADD COLUMN %q %s`, table, c.Name, decl)
			if err := db.Exec(stmt).Error; err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
}

func dsColumns(t *testing.T, db *gorm.DB, table string) map[string]bool {
	t.Helper()
	var names []string
	if err := db.Raw("SELECT name FROM pragma_table_info(?)", table).Scan(&names).Error; err != nil {
		t.Fatalf("table_info %s: %v", table, err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// dsTrackWrites records, per table, every row the step inserts or updates.
func dsTrackWrites(t *testing.T, db *gorm.DB, tables ...string) {
	t.Helper()
	stmts := []string{"CREATE TEMP TABLE IF NOT EXISTS ds_writes (tbl TEXT, op TEXT, rid INTEGER)"}
	for _, tbl := range tables {
		for _, op := range []string{"INSERT", "UPDATE"} {
			stmts = append(stmts, fmt.Sprintf(
				"CREATE TEMP TRIGGER IF NOT EXISTS ds_%s_%s AFTER %s ON main.%s BEGIN INSERT INTO ds_writes VALUES ('%s', '%s', new.rowid); END",
				tbl, strings.ToLower(op), op, tbl, tbl, op))
		}
	}
	for _, s := range stmts {
		if err := db.Exec(s).Error; err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func dsWrites(t *testing.T, db *gorm.DB) int64 {
	t.Helper()
	var n int64
	if err := db.Raw("SELECT count(*) FROM ds_writes").Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	db.Exec("DELETE FROM ds_writes")
	return n
}

func dsRun(t *testing.T, db *gorm.DB, step func(*gorm.DB) error) {
	t.Helper()
	if err := db.Transaction(step); err != nil {
		t.Fatalf("step failed: %v", err)
	}
}

// dsDump returns every row of table, all columns, in rowid order.
func dsDump(t *testing.T, db *gorm.DB, table string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := db.Raw("SELECT * FROM " + table + " ORDER BY rowid").Scan(&out).Error; err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	return out
}

func dsSessions(t *testing.T, db *gorm.DB) map[string]dsSessionRow {
	t.Helper()
	var rows []dsSessionRow
	if err := db.Raw("SELECT * FROM sessions").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]dsSessionRow{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

func dsModelConfig(t *testing.T, db *gorm.DB, id string) *string {
	t.Helper()
	var rows []struct {
		ModelConfig *string `gorm:"column:model_config"`
	}
	if err := db.Raw("SELECT model_config FROM sessions WHERE id = ?", id).Scan(&rows).Error; err != nil || len(rows) != 1 {
		t.Fatalf("model_config of %s: %v (%d rows)", id, err, len(rows))
	}
	return rows[0].ModelConfig
}

func dsStr(p *string) string {
	if p == nil {
		return "<NULL>"
	}
	return *p
}

func TestDataStepV16TagsDelegateChildAsInV16Fixture(t *testing.T) {
	before := dsLoadFixture(t, "hermes-v14")
	after := dsLoadFixture(t, "hermes-v16")
	if before.SchemaVersion >= 16 || after.SchemaVersion != 16 {
		t.Fatalf("unexpected fixture versions %d / %d", before.SchemaVersion, after.SchemaVersion)
	}
	db := dsOpenCopy(t, "hermes-v14")
	dsTrackWrites(t, db, "sessions")
	dsRun(t, db, stepV16DelegateTags)

	const child = "20260105_091800_sub777"
	want := map[string]*string{}
	for _, r := range before.Rows.Sessions {
		want[r.ID] = r.ModelConfig
	}
	for _, r := range after.Rows.Sessions {
		if r.ID == child {
			want[child] = r.ModelConfig // Hermes v16 wrote the tag itself
		}
	}
	if !strings.Contains(dsStr(want[child]), `"_delegate_from": "20260105_091500_a1b2c3"`) {
		t.Fatalf("v16 fixture child model_config unexpected: %s", dsStr(want[child]))
	}
	got := dsSessions(t, db)
	if len(got) != len(want) {
		t.Fatalf("got %d sessions, want %d", len(got), len(want))
	}
	for id, w := range want {
		if dsStr(got[id].ModelConfig) != dsStr(w) {
			t.Errorf("session %s model_config = %s, want %s", id, dsStr(got[id].ModelConfig), dsStr(w))
		}
	}
	if n := dsWrites(t, db); n != 1 {
		t.Errorf("first run wrote %d session rows, want 1", n)
	}

	snapshot := dsDump(t, db, "sessions")
	dsRun(t, db, stepV16DelegateTags)
	if n := dsWrites(t, db); n != 0 {
		t.Errorf("second run wrote %d session rows, want 0", n)
	}
	if !reflect.DeepEqual(snapshot, dsDump(t, db, "sessions")) {
		t.Error("second run changed sessions")
	}
}

func TestDataStepV16Rules(t *testing.T) {
	db := dsOpenCopy(t, "hermes-v14")
	type sess struct {
		id, parent, endReason, title, sessionKey string
		started, ended                           float64
		messages                                 int
		modelConfig                              *string
		toolRow, emptyKey                        bool
	}
	s := func(v string) *string { return &v }
	rows := []sess{
		{id: "p_exit", endReason: "user_exit", started: 100, ended: 200},
		{id: "p_branch", endReason: "branched", started: 100, ended: 200},
		{id: "p_reset", endReason: "session_reset", sessionKey: "k1", started: 100, ended: 200},
		{id: "p_idle", endReason: "idle", sessionKey: "k9", started: 100, ended: 200},
		{id: "p_comp", endReason: "compression", started: 100, ended: 200},
		{id: "c_null", parent: "p_exit", started: 150},
		{id: "c_py", parent: "p_exit", started: 150, modelConfig: s(`{"name": "\u68c0\u67e5", "nested": {"a": [1, 2.50, true, null], "e": {}}, "x": "\ud83d\ude00"}`)},
		{id: "c_compact", parent: "p_exit", started: 150, modelConfig: s(`{"a":1,"b":"é😀","c":[ ],"d":"\/\u00E9\n"}`)},
		{id: "c_nullmark", parent: "p_exit", started: 150, modelConfig: s(`{"_delegate_from": null, "k": 2}`)},
		{id: "c_tagged", parent: "p_exit", started: 150, modelConfig: s(`{"_delegate_from": "someone"}`)},
		{id: "c_branch_mark", parent: "p_exit", started: 150, modelConfig: s(`{"_branched_from": "p_exit"}`)},
		{id: "c_reset_mark", parent: "p_exit", started: 150, modelConfig: s(`{"_reset_from": "p_exit"}`)},
		{id: "c_branch_after", parent: "p_branch", started: 250},
		{id: "c_branch_before", parent: "p_branch", started: 150},
		{id: "c_reset_same_key", parent: "p_reset", sessionKey: "k1", started: 250},
		{id: "c_reset_other_key", parent: "p_reset", sessionKey: "k2", started: 250},
		{id: "c_reset_no_key", parent: "p_reset", started: 250},
		{id: "c_idle_same_key", parent: "p_idle", sessionKey: "k9", started: 250},
		{id: "c_comp", parent: "p_comp", started: 250},
		{id: "p_reset_empty", endReason: "session_reset", emptyKey: true, started: 100, ended: 200},
		{id: "c_reset_empty_key", parent: "p_reset_empty", emptyKey: true, started: 250},
		{id: "c_array", parent: "p_exit", started: 150, modelConfig: s(`[1, 2]`)},
		{id: "c_malformed", parent: "p_exit", started: 150, modelConfig: s(`{bad`)},
		{id: "c_empty_text", parent: "p_exit", started: 150, modelConfig: s(``)},
		{id: "o_yes", started: 300, messages: 3, toolRow: true},
		{id: "o_25", started: 300, messages: 25, toolRow: true, modelConfig: s(`{"max_iterations": 5}`)},
		{id: "o_26", started: 300, messages: 26, toolRow: true},
		{id: "o_titled", title: "has a title", started: 300, messages: 3, toolRow: true},
		{id: "o_no_tool", started: 300, messages: 3},
		{id: "o_branch_mark", started: 300, messages: 3, toolRow: true, modelConfig: s(`{"_branched_from": "gone"}`)},
		{id: "o_parent", started: 300, messages: 3, toolRow: true},
		{id: "o_parent_kid", parent: "o_parent", started: 350},
		{id: "o_malformed", started: 300, messages: 3, toolRow: true, modelConfig: s(`{"a": NaN}`)},
	}
	nullable := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	for _, r := range rows {
		var ended any
		if r.ended != 0 {
			ended = r.ended
		}
		var key any = nullable(r.sessionKey)
		if r.emptyKey {
			key = ""
		}
		var mc any
		if r.modelConfig != nil {
			mc = *r.modelConfig
		}
		err := db.Exec(`INSERT INTO sessions (id, source, parent_session_id, started_at, ended_at, end_reason, title, session_key, message_count, model_config)
VALUES (?, 'cli', ?, ?, ?, ?, ?, ?, ?, ?)`, r.id, nullable(r.parent), r.started, ended, nullable(r.endReason),
			nullable(r.title), key, r.messages, mc).Error
		if err != nil {
			t.Fatalf("insert %s: %v", r.id, err)
		}
		if r.toolRow {
			if err := db.Exec(`INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp)
VALUES (?, 'tool', 'ok', 'call_1', 'terminal', ?)`, r.id, r.started+1).Error; err != nil {
				t.Fatalf("insert tool row for %s: %v", r.id, err)
			}
		}
	}
	want := map[string]string{
		"c_null":          `{"_delegate_from": "p_exit"}`,
		"c_py":            `{"name": "\u68c0\u67e5", "nested": {"a": [1, 2.50, true, null], "e": {}}, "x": "\ud83d\ude00", "_delegate_from": "p_exit"}`,
		"c_compact":       `{"a": 1, "b": "\u00e9\ud83d\ude00", "c": [], "d": "/\u00e9\n", "_delegate_from": "p_exit"}`,
		"c_nullmark":      `{"_delegate_from": "p_exit", "k": 2}`,
		"c_branch_before": `{"_delegate_from": "p_branch"}`,
		"o_yes":           `{"_delegate_from": "__orphaned__"}`,
		"o_25":            `{"max_iterations": 5, "_delegate_from": "__orphaned__"}`,
		"o_parent_kid":    `{"_delegate_from": "o_parent"}`,
		// reset heuristics need the same non-empty key on both rows
		"c_reset_other_key": `{"_delegate_from": "p_reset"}`,
		"c_reset_no_key":    `{"_delegate_from": "p_reset"}`,
		"c_reset_empty_key": `{"_delegate_from": "p_reset_empty"}`,
	}
	const fixtureChild = "20260105_091800_sub777"

	dsTrackWrites(t, db, "sessions")
	dsRun(t, db, stepV16DelegateTags)
	if n := dsWrites(t, db); n != int64(len(want)+1) {
		t.Errorf("first run wrote %d session rows, want %d", n, len(want)+1)
	}
	if got := dsStr(dsModelConfig(t, db, fixtureChild)); got != `{"max_iterations": 20, "_delegate_from": "20260105_091500_a1b2c3"}` {
		t.Errorf("fixture child: %s", got)
	}
	for _, r := range rows {
		got := dsModelConfig(t, db, r.id)
		exp, tagged := want[r.id]
		if !tagged {
			if dsStr(got) != dsStr(r.modelConfig) {
				t.Errorf("%s: model_config changed to %s, want untouched %s", r.id, dsStr(got), dsStr(r.modelConfig))
			}
			continue
		}
		if dsStr(got) != exp {
			t.Errorf("%s: model_config = %s\n want %s", r.id, dsStr(got), exp)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(dsStr(got)), &v); err != nil {
			t.Errorf("%s: result is not JSON: %v", r.id, err)
		}
		var sqliteSees *string
		db.Raw("SELECT json_extract(model_config, '$._delegate_from') FROM sessions WHERE id = ?", r.id).Scan(&sqliteSees)
		if sqliteSees == nil {
			t.Errorf("%s: SQLite does not see the marker", r.id)
		}
	}
	snapshot := dsDump(t, db, "sessions")
	dsRun(t, db, stepV16DelegateTags)
	if n := dsWrites(t, db); n != 0 {
		t.Errorf("second run wrote %d session rows, want 0", n)
	}
	if !reflect.DeepEqual(snapshot, dsDump(t, db, "sessions")) {
		t.Error("second run changed sessions")
	}
}

func TestDataStepV20SeedsUsageFromTotals(t *testing.T) {
	before := dsLoadFixture(t, "hermes-v19")
	after := dsLoadFixture(t, "hermes-v20")
	if before.SchemaVersion >= 20 || len(before.Rows.Usage) != 0 || after.SchemaVersion != 20 {
		t.Fatal("unexpected v19/v20 fixtures")
	}
	db := dsOpenCopy(t, "hermes-v19")
	// A session without a model and one with calls but no tokens.
	if err := db.Exec(`INSERT INTO sessions (id, source, started_at, input_tokens, api_call_count) VALUES ('no_model', 'cli', 500.5, 7, 1)`).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`INSERT INTO sessions (id, source, started_at, api_call_count, estimated_cost_usd) VALUES ('no_tokens', 'cli', 600.5, 3, 0.5)`).Error; err != nil {
		t.Fatal(err)
	}
	dsTrackWrites(t, db, "session_model_usage")
	dsRun(t, db, stepV20UsageSeed)

	var got []dsUsageRow
	if err := db.Raw("SELECT * FROM session_model_usage ORDER BY rowid").Scan(&got).Error; err != nil {
		t.Fatal(err)
	}
	bySession := map[string]dsUsageRow{}
	for _, u := range got {
		if _, dup := bySession[u.SessionID]; dup {
			t.Errorf("session %s seeded twice", u.SessionID)
		}
		bySession[u.SessionID] = u
	}
	coalesce := func(p *string, d string) string {
		if p == nil {
			return d
		}
		return *p
	}
	f := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	expected := 0
	for _, s := range before.Rows.Sessions {
		total := s.InputTokens + s.OutputTokens + s.CacheReadTokens + s.CacheWriteTokens + s.ReasoningTokens
		u, ok := bySession[s.ID]
		if total == 0 {
			if ok {
				t.Errorf("session %s has no tokens but got a usage row", s.ID)
			}
			continue
		}
		expected++
		if !ok {
			t.Errorf("session %s (%d tokens) got no usage row", s.ID, total)
			continue
		}
		last := s.StartedAt
		if s.EndedAt != nil {
			last = *s.EndedAt
		}
		want := dsUsageRow{
			SessionID: s.ID, Model: coalesce(s.Model, "unknown"),
			BillingProvider: coalesce(s.BillingProvider, ""), BillingBaseURL: coalesce(s.BillingBaseURL, ""),
			BillingMode: coalesce(s.BillingMode, ""), APICallCount: s.APICallCount,
			InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CacheReadTokens: s.CacheReadTokens,
			CacheWriteTokens: s.CacheWriteTokens, ReasoningTokens: s.ReasoningTokens,
			EstimatedCost: f(s.EstimatedCost), ActualCost: f(s.ActualCost),
			CostStatus: s.CostStatus, CostSource: s.CostSource,
			FirstSeen: &s.StartedAt, LastSeen: &last,
		}
		if !reflect.DeepEqual(u, want) {
			t.Errorf("session %s seeded\n %+v\nwant\n %+v", s.ID, u, want)
		}
	}
	if expected != 7 {
		t.Fatalf("v19 fixture: %d sessions with tokens, want 7", expected)
	}
	if u, ok := bySession["no_model"]; !ok || u.Model != "unknown" || u.InputTokens != 7 || *u.FirstSeen != 500.5 || *u.LastSeen != 500.5 {
		t.Errorf("no_model seeded as %+v", u)
	}
	if _, ok := bySession["no_tokens"]; ok {
		t.Error("no_tokens was seeded")
	}
	if len(got) != expected+1 {
		t.Errorf("%d usage rows, want %d", len(got), expected+1)
	}
	if n := dsWrites(t, db); n != int64(len(got)) {
		t.Errorf("first run wrote %d rows, want %d", n, len(got))
	}

	// Where Hermes v20 recorded a session under one route only, its live
	// row carries the same key and totals as the seed (timestamps differ:
	// the live path stamps each call, the seed uses the session's bounds).
	live := map[string][]dsUsageRow{}
	for _, u := range after.Rows.Usage {
		live[u.SessionID] = append(live[u.SessionID], u)
	}
	compared := 0
	for id, rows := range live {
		seeded := bySession[id]
		if len(rows) != 1 {
			var in, out int64
			for _, r := range rows {
				in += r.InputTokens
				out += r.OutputTokens
			}
			if in != seeded.InputTokens || out != seeded.OutputTokens {
				t.Errorf("session %s: seeded totals %d/%d, live rows sum to %d/%d", id, seeded.InputTokens, seeded.OutputTokens, in, out)
			}
			continue
		}
		w := rows[0]
		w.FirstSeen, w.LastSeen = seeded.FirstSeen, seeded.LastSeen
		if !reflect.DeepEqual(seeded, w) {
			t.Errorf("session %s: seeded\n %+v\nHermes v20 live row\n %+v", id, seeded, w)
		}
		compared++
	}
	if compared < 4 {
		t.Errorf("compared only %d single-route sessions with the v20 fixture", compared)
	}

	snapshot := dsDump(t, db, "session_model_usage")
	dsRun(t, db, stepV20UsageSeed)
	if n := dsWrites(t, db); n != 0 {
		t.Errorf("second run wrote %d rows", n)
	}
	if !reflect.DeepEqual(snapshot, dsDump(t, db, "session_model_usage")) {
		t.Error("second run changed session_model_usage")
	}
}

func TestDataStepV20KeepsExistingUsageRows(t *testing.T) {
	fx := dsLoadFixture(t, "hermes-v20")
	db := dsOpenCopy(t, "hermes-v20")
	existing := dsDump(t, db, "session_model_usage")
	if len(existing) != len(fx.Rows.Usage) {
		t.Fatalf("fixture copy has %d usage rows, JSON says %d", len(existing), len(fx.Rows.Usage))
	}
	dsRun(t, db, stepV20UsageSeed)
	all := dsDump(t, db, "session_model_usage")
	if !reflect.DeepEqual(all[:len(existing)], existing) {
		t.Error("existing usage rows changed")
	}
	// Only the Telegram session (totals set in absolute mode, so Hermes
	// recorded no live row) lacks a row under its stored route.
	var added []string
	for _, r := range all[len(existing):] {
		added = append(added, fmt.Sprint(r["session_id"]))
	}
	if !reflect.DeepEqual(added, []string{"20260106_080000_tg0001"}) {
		t.Errorf("seed added rows for %v", added)
	}
}

func TestDataStepV25MovesPromptsAsInV30Fixture(t *testing.T) {
	before := dsLoadFixture(t, "hermes-v21")
	v30 := dsLoadFixture(t, "hermes-v30")
	db := dsOpenCopy(t, "hermes-v21")
	inline := 0
	for _, s := range before.Rows.Sessions {
		if s.SystemPrompt != nil {
			inline++
		}
	}
	if inline == 0 {
		t.Fatal("v21 fixture has no inline prompts")
	}
	dsTrackWrites(t, db, "sessions", "system_prompts")
	dsRun(t, db, stepV25SystemPrompts)
	if n := dsWrites(t, db); n != int64(inline+len(v30.Rows.SystemPrompts)) {
		t.Errorf("first run wrote %d rows, want %d session updates + %d prompts", n, inline, len(v30.Rows.SystemPrompts))
	}

	var prompts []dsPromptRow
	if err := db.Raw("SELECT hash, prompt FROM system_prompts ORDER BY hash").Scan(&prompts).Error; err != nil {
		t.Fatal(err)
	}
	want := append([]dsPromptRow(nil), v30.Rows.SystemPrompts...)
	sort.Slice(want, func(i, j int) bool { return want[i].Hash < want[j].Hash })
	if !reflect.DeepEqual(prompts, want) {
		t.Errorf("system_prompts = %+v\nwant (v30 fixture) %+v", prompts, want)
	}
	for _, p := range prompts {
		sum := sha256.Sum256([]byte(p.Prompt))
		if hex.EncodeToString(sum[:]) != p.Hash {
			t.Errorf("hash %s is not sha256 of its prompt", p.Hash)
		}
	}
	wantHash := map[string]*string{}
	for _, s := range v30.Rows.Sessions {
		wantHash[s.ID] = s.SystemPromptHash
	}
	got := dsSessions(t, db)
	for _, s := range before.Rows.Sessions {
		g := got[s.ID]
		if g.SystemPrompt != nil {
			t.Errorf("session %s keeps its inline prompt", s.ID)
		}
		if dsStr(g.SystemPromptHash) != dsStr(wantHash[s.ID]) {
			t.Errorf("session %s hash %s, v30 fixture has %s", s.ID, dsStr(g.SystemPromptHash), dsStr(wantHash[s.ID]))
		}
	}

	snapSessions, snapPrompts := dsDump(t, db, "sessions"), dsDump(t, db, "system_prompts")
	dsRun(t, db, stepV25SystemPrompts)
	if n := dsWrites(t, db); n != 0 {
		t.Errorf("second run wrote %d rows", n)
	}
	if !reflect.DeepEqual(snapSessions, dsDump(t, db, "sessions")) || !reflect.DeepEqual(snapPrompts, dsDump(t, db, "system_prompts")) {
		t.Error("second run changed rows")
	}
}

func TestDataStepV25Edges(t *testing.T) {
	db := dsOpenCopy(t, "hermes-v21")
	shared := "You are Hermes, a helpful agent. Use tools when they help.\n# Workspace\ncwd=/srv/shop"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	other := "Üñíçødé prompt 桂林 😀"
	stmts := []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO system_prompts (hash, prompt) VALUES (?, ?)", []any{sum(other), other}},
		{"INSERT INTO sessions (id, source, started_at, system_prompt) VALUES ('e_empty', 'cli', 1, '')", nil},
		{"INSERT INTO sessions (id, source, started_at, system_prompt) VALUES ('e_unicode', 'cli', 1, ?)", []any{other}},
		{"INSERT INTO sessions (id, source, started_at, system_prompt_hash) VALUES ('e_hash_only', 'cli', 1, ?)", []any{sum(other)}},
		{"INSERT INTO sessions (id, source, started_at, system_prompt) VALUES ('e_blob', 'cli', 1, CAST('blob prompt' AS BLOB))", nil},
	}
	for _, s := range stmts {
		if err := db.Exec(s.sql, s.args...).Error; err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	dsRun(t, db, stepV25SystemPrompts)
	got := dsSessions(t, db)
	check := func(id string, prompt *string, hash string) {
		t.Helper()
		g := got[id]
		if dsStr(g.SystemPrompt) != dsStr(prompt) || dsStr(g.SystemPromptHash) != hash {
			t.Errorf("%s: prompt %q hash %s; want prompt %q hash %s", id, dsStr(g.SystemPrompt), dsStr(g.SystemPromptHash), dsStr(prompt), hash)
		}
	}
	blob := "blob prompt"
	check("e_empty", nil, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
	check("e_unicode", nil, sum(other))
	check("e_hash_only", nil, sum(other))
	check("e_blob", &blob, "<NULL>")
	check("20260105_103000_d4e5f6", nil, sum(shared))
	var n int64
	db.Raw("SELECT count(*) FROM system_prompts").Scan(&n)
	if n != 4 { // two fixture prompts, the Unicode one (shared), the empty one
		t.Errorf("%d system_prompts rows, want 4", n)
	}
	var orphanRefs int64
	db.Raw(`SELECT count(*) FROM sessions s WHERE s.system_prompt_hash IS NOT NULL
AND NOT EXISTS (SELECT 1 FROM system_prompts p WHERE p.hash = s.system_prompt_hash)`).Scan(&orphanRefs)
	if orphanRefs != 0 {
		t.Errorf("%d sessions reference a missing prompt", orphanRefs)
	}
}

func TestDataStepPySetKey(t *testing.T) {
	ok := []struct{ in, want string }{
		{`{}`, `{"k": "v"}`},
		{" \n{ } \t", `{"k": "v"}`},
		{`{"max_iterations": 20}`, `{"max_iterations": 20, "k": "v"}`},
		{`{"a":{"b":[1,{"c":null}],"d":[]},"e":false}`, `{"a": {"b": [1, {"c": null}], "d": []}, "e": false, "k": "v"}`},
		{`{"k": 1, "z": 2}`, `{"k": "v", "z": 2}`},
		{`{"k": 1, "k": {"x": 2}}`, `{"k": "v", "k": "v"}`},
		{`{"n":-0.5e+10,"m":1E-7,"o":0,"p":123456789012345678901234567890}`, `{"n": -0.5e+10, "m": 1E-7, "o": 0, "p": 123456789012345678901234567890, "k": "v"}`},
		{`{"s": "a\"b\\c\/d\b\f\n\r\t\u0001\u001F\u007f~ "}`, `{"s": "a\"b\\c/d\b\f\n\r\t\u0001\u001f\u007f~ ", "k": "v"}`},
		{"{\"s\": \"é检😀\x7f\"}", `{"s": "\u00e9\u68c0\ud83d\ude00\u007f", "k": "v"}`},
		{`{"lone": "\ud800x", "pair": "\uD83D\uDE00"}`, `{"lone": "\ud800x", "pair": "\ud83d\ude00", "k": "v"}`},
		{`{"\u006b": 3}`, `{"k": "v"}`},
	}
	for _, c := range ok {
		got, good := pySetKey(c.in, "k", "v")
		if !good || got != c.want {
			t.Errorf("pySetKey(%q) = %q, %v; want %q", c.in, got, good, c.want)
		}
	}
	if got, _ := pySetKey(`{}`, "_delegate_from", "id \"q\" 桂"); got != `{"_delegate_from": "id \"q\" \u6842"}` {
		t.Errorf("value escaping: %s", got)
	}
	bad := []string{
		``, ` `, `[]`, `[1, 2]`, `"s"`, `5`, `null`, `true`, `{`, `}`, `{"a"}`, `{"a" 1}`, `{"a":1,}`,
		`{,}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":NaN}`,
		`{"a":Infinity}`, `{"a":tru}`, `{'a':1}`, `{a:1}`, `{"a":1} x`, `{"a":1}{}`, `{"a":"x}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, "{\"a\":\"tab\there\"}", "{\"a\":\"\xff\"}",
		"{\"a\":\"\xed\xa0\x80\"}", `{"a":[1,]}`, `{"a":[1 2]}`, "{\"a\":1}\x00",
		`{"a":` + strings.Repeat("[", pyJSONMaxDepth+1) + strings.Repeat("]", pyJSONMaxDepth+1) + `}`,
	}
	for _, in := range bad {
		if got, good := pySetKey(in, "k", "v"); good {
			t.Errorf("pySetKey(%q) accepted: %q", in, got)
		}
	}
	deep := `{"a":` + strings.Repeat("[", pyJSONMaxDepth-1) + strings.Repeat("]", pyJSONMaxDepth-1) + `}`
	if _, good := pySetKey(deep, "k", "v"); !good {
		t.Error("nesting at the depth limit rejected")
	}
	// Output always decodes to the input plus the key.
	for _, c := range ok {
		var in, out map[string]any
		if json.Unmarshal([]byte(c.in), &in) != nil {
			continue
		}
		got, _ := pySetKey(c.in, "k", "v")
		if err := json.Unmarshal([]byte(got), &out); err != nil {
			t.Errorf("output of %q is not JSON: %v", c.in, err)
			continue
		}
		in["k"] = "v"
		if !reflect.DeepEqual(in, out) && !strings.Contains(c.in, `\ud800`) {
			t.Errorf("pySetKey(%q) decodes to %v, want %v", c.in, out, in)
		}
	}
}
