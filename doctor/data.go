package doctor

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// Check names of the data checks.
const (
	// CheckJSON: a JSON column holds a value that is not JSON.
	CheckJSON = "json"
	// CheckLineage: sessions whose chain of parents leads back to them.
	CheckLineage = "lineage"
)

// UnparsedKey is the key under which repair keeps the text of a
// model_config, origin_json or display_metadata value that was not JSON
// (the column then holds the JSON object {"_unparsed": TEXT}).
const UnparsedKey = "_unparsed"

// jsonColumn is a JSON column with values that are not JSON.
type jsonColumn struct {
	table, column string
	rows          int64
}

// jsonColumns are the columns Hermes and hermesstate parse as JSON: what
// they read there must be JSON (NULL is none). Hermes' session listing
// runs json_extract over model_config, which fails the whole statement on
// one value that is not JSON; tool_calls that are not JSON are read as no
// tool calls. (reasoning_details and the codex columns keep text as given,
// as Hermes stores it.)
var jsonColumns = []struct{ table, column string }{
	{"sessions", "model_config"}, {"sessions", "origin_json"}, {"sessions", "tool_names"},
	{"messages", "tool_calls"}, {"messages", "display_metadata"},
}

// jsonColumns reports the JSON columns holding values that are not JSON
// (an empty string included).
func (c *checker) jsonColumns() {
	for _, jc := range jsonColumns {
		if !c.has("table", jc.table) || !c.hasColumn(jc.table, jc.column) {
			continue
		}
		col := schemaref.QuoteIdent(jc.column)
		var n int64
		var example sql.NullString
		q := fmt.Sprintf("SELECT count(*), min(%s) FROM %s WHERE %s IS NOT NULL AND NOT json_valid(%s)", exampleKey(jc.table), schemaref.QuoteIdent(jc.table), col, col)
		if err := c.db.QueryRowContext(c.ctx, q).Scan(&n, &example); err != nil {
			c.readFailed(CheckJSON, jc.table+"."+jc.column, "checking "+jc.table+"."+jc.column+" failed", err)
			continue
		}
		if n == 0 {
			continue
		}
		c.r.state.badJSON = append(c.r.state.badJSON, jsonColumn{jc.table, jc.column, n})
		sev, why := Warning, "readers that parse it get nothing from it"
		switch jc.column {
		case "model_config":
			sev, why = Error, "Hermes' session listing (json_extract over model_config) fails for the whole store"
		case "tool_calls":
			why = "Hermes reads it as no tool calls"
		}
		c.r.add(CheckJSON, sev, jc.table+"."+jc.column, FixRepair, "%s of %s %s a %s that is not JSON (first: %s %s): %s; repair %s",
			count(n, "row"), jc.table, holds(n), jc.column, strings.TrimSuffix(jc.table, "s"), example.String, why, jsonFixWords(jc.column))
	}
}

// exampleKey is the column that names a row of table in a finding.
func exampleKey(table string) string {
	if table == "messages" {
		return "CAST(id AS TEXT)"
	}
	return "id"
}

// jsonFixWords says what repair does to a value of column that is not JSON.
func jsonFixWords(column string) string {
	switch column {
	case "tool_calls":
		return "sets it to NULL, which is what it is read as (and recounts tool_call_count)"
	case "tool_names":
		return "sets it to NULL, which is what it is read as"
	}
	return fmt.Sprintf("keeps its text as the JSON object {%q: TEXT}", UnparsedKey)
}

// parentLoops reports sessions whose chain of parents leads back to them
// (a session that is its own parent included): they vanish from Hermes'
// listings and hermesstate's, which start from sessions without a parent.
func (c *checker) parentLoops() {
	if !c.has("table", "sessions") {
		return
	}
	loops, err := findLoops(c.ctx, c.db)
	if err != nil {
		c.readFailed(CheckLineage, "sessions", "reading the parents of sessions failed", err)
		return
	}
	c.r.state.loops = loops
	if len(loops) == 0 {
		return
	}
	n := 0
	for _, l := range loops {
		n += len(l)
	}
	c.r.add(CheckLineage, Warning, "sessions.parent_session_id", FixRepair,
		"%s form %s of parents (first: %s): they are listed nowhere, since listings start from sessions without a parent; repair detaches the earliest-started session of each loop from its parent",
		count(int64(n), "session"), count(int64(len(loops)), "loop"), loopWords(loops[0]))
}

