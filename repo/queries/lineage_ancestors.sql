-- The parent-edge ancestors of ? (nearest first), at most {{max_depth}}
-- steps up; the caller drops the session itself from a cycle.
WITH RECURSIVE up(id, depth) AS (
	SELECT parent_session_id, 1 FROM sessions WHERE id = ? AND parent_session_id IS NOT NULL
	UNION
	SELECT s.parent_session_id, up.depth + 1 FROM up JOIN sessions s ON s.id = up.id
	WHERE s.parent_session_id IS NOT NULL AND up.depth < {{max_depth}}
)
SELECT id FROM up GROUP BY id ORDER BY MIN(depth)
