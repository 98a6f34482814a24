// Package ftsql holds everything about full-text search that GORM cannot
// express: the FTS5 DDL and triggers of every Hermes layout and layout
// detection (layout.go), the routing predicates over sanitized queries
// (tokens.go), the pure-Go CJK segmentation and postings of hermesstate's
// own CJK index (cjk.go), index maintenance and checks (maint.go), the
// search statements of every route (query.go) and the context text of hits
// (context.go). Functions here are pure where possible; the ones that touch
// a database take a *gorm.DB transaction and use SQLite-only SQL (FTS5,
// sqlite_master). The public query sanitizer is package fts.
package ftsql