// count is "1 row", "2 rows".
func count(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// holds is "holds" or "hold" for n rows.
func holds(n int64) string {
	if n == 1 {
		return "holds"
	}
	return "hold"
}

// loopWords is "a → b → a".
func loopWords(loop []string) string {
	return strings.Join(append(append([]string{}, loop...), loop[0]), " → ")
}

// findLoops returns every loop of parents, each as its sessions in parent
// order starting from the smallest id, the loops sorted by that id.
func findLoops(ctx context.Context, db *sql.DB) ([][]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT id, parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL")
	if err != nil {
		return nil, err
	}
	parent := map[string]string{}
	for rows.Next() {
		var id, p string
		if err := rows.Scan(&id, &p); err != nil {
			rows.Close()
			return nil, err
		}
		parent[id] = p
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(parent))
	for id := range parent {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// state: 0 unseen, 1 on the current walk, 2 done.
	state := map[string]int{}
	var loops [][]string
	for _, start := range ids {
		if state[start] != 0 {
			continue
		}
		var walk []string
		cur := start
		for {
			if state[cur] == 1 { // back on this walk: a loop from cur
				i := len(walk) - 1
				for walk[i] != cur {
					i--
				}
				loops = append(loops, rotateSmallest(walk[i:]))
				break
			}
			if state[cur] == 2 {
				break
			}
			state[cur] = 1
			walk = append(walk, cur)
			p, ok := parent[cur]
			if !ok {
				break
			}
			cur = p
		}
		for _, id := range walk {
			state[id] = 2
		}
	}
	sort.Slice(loops, func(i, j int) bool { return loops[i][0] < loops[j][0] })
	return loops, nil
}

// rotateSmallest returns loop starting from its smallest id.
func rotateSmallest(loop []string) []string {
	k := 0
	for i, id := range loop {
		if id < loop[k] {
			k = i
		}
	}
	return append(append([]string{}, loop[k:]...), loop[:k]...)
}

// fixJSON makes every value of a JSON column that is not JSON readable:
// model_config, origin_json and display_metadata keep their text under
// UnparsedKey (an empty value becomes NULL); tool_calls and tool_names
// become NULL, which is what readers take them for (the tool_call_count of
// the sessions concerned is then recounted by fixCounters). No row is
// deleted.
func (rp *repairer) fixJSON() error {
	for _, jc := range rp.st.badJSON {
		col := schemaref.QuoteIdent(jc.column)
		set := fmt.Sprintf("CASE WHEN trim(CAST(%[1]s AS TEXT)) = '' THEN NULL ELSE json_object('%[2]s', CAST(%[1]s AS TEXT)) END", col, UnparsedKey)
		if jc.column == "tool_calls" || jc.column == "tool_names" {
			set = "NULL"
		}
		rp.act("json", jc.table+"."+jc.column, fmt.Sprintf("%d values that are not JSON: %s", jc.rows, jsonFixWords(jc.column)), 0)
		if rp.opts.DryRun {
			continue
		}
		var n int64
		if err := rp.tx("json "+jc.table+"."+jc.column, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(rp.ctx, fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s IS NOT NULL AND NOT json_valid(%s)",
				schemaref.QuoteIdent(jc.table), col, set, col, col))
			if err == nil {
				n, _ = res.RowsAffected()
			}
			return err
		}); err != nil {
			return err
		}
		rp.rep.Actions[len(rp.rep.Actions)-1].Rows = n
		if jc.column == "tool_calls" && n > 0 && rp.st.counterRows == 0 {
			rp.st.counterRows = n // recount what the NULLs changed
		}
	}
	return nil
}

// fixLoops detaches, in each loop of parents, the session that started
// first (ties: the smallest id) from its parent: the loop becomes a chain
// that starts there, and every session of it is listed again. No row is
// deleted; the other parents are kept.
func (rp *repairer) fixLoops() error {
	for _, loop := range rp.st.loops {
		pick := loop[0]
		var best sql.NullFloat64
		for _, id := range loop {
			var at sql.NullFloat64
			if err := rp.db.QueryRowContext(rp.ctx, "SELECT started_at FROM sessions WHERE id = ?", id).Scan(&at); err != nil {
				return rp.mapErr("lineage", sqlitex.RetryResult{}, err)
			}
			if at.Valid && (!best.Valid || at.Float64 < best.Float64) {
				best, pick = at, id
			}
		}
		rp.act("lineage", pick, fmt.Sprintf("detach session %s from its parent, which closes the loop %s", pick, loopWords(loop)), 1)
		if rp.opts.DryRun {
			continue
		}
		if err := rp.tx("lineage "+pick, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(rp.ctx, "UPDATE sessions SET parent_session_id = NULL WHERE id = ?", pick)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}
