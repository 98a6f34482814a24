-- The parent-edge descendants of ? (binds: id, id), nearest first, then by
-- started_at and id, at most {{max_depth}} steps down.
WITH RECURSIVE down(id, depth) AS (
	SELECT ?, 0
	UNION
	SELECT s.id, down.depth + 1 FROM down JOIN sessions s ON s.parent_session_id = down.id
	WHERE down.depth < {{max_depth}}
)
SELECT d.id FROM down d JOIN sessions s ON s.id = d.id WHERE d.id <> ?
GROUP BY d.id ORDER BY MIN(d.depth), MIN(s.started_at), d.id
