-- 1 when the first bind is a compression predecessor of the second (binds:
-- descendant, ancestor, descendant): the walk up parent edges whose parent
-- ended with compression.
WITH RECURSIVE anc(id, depth) AS (
	SELECT ?, 0
	UNION
	SELECT p.id, anc.depth + 1 FROM anc
	JOIN sessions c ON c.id = anc.id
	JOIN sessions p ON p.id = c.parent_session_id
	WHERE p.end_reason = 'compression' AND anc.depth < 1000
)
SELECT 1 FROM anc WHERE id = ? AND id <> ? LIMIT 1
