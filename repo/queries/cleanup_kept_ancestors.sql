-- The compression ancestors prune keeps: an ancestor stays while any
-- continuation after it is not a candidate ({{candidates}}, over alias s).
WITH RECURSIVE kept(id, depth) AS (
	SELECT p.id, 1 FROM sessions c JOIN sessions p ON {{edge}}
	WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = c.id AND {{candidates}})
	UNION
	SELECT p.id, kept.depth + 1 FROM kept JOIN sessions c ON c.id = kept.id JOIN sessions p ON {{edge}}
	WHERE kept.depth < {{max_depth}}
) SELECT id FROM kept
