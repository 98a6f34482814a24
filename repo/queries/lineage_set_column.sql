-- Sets {{column}} = ? on every session of a compression lineage (binds: id,
-- id, value): its compression ancestors and its continuations, walked over
-- {{edge}} at most {{max_depth}} steps each way.
WITH RECURSIVE
	anc(id, depth) AS (
		SELECT ?, 0
		UNION
		SELECT p.id, anc.depth + 1 FROM anc JOIN sessions c ON c.id = anc.id JOIN sessions p ON {{edge}}
		WHERE anc.depth < {{max_depth}}
	),
	des(id, depth) AS (
		SELECT ?, 0
		UNION
		SELECT c.id, des.depth + 1 FROM des JOIN sessions p ON p.id = des.id JOIN sessions c ON {{edge}}
		WHERE des.depth < {{max_depth}}
	)
UPDATE sessions SET {{column}} = ? WHERE id IN (SELECT id FROM anc UNION SELECT id FROM des)
