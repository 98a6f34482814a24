package repo

// SetImportLineCap sets the longest line Import reads (tests use a small
// one) and returns a function that restores it.
func SetImportLineCap(n int64) (restore func()) {
	old := importLineCap
	importLineCap = n
	return func() { importLineCap = old }
}

// ListedDriftPostgres is the statement that counts the PostgreSQL
// activity rows whose started_at, source or listed (migration 0107)
// differs from the session row and the listing's own default filter as
// this package writes it (rows with listed NULL are not compared: the
// listing reads them through that filter), plus sessions without a row.
func ListedDriftPostgres() string {
	d := &DB{Dialect: Postgres}
	return `SELECT COUNT(*) FROM sessions s LEFT JOIN ` + ActivityTable + ` a ON a.session_id = s.id
		WHERE a.session_id IS NULL OR a.started_at IS DISTINCT FROM s.started_at OR a.source IS DISTINCT FROM s.source
		OR CASE WHEN a.listed IS NULL THEN false ELSE a.listed <> CASE WHEN ` + d.listableChildSQL() + ` AND s.archived = 0 AND s.hidden = 0
			AND (s.end_reason IS NULL OR s.end_reason <> 'compression') THEN 1 ELSE 0 END END`
}
