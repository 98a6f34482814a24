"""Same-run floor of Hermes' engine: the raw statements of cmd/hermes-state/internal/bench/raw.go (the least
SQL for each benchmark answer) through Python's sqlite3 (the C SQLite Hermes runs on) on a store built by
`hermes-state bench --phases build --keep`. 3 warm-ups + 30 timed calls each; prints p50/p95 and writes them
as JSON. Usage: calibrate_statements.py STORE LONG_SESSION_ID OUT.json (BENCHMARKS.md, "Quiet machines")."""
import json
import sqlite3
import sys
import time

db = sys.argv[1]
long_id = sys.argv[2]
con = sqlite3.connect(db)
sel = ("SELECT m.id, m.session_id, m.role, h.snip, m.timestamp, s.source, s.model FROM "
       "(SELECT rowid, rank, snippet({t}, -1, '>>>', '<<<', '...', 40) AS snip FROM {t} WHERE {t} MATCH ? ORDER BY rank LIMIT 20) h "
       "JOIN messages m ON m.id = h.rowid JOIN sessions s ON s.id = m.session_id ORDER BY h.rank")
cases = [
    ("docker", sel.format(t="messages_fts"), ("docker",)),
    ("kubeconfig", sel.format(t="messages_fts"), ("kubeconfig",)),
    ("docker deployment", sel.format(t="messages_fts"), ("docker deployment",)),
    ('"connection refused"', sel.format(t="messages_fts"), ('"connection refused"',)),
    ("deplo*", sel.format(t="messages_fts"), ("deplo*",)),
    ("youer服务端", sel.format(t="messages_fts_trigram"), ('"youer服务端"',)),
    ("服务端配置", sel.format(t="messages_fts_trigram"), ('"服务端配置"',)),
    ("データベース", sel.format(t="messages_fts_trigram"), ('"データベース"',)),
    ("ployment", sel.format(t="messages_fts_trigram"), ('"ployment"',)),
    ("list_started_at", """SELECT s.*, (SELECT substr(replace(replace(m.content, char(10), ' '), char(13), ' '), 1, 63) FROM messages m
        WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1) AS preview,
        COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active
        FROM (SELECT * FROM sessions ORDER BY started_at DESC LIMIT 20) s ORDER BY s.started_at DESC""", ()),
    ("list_last_active_full", """SELECT s.*, COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active
        FROM sessions s WHERE s.parent_session_id IS NULL ORDER BY last_active DESC LIMIT 20""", ()),
    ("replay", """SELECT role, content, tool_call_id, tool_calls, tool_name, reasoning, reasoning_content, reasoning_details,
        codex_reasoning_items, codex_message_items, finish_reason, timestamp, api_content, display_kind, display_metadata,
        platform_message_id, observed, effect_disposition FROM messages WHERE session_id = ? AND active = 1 ORDER BY id""", (long_id,)),
    ("export_messages", "SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (long_id,)),
]
out = {}
for name, q, args in cases:
    for _ in range(3):
        con.execute(q, args).fetchall()
    ds = []
    for _ in range(30):
        t = time.perf_counter()
        rows = con.execute(q, args).fetchall()
        ds.append((time.perf_counter() - t) * 1000)
    ds.sort()
    out[name] = (round(ds[15], 3), round(ds[28], 3), len(rows))
    print(f"{name:24s} p50 {ds[15]:8.3f} ms  p95 {ds[28]:8.3f} ms  rows {len(rows)}")
print("sqlite", sqlite3.sqlite_version)
json.dump(out, open(sys.argv[3], "w"), ensure_ascii=False)
