-- The continuations of pinned sessions (walked over {{edge}}, at most
-- {{max_depth}} steps): prune keeps them.
WITH RECURSIVE tail(id, depth) AS (
	SELECT c.id, 1 FROM sessions c JOIN sessions p ON {{edge}} WHERE COALESCE(p.pinned, 0) = 1
	UNION
	SELECT c.id, tail.depth + 1 FROM tail JOIN sessions p ON p.id = tail.id JOIN sessions c ON {{edge}}
	WHERE tail.depth < {{max_depth}}
) SELECT id FROM tail
