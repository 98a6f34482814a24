"""Hermes' append statements (BEGIN IMMEDIATE; INSERT; counter UPDATE; COMMIT) through Python's sqlite3 on a
fresh file made by `hermes-state migrate` (same schema and triggers as the store's), WAL, the corpus' 5 append
sessions x 1,000 messages, synchronous FULL and NORMAL twice; prints msg/s and CPU per append.
Usage: calibrate_appends.py FRESH.db CORPUS.jsonl (BENCHMARKS.md, "Quiet machines")."""
import json
import resource
import shutil
import sqlite3
import sys
import time
src, corpus = sys.argv[1], sys.argv[2]
msgs, sess = [], []
for line in open(corpus):
    d = json.loads(line)
    if d.get("type") == "session" and d.get("set") == "append":
        sess.append(d["id"])
    elif d.get("type") == "message" and d["session_id"] in sess:
        msgs.append(d)
    if len(msgs) >= 5000:
        break
for sync in ("FULL", "NORMAL", "FULL", "NORMAL"):
    db = src + "." + sync
    shutil.copy(src, db)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL"); con.execute("PRAGMA synchronous=" + sync)
    for s in sess:
        con.execute("INSERT OR IGNORE INTO sessions (id, source, started_at) VALUES (?, 'cli', ?)", (s, time.time()))
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
    for m in msgs:
        tc = json.dumps(m["tool_calls"]) if m.get("tool_calls") else None
        n = len(m["tool_calls"]) if m.get("tool_calls") else 0
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count, finish_reason) VALUES (?,?,?,?,?,?,?,?,?)",
                    (m["session_id"], m["role"], m["content"], m.get("tool_call_id"), tc, m.get("tool_name"), time.time(), m.get("token_count"), m.get("finish_reason")))
        con.execute("UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? WHERE id = ?", (n, m["session_id"]))
        con.execute("COMMIT")
    dt = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / len(msgs) * 1e6
    print(f"python sqlite3 {sqlite3.sqlite_version} {sync}: {len(msgs)/dt:.0f} msg/s, {cpu:.0f} cpu-us/msg")
    con.close()
