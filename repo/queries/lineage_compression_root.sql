-- The first session of ?'s compression chain: the walk up continuation
-- edges ({{edge}}: "c continues compressed p"), at most {{max_depth}} steps.
WITH RECURSIVE up(id, depth) AS (
	SELECT ?, 0
	UNION ALL
	SELECT p.id, up.depth + 1 FROM up
	JOIN sessions c ON c.id = up.id
	JOIN sessions p ON {{edge}}
	WHERE up.depth < {{max_depth}}
)
SELECT id FROM up ORDER BY depth DESC LIMIT 1
