//go:build ignore

// append_probe_pg times one-message appends on a PostgreSQL schema against
// their floor (BENCHMARKS.md, "Quiet machines"): per round, the corpus' first
// 1,000 messages through Messages().Append, then the same counter UPDATE +
// INSERT + COMMIT sent by plain database/sql (pgx), into one session; p50/p95
// per round, 3 rounds.
//
//	go run docs/bench/append_probe_pg.go 'postgres://...?sslmode=disable' SCHEMA SESSION_ID corpus.jsonl
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sort"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

type msg struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	ToolCalls json.RawMessage `json:"tool_calls"`
	ToolName  *string         `json:"tool_name"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "append_probe_pg:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 5 {
		return fmt.Errorf("usage: append_probe_pg DSN SCHEMA SESSION_ID CORPUS.jsonl")
	}
	ctx := context.Background()
	dsn, schema, sid := os.Args[1], os.Args[2], os.Args[3]
	msgs, err := readMessages(os.Args[4], 1000)
	if err != nil {
		return err
	}
	st, err := hs.Open(ctx, hs.Config{Driver: hs.DriverPostgres, DSN: dsn, Schema: schema, MustExist: true})
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	raw, err := sql.Open("pgx", u.String())
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	for round := 0; round < 3; round++ {
		var api, rw []time.Duration
		for _, m := range msgs {
			in := repo.MessageInput{Role: m.Role, Content: m.Content}
			if m.ToolName != nil {
				in.ToolName = *m.ToolName
			}
			if hasCalls(m) {
				in.ToolCalls = models.JSON(m.ToolCalls)
			}
			t := time.Now()
			if _, err := st.Messages().Append(ctx, sid, in); err != nil {
				return err
			}
			api = append(api, time.Since(t))
		}
		for _, m := range msgs {
			var calls any
			if hasCalls(m) {
				calls = string(m.ToolCalls)
			}
			t := time.Now()
			if err := rawAppend(ctx, raw, sid, m, calls); err != nil {
				return err
			}
			rw = append(rw, time.Since(t))
		}
		fmt.Printf("round %d: API p50 %.2f p95 %.2f ms · raw p50 %.2f p95 %.2f ms\n", round, pct(api, 50), pct(api, 95), pct(rw, 50), pct(rw, 95))
	}
	return nil
}

func rawAppend(ctx context.Context, d *sql.DB, sid string, m msg, calls any) error {
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, tool_call_count = COALESCE(tool_call_count, 0) + 0 WHERE id = $1", sid); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO messages (session_id, role, content, timestamp, tool_calls, tool_name) VALUES ($1, $2, $3, $4, $5, $6)",
		sid, m.Role, m.Content, float64(time.Now().UnixMicro())/1e6, calls, m.ToolName); err != nil {
		return err
	}
	return tx.Commit()
}

func hasCalls(m msg) bool { return len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" }

func readMessages(path string, n int) ([]msg, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var out []msg
	for sc.Scan() && len(out) < n {
		var m msg
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Type == "message" {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

func pct(d []time.Duration, q int) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return float64(s[len(s)*q/100].Microseconds()) / 1000
}
