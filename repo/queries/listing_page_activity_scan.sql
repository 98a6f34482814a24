-- The page CTEs of a listing by last activity from the newest {{scan}}
-- sessions of the activity table (a CTE list for WITH RECURSIVE, ending in
-- page(id, eff, started_at); see activityScanPage): top holds them and
-- bound the bound T, up and cand add every compression ancestor (over
-- {{edge}}, at most {{max_depth}} steps), {{chain}} walks each candidate's
-- compression chain forward, pall is every admitted candidate ({{where}})
-- with its activity, page the page ({{limit}}).
top AS (SELECT session_id AS id, active_at AS ts FROM hermesstate_session_activity ORDER BY active_at DESC{{nulls_last}} LIMIT {{scan}}),
bound AS (SELECT CASE WHEN (SELECT COUNT(*) FROM top) < {{scan}} THEN -1e308 ELSE (SELECT MIN(ts) FROM top) END AS t),
up(id, depth) AS (
	SELECT id, 0 FROM top
	UNION
	SELECT p.id, up.depth + 1 FROM up JOIN sessions c ON c.id = up.id JOIN sessions p ON {{edge}} WHERE up.depth < {{max_depth}}
),
cand(id) AS (SELECT DISTINCT id FROM up),
{{chain}},
pall AS (
	SELECT s.id, CASE WHEN s.end_reason = 'compression'
		THEN (SELECT MAX(ca.active_at) FROM chain c {{cross}} hermesstate_session_activity ca ON ca.session_id = c.cur_id WHERE c.root_id = s.id)
		ELSE (SELECT sa.active_at FROM hermesstate_session_activity sa WHERE sa.session_id = s.id) END AS eff, s.started_at
	FROM cand {{cross}} sessions s ON s.id = cand.id
	{{where}}
),
page AS (SELECT id, eff, started_at FROM pall ORDER BY eff DESC{{nulls_last}}, started_at DESC, id DESC{{limit}})
