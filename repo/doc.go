// Package repo holds the repository interfaces application code uses and
// their GORM implementations. Every exported method opens its own
// transaction (Write for writes, Read for reads) and calls small unexported
// helpers that take the transaction.
//
// Files by concern (a concern's files share a name prefix):
//
//   - the database and its transactions: db.go (DB, Read, Write, retries,
//     the write lock), dialect.go (the one dialect seam: every SQL fragment
//     that differs between SQLite and PostgreSQL), queries.go and
//     queries/*.sql (long fixed statements), validate.go and guards.go
//     (argument checks, refusals shared by writers);
//   - sessions: sessions.go (create, get, end, reopen), session_state.go,
//     titles.go, meta.go, inspect.go, compaction.go, lineage.go (parent and
//     compression chains);
//   - messages and the write path: messages.go (Append, AppendBatch),
//     groupcommit.go (concurrent appends in one transaction), insertcols.go
//     (INSERTs without default columns), writepath.go (every GORM callback,
//     registered in one place);
//   - transcripts: transcript.go, transcript_replay.go, transcript_rewind.go;
//   - listing: listing.go (the rich listing statement), listing_scan.go
//     (rows straight into structs), listing_activity.go (the activity
//     table), listing_preview_sqlite.go (the SQLite preview function),
//     lookup.go (sessions by id prefix, one rich row, cron job runs);
//   - search: search.go (routing), search_pg.go (the PostgreSQL routes),
//     search_bound.go (snippet bounds), search_maint.go and
//     search_status.go (rebuild, check, status), cjkdefer.go (CJK indexing
//     deferred into later inserts);
//   - export and import: export.go, export_fast.go, export_lineage.go;
//   - cleanup: cleanup.go (delete, prune, vacuum, backup), cleanup_bulk.go;
//   - usage: stats.go, usage.go, usage_totals.go;
//   - gateway: gateway.go, gateway_routing.go.
package repo
